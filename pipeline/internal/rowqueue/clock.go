package rowqueue

import (
	"math/rand/v2"
	"time"
)

// Clock is the writer's time: the batch delay, the back-off between
// retries and the pacing of its log lines. Tests replace it.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// function that releases it early.
	After(d time.Duration) (<-chan time.Time, func())
}

// realClock is the clock of a writer outside tests.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// Backoff returns the wait before retry number n (1 for the first retry
// after a failure): lo doubling per failure up to hi, of which a random
// part up to half is taken off, so that processes that failed together
// do not retry in step.
func Backoff(n uint64, lo, hi time.Duration) time.Duration {
	d := lo
	for i := uint64(1); i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d - rand.N(d/2+1)
}

// RetryBounds fills in the bounds of the back-off that are not set
// (zero) with defLo and defHi; when only one is set, the other's default
// gives way to it, so that lo never exceeds hi (hi 50 ms alone makes lo
// 50 ms, lo 1 min alone makes hi 1 min).
func RetryBounds(lo, hi, defLo, defHi time.Duration) (time.Duration, time.Duration) {
	if lo == 0 {
		lo = defLo
		if hi > 0 {
			lo = min(lo, hi)
		}
	}
	if hi == 0 {
		hi = max(defHi, lo)
	}
	return lo, hi
}
