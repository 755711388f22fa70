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

// BenchmarkFleetThroughput measures the sustained teleport rate of a
// fleet of one node and of two on one PostgreSQL database
// (RTP_TEST_POSTGRES), in one process on this machine's cores: four
// players per node ask for teleports and complete them as fast as the
// nodes hand them out, far past what their sinks held at the start, so
// the rate is what screening and promotion sustain. It reports
// teleports/s. A first run, "warmup", generates the region's terrain into
// the shared archive; then the sizes run in the order 1, 2, 2, 1, so that
// neither gains from caches the other warmed or from drift (the second
// run of each is suffixed #01):
//
//	go test -run '^$' -bench BenchmarkFleetThroughput -benchtime 4000x ./engine/
func BenchmarkFleetThroughput(b *testing.B) {
	b.Run("warmup", func(b *testing.B) { benchFleet(b, 1) })
	for _, nodes := range []int{1, 2, 2, 1} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchFleet(b, nodes) })
	}
}

func benchFleet(b *testing.B, nodes int) {
	db := fleetDatabase(b)
	region := config.DefaultRegionName
	var es []*engine.Engine
	for i := range nodes {
		cfg := testConfig(b)
		rc := cfg.Regions[region]
		rc.Shape.Radius = 768 // about 7,000 chunks: the warm-up generates nearly all
		rc.Sinks.General.Capacity = 64
		rc.Pulse = 5 * time.Millisecond
		rc.Queues = config.Queues{Backlog: 256, Cold: 256}
		rc.Budget = config.Budget{Candidates: 64, Screens: 32, MaxScreens: 32, PromotionsPerPulse: 64,
			MaxPromotions: 64, Transfers: 16}
		cfg.Regions[region] = rc
		spec := specOf(b, cfg)
		spec.Fleet = engine.FleetSpec{DatabaseURL: db, Node: fmt.Sprintf("bench-%d", i), NodeLease: 5 * time.Second}
		e, err := engine.New(b.Context(), spec, engine.Options{Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close(context.Background()) })
		run(b, e)
		es = append(es, e)
	}
	for _, e := range es {
		waitForUpTo(b, 5*time.Minute, "a full general sink", func() bool { return fill(stats(b, e, region), "general") >= 64 })
	}
	var next, failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 4 * nodes {
		e := es[w%nodes]
		wg.Go(func() {
			for n := 0; next.Add(1) <= int64(b.N); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				loc, err := e.Teleport(ctx, region, engine.Request{Player: fmt.Sprintf("w%d-%d", w, n)})
				cancel()
				if err != nil {
					failed.Add(1)
					continue
				}
				_ = e.Complete(loc.ID)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d teleports failed", f, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "teleports/s")
}
