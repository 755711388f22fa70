// Package bubble moves the fake clock of a testing/synctest bubble.
//
// Inside a bubble (synctest.Test) time stands still until every goroutine
// in it is durably blocked, then jumps to the next timer: waiting on the
// clock costs no real time. Advance is that wait, followed by
// synctest.Wait, so that what the timers woke has run before the test
// looks at the result.
package bubble

import (
	"testing/synctest"
	"time"
)

// Advance moves the bubble's clock forward by d, firing the timers due on
// the way, and returns once every other goroutine of the bubble is durably
// blocked. It must be called from inside a bubble, and not while another
// goroutine of the bubble is in synctest.Wait.
func Advance(d time.Duration) {
	time.Sleep(d) // in a bubble: a jump of the fake clock, not a real wait
	synctest.Wait()
}
