// Package eventually waits, in tests, for a condition that other
// goroutines or processes bring about: a server that becomes ready, a
// write that commits, a row that changes owner. It asks on a ticker until
// the condition holds or a bound passes, and fails the test with what it
// waited for; a condition that holds at once costs no wait.
//
// Prefer a direct notification (a channel, a hook) where the code under
// test can give one, and testing/synctest for code driven by timers; this
// package is for states observable only from outside, such as another
// process or a database.
package eventually

import (
	"testing"
	"time"
)

// Interval is how often a condition is asked.
const Interval = 5 * time.Millisecond

// True asks cond every Interval until it returns true, and fails tb
// (FailNow) saying what it waited for when bound passes first. It must be
// called from the test's goroutine.
func True(tb testing.TB, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	if _, ok := Within(bound, cond); !ok {
		tb.Fatalf("not within %v: %s", bound, what)
	}
}

// Within asks cond every Interval until it returns true or bound passes.
// It returns how long that took and whether cond held.
func Within(bound time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	if cond() {
		return time.Since(start), true
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return time.Since(start), true
			}
		case <-deadline.C:
			ok := cond()
			return time.Since(start), ok
		}
	}
}
