package engine

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram records durations in log-spaced buckets: exact below 16 ns,
// then 8 buckets per power of two, so a reported quantile is within 12.5%
// above the true value. Record is lock-free and allocation-free (one
// atomic add to a bucket, and a compare-and-swap loop for the
// maximum that rarely runs more than once), so it may sit on the teleport
// path.
//
// Design note: a lock-free log-bucket histogram was preferred to a
// reservoir sample (which needs a lock or a random source per record) and
// to an exact sorted log (unbounded memory). 488 buckets of 8 bytes cover
// 0 ns to 2^63 ns.
//
// The zero value is an empty histogram, safe for concurrent use.
type histogram struct {
	max     atomic.Int64
	sum     atomic.Int64 // nanoseconds; wraps only after 292 years of teleports
	buckets [histBuckets]atomic.Uint64
}

const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	// histBuckets covers every non-negative int64: 2^63-1 has exponent 62
	// and index (62-3)*8 + 15 = 487.
	histBuckets = (62-histSubBits)*histSub + 2*histSub
)

// histIndex returns the bucket of v nanoseconds.
func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	exp := bits.Len64(v) - 1 // >= histSubBits+1
	// v >> (exp-histSubBits) lies in [histSub, 2*histSub).
	return (exp-histSubBits)*histSub + int(v>>(exp-histSubBits))
}

// LatencyBuckets is the number of Latency.Buckets.
const LatencyBuckets = 23

// latencyMinShift is log2 of LatencyBound(0) in nanoseconds.
const latencyMinShift = 13

// LatencyBound returns the upper bound (exclusive) of Latency.Buckets[i]:
// 2^(13+i) nanoseconds, from 8.192 µs for i = 0 to 34.4 s for i = 22. It
// returns 0 when i is out of range.
func LatencyBound(i int) time.Duration {
	if i < 0 || i >= LatencyBuckets {
		return 0
	}
	return time.Duration(1) << (latencyMinShift + i)
}

// lowerOf returns the smallest value of bucket i.
func lowerOf(i int) uint64 {
	if i == 0 {
		return 0
	}
	return histUpper(i-1) + 1
}

// histUpper returns the largest value of bucket i.
func histUpper(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	exp := i/histSub + histSubBits - 1
	m := uint64(i%histSub + histSub)
	return (m+1)<<(exp-histSubBits) - 1
}

// Record adds one duration; a negative one counts as 0.
func (h *histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[histIndex(uint64(d))].Add(1)
	h.sum.Add(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Latency summarizes the recorded durations. The buckets are read one by
// one, so under concurrent Record calls the summary is not atomic; each
// quantile is the upper bound of its bucket, capped at the maximum.
func (h *histogram) Latency() Latency {
	var counts [histBuckets]uint64
	var n uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		n += counts[i]
	}
	l := Latency{Count: n, Max: time.Duration(h.max.Load()), Sum: time.Duration(h.sum.Load())}
	if n == 0 {
		return l
	}
	var below uint64 // durations in the fine buckets before i
	b := 0
	for i, c := range counts {
		// Fine bucket i starts at histUpper(i-1)+1; every coarse bound is
		// such a start, so the count below it is exact.
		for b < LatencyBuckets && uint64(LatencyBound(b)) <= lowerOf(i) {
			l.Buckets[b] = below
			b++
		}
		below += c
	}
	for ; b < LatencyBuckets; b++ {
		l.Buckets[b] = below
	}
	q := func(p float64) time.Duration {
		// rank is 1-based: the smallest value with at least p*n values at
		// or below it.
		rank := max(uint64(math.Ceil(p*float64(n))), 1)
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= rank {
				return min(time.Duration(histUpper(i)), l.Max)
			}
		}
		return l.Max
	}
	l.P50, l.P90, l.P99 = q(0.50), q(0.90), q(0.99)
	return l
}
