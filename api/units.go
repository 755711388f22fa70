package api

import (
	"math"
	"time"
)

// Ms returns d in float milliseconds, the unit of every duration on the
// wire (keys ending in "Ms").
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMs returns ms float milliseconds as a duration, rounded to the
// nanosecond. Negative and NaN values give 0; values beyond the range of
// a time.Duration saturate at its maximum.
func FromMs(ms float64) time.Duration {
	ns := math.Round(ms * float64(time.Millisecond))
	switch {
	case !(ns > 0): // negative, zero or NaN
		return 0
	case ns >= math.MaxInt64:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// Waited returns WaitedMs as a duration (see FromMs).
func (t Teleport) Waited() time.Duration { return FromMs(t.WaitedMs) }

// P50 returns P50Ms as a duration (see FromMs).
func (l Latency) P50() time.Duration { return FromMs(l.P50Ms) }

// P90 returns P90Ms as a duration (see FromMs).
func (l Latency) P90() time.Duration { return FromMs(l.P90Ms) }

// P99 returns P99Ms as a duration (see FromMs).
func (l Latency) P99() time.Duration { return FromMs(l.P99Ms) }

// Max returns MaxMs as a duration (see FromMs).
func (l Latency) Max() time.Duration { return FromMs(l.MaxMs) }

// Period returns PeriodMs as a duration (see FromMs).
func (w WatchStats) Period() time.Duration { return FromMs(w.PeriodMs) }
