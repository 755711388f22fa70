package bubble

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestAdvance: the clock moves by exactly d, the timers due on the way
// fire, and what they woke has run when Advance returns.
func TestAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var (
			mu    sync.Mutex
			fired []time.Duration
		)
		for _, d := range []time.Duration{time.Second, 3 * time.Second, time.Hour} {
			time.AfterFunc(d, func() {
				mu.Lock()
				defer mu.Unlock()
				fired = append(fired, time.Since(start))
			})
		}
		Advance(3 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("clock moved %v, want 3s", got)
		}
		if len(fired) != 2 || fired[0] != time.Second || fired[1] != 3*time.Second {
			t.Errorf("timers fired at %v, want [1s 3s]", fired)
		}
	})
}
