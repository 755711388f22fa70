//go:build linux

package pacer

import (
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// TestRestParks: a resting lane's goroutine is parked, not in a system
// call holding its processor. With n lanes resting at once, the runtime
// counts none of them among the goroutines in system calls (a nanosleep
// rest counts every one: the regression this guards).
func TestRestParks(t *testing.T) {
	const n = 8
	rs := make([]*rester, n)
	for i := range rs {
		if rs[i] = newRester(); rs[i] == nil {
			t.Fatal("newRester: the kernel refused a timerfd")
		}
	}
	sample := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	notInGo := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	before := notInGo()
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for _, r := range rs {
		go func() {
			defer done.Done()
			started.Done()
			r.rest(300 * time.Millisecond)
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // every goroutine is in its rest
	during := notInGo()
	done.Wait()
	if during >= before+n/2 {
		t.Errorf("goroutines in system calls: %d before the rests, %d during %d rests: the rests hold their processors", before, during, n)
	}
}

// TestRestLasts: a rest lasts at least what was asked, again and again on
// one rester (its timer re-arms), and a rest of zero or less returns.
func TestRestLasts(t *testing.T) {
	r := newRester()
	if r == nil {
		t.Fatal("newRester: the kernel refused a timerfd")
	}
	for _, d := range []time.Duration{0, -time.Millisecond, 100 * time.Microsecond, 2 * time.Millisecond, 100 * time.Microsecond, 20 * time.Millisecond} {
		start := time.Now()
		r.rest(d)
		if got := time.Since(start); got < d {
			t.Errorf("rest(%v) lasted %v", d, got)
		}
	}
	// A nil rester (no timerfd) rests on the runtime's timers.
	var nilr *rester
	start := time.Now()
	nilr.rest(time.Millisecond)
	if got := time.Since(start); got < time.Millisecond {
		t.Errorf("nil rester: rest(1ms) lasted %v", got)
	}
}

// BenchmarkRest measures how long a lane's rest of DefaultRest (75 us)
// lasts on an otherwise idle process, the case where the runtime's sleep
// oversleeps to the poller's millisecond: rest-us/op is the rester's,
// sleep-us/op the runtime's, alternated.
func BenchmarkRest(b *testing.B) {
	const d = DefaultRest
	r := newRester()
	if r == nil {
		b.Fatal("newRester: the kernel refused a timerfd")
	}
	var rested, slept time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if i%2 == 0 {
			r.rest(d)
			rested += time.Since(start)
		} else {
			time.Sleep(d)
			slept += time.Since(start)
		}
	}
	half := float64(max(b.N/2, 1))
	b.ReportMetric(float64(rested.Microseconds())/half, "rest-us/op")
	b.ReportMetric(float64(slept.Microseconds())/half, "sleep-us/op")
}
