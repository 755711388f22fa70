package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// BenchmarkFreshDeliveries measures what a fresh server delivers: the
// default configuration (rtp serve without flags) over an empty data
// directory, its terrain archive cold, under a paced, open-loop demand of
// freshRate teleports a second that starts with the first place served.
// Each request waits up to 2 s on a miss (the server's default) and is
// completed once served. It reports the time to the first 1,000
// deliveries (first1000-s; the run's bound when fewer arrived), the rate
// delivered over the demand's freshSpan (delivered/s) and the share of
// requests that missed (miss-%). Each iteration is a whole fresh start,
// tens of seconds, so run it with a fixed count:
//
//	go test -run '^$' -bench BenchmarkFreshDeliveries -benchtime 1x ./engine/
func BenchmarkFreshDeliveries(b *testing.B) {
	for _, rate := range []int{20, 100} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			b.ReportAllocs()
			var first, delivered, missed float64
			n := 0
			for b.Loop() {
				f, d, m := freshRun(b, rate)
				first, delivered, missed = first+f.Seconds(), delivered+d, missed+m
				n++
			}
			b.ReportMetric(first/float64(n), "first1000-s")
			b.ReportMetric(delivered/float64(n), "delivered/s")
			b.ReportMetric(missed/float64(n), "miss-%")
		})
	}
}

// freshSpan is how long the paced demand of BenchmarkFreshDeliveries
// lasts; the time to 1,000 deliveries is bounded by it.
const freshSpan = 20 * time.Second

// freshRun starts a default engine on an empty data directory, waits for
// its first place, then asks rate teleports a second for freshSpan. It
// returns the time from the start of the demand to the 1,000th delivery
// (freshSpan plus the last request's wait when fewer arrived), the
// deliveries per second over freshSpan and the percentage of requests
// that missed.
func freshRun(b *testing.B, rate int) (first time.Duration, perSecond, missPct float64) {
	b.Helper()
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	spec := specOf(b, cfg)
	e, err := engine.New(b.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close(context.Background()) }()
	stop := run(b, e)
	defer func() { _ = stop() }()
	ctx := context.Background()
	const wait = 2 * time.Second
	// The demand starts once the first place is served, as an outside
	// load test starts at the first 200.
	for {
		loc, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "probe", Wait: wait})
		if err == nil {
			if err := e.Complete(loc.ID); err != nil {
				b.Fatal(err)
			}
			break
		}
		if reason(err) != engine.ReasonNoLocation {
			b.Fatal(err)
		}
	}
	var (
		served, misses atomic.Int64
		mu             sync.Mutex
		at1000         time.Duration
		wg             sync.WaitGroup
	)
	start := time.Now()
	total := int(freshSpan.Seconds()) * rate
	for i := range total {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
		time.Sleep(time.Until(due))
		wg.Go(func() {
			loc, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: fmt.Sprintf("p%d", i%1000), Wait: wait})
			if err != nil {
				if reason(err) != engine.ReasonNoLocation {
					b.Error(err)
				}
				misses.Add(1)
				return
			}
			if served.Add(1) == 1000 {
				mu.Lock()
				at1000 = time.Since(start)
				mu.Unlock()
			}
			if err := e.Complete(loc.ID); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	first = at1000
	if first == 0 {
		first = time.Since(start)
	}
	return first, float64(served.Load()) / freshSpan.Seconds(), 100 * float64(misses.Load()) / float64(total)
}
