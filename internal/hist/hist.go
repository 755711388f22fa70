// Package hist provides Histogram, the module's one latency histogram: the
// engine records teleport latencies into one per region (and exports it to
// Prometheus as a histogram), the load generator one per worker, merged at
// the end of a run.
//
// # Layout
//
// Durations fall into log-linear buckets: every value below 256 ns has a
// bucket of its own, and from there each power of two is split into 128
// equal sub-buckets. A bucket is therefore never wider than 1/128 of its
// lower edge, and a quantile reported as its bucket's upper edge is at most
// 1/128 (0.8%) above the true value, over every non-negative
// time.Duration, in a fixed 7,296 buckets (57 KiB). Every power of two from
// 128 ns up is the lower edge of a bucket, so counts below such a bound
// (CountBelow, CumulativeBelow) are exact, which is what lets a histogram
// with coarser power-of-two buckets be exported from it without error.
//
// # Concurrency
//
// Record is lock-free and allocation-free: one atomic add to a bucket, one
// to the sum, and a compare-and-swap loop each for the minimum and the
// maximum that only runs when the value is a new extreme. It may sit on a
// request path shared by every goroutine, and a per-goroutine histogram
// pays only uncontended atomics. Readers take a Snapshot: the buckets are
// read one by one, so under concurrent Records a snapshot is not atomic,
// but its quantiles and its counts are all computed from the same copy and
// agree with each other.
//
// Design note: a fixed log-linear histogram was preferred to an HDR
// histogram with configurable precision (a dependency, for no gain at
// latency figures), to a reservoir sample (a lock or a random source per
// record) and to an exact sorted log (unbounded memory).
package hist

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits  = 7
	subCount = 1 << subBits // linear sub-buckets per power of two

	// Buckets is the number of buckets: enough for every non-negative
	// int64, since bucket(math.MaxInt64) = (63-subBits)*subCount + subCount-1.
	Buckets = (64 - subBits) * subCount
)

// Precision is the widest bucket relative to its lower edge: a reported
// quantile is at most this fraction above the true value.
const Precision = 1.0 / subCount

// bucket returns the bucket of v. Values below 2*subCount have a bucket
// each; above, the top subBits+1 bits of v select the bucket.
func bucket(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // >= 1
	return (shift+1)*subCount + int(v>>uint(shift)) - subCount
}

// upper returns the largest value of bucket i.
func upper(i int) uint64 {
	if i < 2*subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	base := uint64(i%subCount+subCount) << uint(shift)
	return base + (1 << uint(shift)) - 1
}

// lower returns the smallest value of bucket i.
func lower(i int) uint64 {
	if i == 0 {
		return 0
	}
	return upper(i-1) + 1
}

// Histogram records durations (see the package documentation).
//
// The zero value is an empty histogram ready to use. A Histogram is safe
// for concurrent use and must not be copied after first use.
type Histogram struct {
	counts [Buckets]atomic.Uint64
	sum    atomic.Int64 // nanoseconds; wraps only after 292 years in total
	max    atomic.Int64
	// low is math.MaxInt64 minus the minimum, so that the zero value
	// stands for "nothing recorded" and the minimum is kept by the same
	// compare-and-swap as the maximum.
	low atomic.Int64
}

// Record adds one duration; a negative one counts as 0.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(uint64(d))].Add(1)
	h.sum.Add(int64(d))
	raise(&h.max, int64(d))
	raise(&h.low, math.MaxInt64-int64(d))
}

// raise stores v in a if it is greater than a's value.
func raise(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Merge adds every value recorded in o. o may be recorded into meanwhile;
// what it records during the merge may or may not be included.
func (h *Histogram) Merge(o *Histogram) {
	added := false
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
			added = true
		}
	}
	if !added {
		return
	}
	h.sum.Add(o.sum.Load())
	raise(&h.max, o.max.Load())
	raise(&h.low, o.low.Load())
}

// Snapshot returns a copy of the recorded distribution.
func (h *Histogram) Snapshot() *Snapshot {
	s := new(Snapshot)
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.n += c
	}
	if s.n == 0 {
		return s
	}
	// Read after the buckets, so the extremes cover every counted value.
	s.sum = time.Duration(h.sum.Load())
	s.max = time.Duration(h.max.Load())
	s.min = time.Duration(math.MaxInt64 - h.low.Load())
	return s
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.Snapshot().Count() }

// Min returns the smallest recorded value (0 when empty).
func (h *Histogram) Min() time.Duration { return h.Snapshot().Min() }

// Max returns the largest recorded value (0 when empty).
func (h *Histogram) Max() time.Duration { return h.Snapshot().Max() }

// Mean returns the mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration { return h.Snapshot().Mean() }

// Quantile is Snapshot().Quantile(q).
func (h *Histogram) Quantile(q float64) time.Duration { return h.Snapshot().Quantile(q) }

// CountAbove is Snapshot().CountAbove(d).
func (h *Histogram) CountAbove(d time.Duration) uint64 { return h.Snapshot().CountAbove(d) }

// Snapshot is a copy of a Histogram's distribution. The zero value is the
// snapshot of an empty histogram.
type Snapshot struct {
	counts        [Buckets]uint64
	n             uint64
	sum, min, max time.Duration
}

// Count returns the number of values.
func (s *Snapshot) Count() uint64 { return s.n }

// Sum returns the total of the values.
func (s *Snapshot) Sum() time.Duration { return s.sum }

// Min returns the smallest value (0 when empty).
func (s *Snapshot) Min() time.Duration { return s.min }

// Max returns the largest value (0 when empty).
func (s *Snapshot) Max() time.Duration { return s.max }

// Mean returns the mean of the values (0 when empty).
func (s *Snapshot) Mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return s.sum / time.Duration(s.n)
}

// Quantile returns the value at quantile q in [0, 1]: the upper edge of
// the bucket holding the smallest value v such that at least q of the
// values are <= v, so it is at or above the true quantile by at most
// Precision. It is never below Min nor above Max; q <= 0 (or NaN) gives
// Min, q >= 1 Max, and an empty snapshot 0.
func (s *Snapshot) Quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	if math.IsNaN(q) || q <= 0 {
		return s.min
	}
	if q >= 1 {
		return s.max
	}
	// rank is 1-based: the smallest value with at least q*n values at or
	// below it.
	rank := max(uint64(math.Ceil(q*float64(s.n))), 1)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			return min(max(time.Duration(upper(i)), s.min), s.max)
		}
	}
	return s.max
}

// CountAbove returns the number of values above d, to the bucket's
// precision: values in d's bucket count as not above.
func (s *Snapshot) CountAbove(d time.Duration) uint64 {
	var n uint64
	for _, c := range s.counts[bucket(uint64(max(d, 0)))+1:] {
		n += c
	}
	return n
}

// CountBelow returns the number of values below d, to the bucket's
// precision: values in d's bucket count as not below. It is exact when d
// is a bucket's lower edge: any d up to 256 ns, and every power of two.
func (s *Snapshot) CountBelow(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	var n uint64
	for _, c := range s.counts[:bucket(uint64(d))] {
		n += c
	}
	return n
}

// CumulativeBelow sets dst[i] to CountBelow(bounds[i]) for each i, in one
// pass over the buckets. bounds must be ascending and dst at least as long.
func (s *Snapshot) CumulativeBelow(bounds []time.Duration, dst []uint64) {
	var below uint64 // values in the buckets before i
	b := 0
	for i, c := range s.counts {
		for b < len(bounds) && (bounds[b] <= 0 || bucket(uint64(bounds[b])) <= i) {
			dst[b] = below
			b++
		}
		if b == len(bounds) {
			return
		}
		below += c
	}
	for ; b < len(bounds); b++ {
		dst[b] = below
	}
}
