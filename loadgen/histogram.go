package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets: each power of two is
// split into 128 linear sub-buckets, so a reported quantile is within 1/128
// (0.8 %) of a recorded value, over the whole range of time.Duration, in a
// fixed 58 KiB. Min, Max, Count and the mean are exact.
//
// Design note: an HDR histogram does the same with configurable precision;
// this fixed one is enough for latency figures and keeps the module free of
// a dependency. Per-goroutine histograms merged at the end avoid locking on
// the hot path.
//
// The zero value is an empty histogram ready to use. A Histogram is not
// safe for concurrent use.
type Histogram struct {
	counts [bucketCount]uint64
	n      uint64
	sum    float64
	min    time.Duration
	max    time.Duration
}

const (
	subBits     = 7
	subCount    = 1 << subBits // linear sub-buckets per power of two
	bucketCount = (64 - subBits + 1) * subCount
)

// bucket returns the bucket index of v >= 0. Values below subCount have a
// bucket each; above, the top subBits+1 bits of v select the bucket.
func bucket(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)*subCount + int(v>>uint(shift)) - subCount
}

// upper returns the largest value of bucket i.
func upper(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	base := uint64(i%subCount+subCount) << uint(shift)
	return base + (1 << uint(shift)) - 1
}

// Record adds one duration; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value (0 when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Min returns the smallest recorded value (0 when empty).
func (h *Histogram) Min() time.Duration { return h.min }

// Mean returns the mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value at quantile q in [0, 1]: the smallest
// recorded value v (to the bucket's precision) such that at least q of
// the values are <= v. It is never above Max nor below Min; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if math.IsNaN(q) || q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(min(upper(i), math.MaxInt64))
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// CountAbove returns the number of recorded values above d, to the
// bucket's precision (values in d's bucket count as not above).
func (h *Histogram) CountAbove(d time.Duration) uint64 {
	var n uint64
	for i := bucket(uint64(max(d, 0))) + 1; i < bucketCount; i++ {
		n += h.counts[i]
	}
	return n
}
