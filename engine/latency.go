package engine

import (
	"time"

	"github.com/rtpengine/rtp/internal/hist"
)

// histogram is a region's teleport latency histogram: the module's one
// histogram (internal/hist, lock-free and allocation-free to record, so it
// may sit on the teleport path) and its summary as a Latency.
//
// The zero value is an empty histogram, safe for concurrent use.
type histogram struct{ hist.Histogram }

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

// latencyBounds are the LatencyBound values in order.
var latencyBounds = func() []time.Duration {
	b := make([]time.Duration, LatencyBuckets)
	for i := range b {
		b[i] = LatencyBound(i)
	}
	return b
}()

// Latency summarizes the recorded durations from one snapshot of the
// histogram, so its quantiles and buckets agree. Each quantile is at most
// hist.Precision (1/128) above the true value and never above the maximum;
// the buckets are exact, since every LatencyBound is a power of two and so
// a bucket edge of the histogram.
func (h *histogram) Latency() Latency {
	s := h.Snapshot()
	l := Latency{Count: s.Count(), Max: s.Max(), Sum: s.Sum()}
	if l.Count == 0 {
		return l
	}
	s.CumulativeBelow(latencyBounds, l.Buckets[:])
	l.P50, l.P90, l.P99 = s.Quantile(0.50), s.Quantile(0.90), s.Quantile(0.99)
	return l
}
