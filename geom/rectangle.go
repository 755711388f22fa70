package geom

import (
	"errors"
	"fmt"
	"math"
)

// RectangleSpec describes a rotated rectangle with an optional rectangular
// hole of the same centre and rotation. Its zero value is the one-chunk
// rectangle at chunk (0, 0).
type RectangleSpec struct {
	// Center is the centre chunk.
	Center Chunk
	// RadiusX and RadiusZ are the half-extents along the rectangle's own
	// X and Z axes, in chunks: at rotation 0 the rectangle is
	// 2*RadiusX+1 chunks wide in x and 2*RadiusZ+1 in z. Each is in
	// [0, MaxRadius].
	RadiusX, RadiusZ int64
	// InnerX and InnerZ are the hole's half-extents, in [0, RadiusX] and
	// [0, RadiusZ]; a chunk strictly inside them on both axes is excluded.
	// The default 0 means no hole.
	InnerX, InnerZ int64
	// Rotation turns the rectangle's X axis towards +Z, in degrees; any
	// finite value. The default 0 aligns the rectangle with the x and z
	// axes.
	Rotation float64
}

// Validate reports every problem with the spec, joined. A valid spec may
// still describe an empty rectangle (a hole that leaves no chunk), which
// NewRectangle rejects.
func (sp RectangleSpec) Validate() error {
	var rot error
	if math.IsNaN(sp.Rotation) || math.IsInf(sp.Rotation, 0) {
		rot = fmt.Errorf("geom: rectangle rotation %v is not a finite number of degrees", sp.Rotation)
	}
	return errors.Join(
		checkCenter("rectangle", sp.Center),
		checkRadius("rectangle", "radius x", sp.RadiusX),
		checkRadius("rectangle", "radius z", sp.RadiusZ),
		checkInner("rectangle", "inner x", sp.InnerX, "radius x", sp.RadiusX),
		checkInner("rectangle", "inner z", sp.InnerZ, "radius z", sp.RadiusZ),
		rot,
	)
}

// Rectangle is a rotated rectangle of chunks, optionally with a hole. With
// θ its rotation, the chunk at offset (dx, dz) from the centre has, in the
// rectangle's frame,
//
//	u = dx·cos θ + dz·sin θ,   v = −dx·sin θ + dz·cos θ
//
// and is inside iff |u| <= RadiusX and |v| <= RadiusZ, unless |u| < InnerX
// and |v| < InnerZ (the hole). cos θ and sin θ are rounded once to
// multiples of 2^-30, so membership is decided in exact integer arithmetic
// and is exactly a convex region minus a convex hole: the spiral's
// intervals agree with Contains on every chunk (see the design note in
// spiral.go). Rotations by multiples of 90 degrees are exact, and a square
// rectangle at rotation 0 has the same chunks and spiral as the Square.
//
// Create one with NewRectangle; the zero value is not usable. A Rectangle
// is immutable and safe for concurrent use. It holds about
// 16·(RadiusX·|cos θ| + RadiusZ·|sin θ|) bytes.
type Rectangle struct {
	spec RectangleSpec
	s    spiral[rectClip]
}

var _ Shape = (*Rectangle)(nil)

// NewRectangle returns the rectangle sp describes. It reports every invalid
// parameter (see RectangleSpec.Validate), or that the rectangle holds no
// chunk.
func NewRectangle(sp RectangleSpec) (*Rectangle, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	theta := math.Mod(sp.Rotation, 360) * math.Pi / 180
	c := rectClip{
		c:  int64(math.Round(math.Cos(theta) * rotScale)),
		s:  int64(math.Round(math.Sin(theta) * rotScale)),
		rx: sp.RadiusX * rotScale,
		rz: sp.RadiusZ * rotScale,
		ix: sp.InnerX*rotScale - 1,
		iz: sp.InnerZ*rotScale - 1,
	}
	// The region's extreme corners, in the frame of the rounded rotation:
	// with e1 = (c, s) and e2 = (-s, c), |e1|² = |e2|² = l2, a point is
	// (u·e1 + v·e2) / l2, so |dx| <= (rx·|c| + rz·|s|) / l2 and likewise
	// |dz|. One ring of margin absorbs the float rounding; newSpiral drops
	// the rings that turn out empty.
	fc, fs := math.Abs(float64(c.c)), math.Abs(float64(c.s))
	l2 := fc*fc + fs*fs
	bx := (float64(c.rx)*fc + float64(c.rz)*fs) / l2
	bz := (float64(c.rx)*fs + float64(c.rz)*fc) / l2
	bound := int64(math.Ceil(max(bx, bz))) + 1
	r := &Rectangle{spec: sp, s: newSpiral(c, sp.Center, bound)}
	if r.s.len() == 0 {
		return nil, fmt.Errorf("geom: %v holds no chunk: its hole covers it", r)
	}
	return r, nil
}

// Spec returns the parameters the rectangle was built from.
func (r *Rectangle) Spec() RectangleSpec { return r.spec }

// Center returns the centre chunk.
func (r *Rectangle) Center() Chunk { return r.s.center }

// Len returns the number of chunks in the rectangle.
func (r *Rectangle) Len() int64 { return r.s.len() }

// Index returns the spiral index of ch, or false when ch is outside.
func (r *Rectangle) Index(ch Chunk) (int64, bool) { return r.s.index(ch) }

// Chunk returns the chunk at spiral index i; it panics unless 0 <= i < Len().
func (r *Rectangle) Chunk(i int64) Chunk { return r.s.chunk(i) }

// Contains reports whether ch is inside the rectangle.
func (r *Rectangle) Contains(ch Chunk) bool { return r.s.contains(ch) }

// Beyond returns the j-th chunk outside the rectangle's outer edges; it
// panics unless 0 <= j < MaxBeyond.
func (r *Rectangle) Beyond(j int64) Chunk { return r.s.beyond(j) }

// BeyondIndex inverts Beyond; it returns false for chunks within the outer
// edges.
func (r *Rectangle) BeyondIndex(ch Chunk) (int64, bool) { return r.s.beyondIndex(ch) }

// String describes the rectangle, as "rectangle(center=chunk(x, z),
// radius=(rx, rz), inner=(ix, iz), rotation=θ)".
func (r *Rectangle) String() string {
	sp := r.spec
	return fmt.Sprintf("rectangle(center=%v, radius=(%d, %d), inner=(%d, %d), rotation=%v)",
		sp.Center, sp.RadiusX, sp.RadiusZ, sp.InnerX, sp.InnerZ, sp.Rotation)
}

// rotScale is the fixed-point scale of the rectangle's cos and sin.
const rotScale = 1 << 30

// rectClip clips rings to a rotated rectangle in fixed point: with
// u = dx·c + dz·s and v = dz·c − dx·s, the outer region is |u| <= rx,
// |v| <= rz and the hole |u| <= ix, |v| <= iz (ix = InnerX·rotScale − 1
// turns the strict bound into an inclusive one; −1 means no hole). Every
// product stays below 2^53 for rings up to the bound (< 2^22) and
// half-extents up to MaxRadius.
type rectClip struct {
	c, s   int64
	rx, rz int64
	ix, iz int64
}

func (r rectClip) ring(k int64) [2]sides {
	return [2]sides{
		{outer: r.side0(k, r.rx, r.rz), hole: r.side0(k, r.ix, r.iz)},
		{outer: r.side1(k, r.rx, r.rz), hole: r.side1(k, r.ix, r.iz)},
	}
}

// side0 returns the positions on side 0 of ring k, offsets (k, z) for z in
// [1-k, k] at position z+k-1, with |u| <= mu and |v| <= mv. There
// u = k·c + z·s and v = z·c − k·s.
func (r rectClip) side0(k, mu, mv int64) span {
	lo, hi := solve(k*r.c, r.s, mu, 1-k, k)
	lo, hi = solve(-k*r.s, r.c, mv, lo, hi)
	return clipSpan(lo+k-1, hi+k-1, k)
}

// side1 returns the positions on side 1 of ring k, offsets (x, k) for x in
// [-k, k-1] at position k-1-x, with |u| <= mu and |v| <= mv. There
// u = x·c + k·s and v = k·c − x·s.
func (r rectClip) side1(k, mu, mv int64) span {
	lo, hi := solve(k*r.s, r.c, mu, -k, k-1)
	lo, hi = solve(k*r.c, -r.s, mv, lo, hi)
	return clipSpan(k-1-hi, k-1-lo, k)
}

func (r rectClip) outer(dx, dz int64) bool {
	return abs(dx*r.c+dz*r.s) <= r.rx && abs(dz*r.c-dx*r.s) <= r.rz
}

func (r rectClip) hole(dx, dz int64) bool {
	return abs(dx*r.c+dz*r.s) <= r.ix && abs(dz*r.c-dx*r.s) <= r.iz
}

// solve returns the integers t in [lo, hi] with |a + t·b| <= m, an
// interval since the condition is two half-lines; lo > hi when there is
// none.
func solve(a, b, m, lo, hi int64) (int64, int64) {
	switch {
	case m < 0:
		return 0, -1
	case b > 0: // -m-a <= t·b <= m-a
		return max(lo, ceilDiv(-m-a, b)), min(hi, floorDiv(m-a, b))
	case b < 0: // a-m <= t·(-b) <= a+m
		return max(lo, ceilDiv(a-m, -b)), min(hi, floorDiv(a+m, -b))
	case a < -m || a > m: // b == 0: t does not matter
		return 0, -1
	}
	return lo, hi
}
