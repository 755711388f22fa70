package geom

import (
	"errors"
	"fmt"
	"math"
)

// Distribution turns a uniform draw into a rank: the position, counted from
// the centre along a shape's spiral (or among the selectable cells of a
// memory table), of the place to try next.
//
// Pick maps u in [0, 1) to a rank in [0, n), for n >= 1. It never returns a
// value outside [0, n), whatever u is: u below 0 or NaN counts as 0, u at or
// above 1 as just below 1. For n < 1, where no rank exists, it returns 0.
// Pick is deterministic: one (u, n) always gives one rank, and the rank
// does not decrease as u grows. A float64 draw holds 53 bits, so for n
// above 2^53 not every rank is reachable.
//
// Implementations are small values, immutable, and safe for concurrent use.
type Distribution interface {
	Pick(u float64, n int64) int64
}

var (
	_ Distribution = Flat{}
	_ Distribution = Weighted{}
	_ Distribution = Normal{}
	_ Distribution = Expand{}
)

// Flat picks every rank with the same probability: floor(u·n). It is the
// default. Its zero value is ready to use.
type Flat struct{}

// Pick returns floor(u·n), clamped to [0, n).
func (Flat) Pick(u float64, n int64) int64 { return rankAt(u, n) }

// Weighted picks rank floor(n·u^Exponent): an Exponent above 1 favours low
// ranks (near the centre), below 1 high ranks (near the edge); rank r is
// picked with probability ((r+1)/n)^(1/Exponent) − (r/n)^(1/Exponent).
//
// The zero value, like any Exponent that is not finite and positive, picks
// as Flat does; Validate rejects those in configuration.
type Weighted struct {
	// Exponent is the power applied to the draw; 1 is Flat.
	Exponent float64
}

// Validate reports an Exponent that is not finite and positive.
func (w Weighted) Validate() error {
	if !finitePositive(w.Exponent) {
		return fmt.Errorf("geom: weighted exponent %v is not finite and positive", w.Exponent)
	}
	return nil
}

// Pick returns floor(n·u^Exponent), clamped to [0, n).
func (w Weighted) Pick(u float64, n int64) int64 {
	u = unit(u)
	if !finitePositive(w.Exponent) || w.Exponent == 1 {
		return rankAt(u, n)
	}
	return rankAt(math.Pow(u, w.Exponent), n)
}

// Normal picks ranks from a normal distribution truncated to the ranks:
// with Mean and Deviation in fractions of n, the continuous position x has
// density proportional to exp(−(x−Mean)²/(2·Deviation²)) on [0, 1) and 0
// elsewhere, and the rank is floor(x·n).
//
// The draw u is mapped by the inverse of the truncated distribution
// function: x = Mean + Deviation·Φ⁻¹(Φ(a) + u·(Φ(b) − Φ(a))), with Φ the
// standard normal distribution function and [a, b] the standardised bounds
// (−Mean/Deviation, (1−Mean)/Deviation). So one u gives one rank, ranks
// grow with u, and no draw is rejected and retried.
//
// The zero value has Deviation 0: every pick is the rank at Mean (0).
// Validate rejects that in configuration. Pick clamps Mean to [0, 1] and
// treats a Deviation that is not positive (or NaN) as 0, and an infinite one
// as Flat.
type Normal struct {
	// Mean is the peak, as a fraction of n in [0, 1]: 0 the centre, 1 the
	// edge of the shape.
	Mean float64
	// Deviation is the standard deviation as a fraction of n: finite and
	// positive.
	Deviation float64
}

// Validate reports every problem: a Mean outside [0, 1], a Deviation that
// is not finite and positive.
func (d Normal) Validate() error {
	var errs []error
	if !(d.Mean >= 0 && d.Mean <= 1) {
		errs = append(errs, fmt.Errorf("geom: normal mean %v outside [0, 1]", d.Mean))
	}
	if !finitePositive(d.Deviation) {
		errs = append(errs, fmt.Errorf("geom: normal deviation %v is not finite and positive", d.Deviation))
	}
	return errors.Join(errs...)
}

// Pick returns the rank of draw u; see Normal.
func (d Normal) Pick(u float64, n int64) int64 {
	m := d.Mean
	switch {
	case !(m > 0): // NaN too
		m = 0
	case m > 1:
		m = 1
	}
	s := d.Deviation
	switch {
	case !(s > 0):
		return rankAt(m, n)
	case math.IsInf(s, 1):
		return rankAt(u, n)
	}
	u = unit(u)
	a, b := -m/s, (1-m)/s
	pa, pb := stdNormalCDF(a), stdNormalCDF(b)
	if !(pb > pa) {
		// The bounds are so close together, against the deviation, that Φ
		// cannot tell them apart: the density is flat between them.
		return rankAt(u, n)
	}
	// With Mean in [0, 1], a <= 0 <= b, so Φ(b) >= 1/2 and the mass is
	// never lost to underflow; Φ⁻¹ loses precision only within 1e-16 of
	// p = 0 or 1, a vanishing share of draws, which the clamp keeps on the
	// bounds.
	z := min(max(stdNormalQuantile(pa+u*(pb-pa)), a), b)
	return rankAt(m+s*z, n)
}

// Expand marks the "expand" selection mode: ranks are drawn over the shape's
// N chunks as usual, but the index universe grows past N by the number of
// bad cells, so that bad cells near the centre push selection outwards
// instead of shrinking the choice.
//
// Without Expand, a memory table covers the shape's indices [0, N), and a
// draw picks rank k in [0, N−B) among the N−B selectable indices (B bad):
//
//	k := dist.Pick(u, n-bad)
//	i := table.Select(k)         // the k-th selectable index, < N
//	c := shape.Chunk(i)
//
// With Expand, the table covers [0, U) with U = ExpandedUniverse(shape, B),
// where B counts every bad index the table holds (including those past N),
// and ranks stay in [0, N):
//
//	k := dist.Pick(u, n)          // dist is the Expand value; it picks as Ranks
//	i := table.Select(k)          // may land at or past N
//	c := geom.ChunkAt(shape, i)   // shape.Beyond(i-N) past N
//
// [0, U) then holds at least U − B = N selectable indices, so Select(k)
// always exists; indices at or past N are chunks of the shape's extension
// (outside its outer boundary, never in its hole), in spiral order, and
// IndexOf maps a rejected chunk back to the index to mark bad.
//
// The zero value picks ranks as Flat. Expand is immutable and safe for
// concurrent use if Ranks is.
type Expand struct {
	// Ranks picks the rank in [0, N); nil means Flat.
	Ranks Distribution
}

// Pick returns Ranks' pick (Flat's when Ranks is nil).
func (e Expand) Pick(u float64, n int64) int64 {
	if e.Ranks == nil {
		return rankAt(u, n)
	}
	return e.Ranks.Pick(u, n)
}

// Validate reports the problems of Ranks, when it has a Validate method.
func (e Expand) Validate() error {
	if v, ok := e.Ranks.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// ExpandedUniverse returns the size U of the index universe in expand mode
// for a shape with bad indices: s.Len() + bad, capped at the extension's
// end, s.Len() + MaxBeyond. A negative bad counts as 0.
func ExpandedUniverse(s Shape, bad int64) int64 {
	return s.Len() + min(max(bad, 0), MaxBeyond)
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// unit clamps u to [0, 1): NaN and values below 0 become 0, values at or
// above 1 the largest float64 below 1.
func unit(u float64) float64 {
	switch {
	case !(u > 0):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
}

// rankAt returns floor(x·n) clamped to [0, n), with x a position in
// fractions of n; NaN counts as 0, and n < 1 gives 0.
func rankAt(x float64, n int64) int64 {
	if n < 1 || !(x > 0) {
		return 0
	}
	if x >= 1 {
		return n - 1
	}
	// float64(n) may round up (to 2^63 for n near MaxInt64), and x·n may
	// round up to it: both end at n-1.
	f := x * float64(n)
	if f >= float64(n) {
		return n - 1
	}
	return min(int64(f), n-1)
}

// stdNormalCDF is Φ, the standard normal distribution function, accurate in
// the lower tail.
func stdNormalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// stdNormalQuantile is Φ⁻¹ for p in [0, 1]; ±Inf at the ends.
func stdNormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
