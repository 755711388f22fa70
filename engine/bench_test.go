package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/ttl"
)

// BenchmarkTeleportHot measures the in-process hot path: Teleport and
// Complete of a location from a filled general sink. The sink holds 1,024
// entries, filled before the timer starts and refilled with the timer
// stopped (and the region's scan paused while the timer runs) whenever it
// falls below 64, so no iteration misses. Besides ns/op it reports the p50
// and p99 of the individual operations (p50-ns, p99-ns); the target is
// p99 <= 10 µs.
//
// The allocations reported are those of the location table's writer
// goroutine, which deletes the row of each location taken; Teleport and
// Complete themselves allocate only when a table grows. Refills dominate
// the wall time (the pipeline promotes a few thousand locations a second
// here), so run it with a fixed count:
//
//	go test -run '^$' -bench BenchmarkTeleportHot -benchtime 200000x ./engine/
//
// Every place handed out is marked for unique placement, as by default,
// but for 10 s instead of 30 days: at a few hundred thousand iterations
// a 30-day mark used up every spot of the region's 7,000 chunks, and the
// refill then waited for a full sink the region could no longer give.
//
// Its sub-benchmarks run the engine alone (db=sqlite) and as a fleet node
// on PostgreSQL (db=postgres, with RTP_TEST_POSTGRES): the hot path must
// not wait on the network either way, since hot entries are the node's
// own. They run in the order sqlite, postgres, postgres, sqlite, so that
// neither gains from caches the other warmed (the second run of each is
// suffixed #01).
func BenchmarkTeleportHot(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres", "postgres", "sqlite"} {
		b.Run("db="+db, func(b *testing.B) {
			url := ""
			if db == "postgres" {
				url = fleetDatabase(b)
			}
			benchTeleportHot(b, url)
		})
	}
}

func benchTeleportHot(b *testing.B, db string) {
	const (
		capacity = 1024
		low      = 64
	)
	cfg := testConfig(b)
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Shape.Radius = 768 // about 7,000 chunks for 1,024 distinct places
	rc.Sinks.General.Capacity = capacity
	rc.Pulse = time.Millisecond
	rc.Queues = config.Queues{Backlog: 1024, Cold: 2048}
	rc.Budget = config.Budget{Candidates: 256, Screens: 128, MaxScreens: 128, PromotionsPerPulse: 128,
		MaxPromotions: 128, Transfers: 64, LoginBurst: 0}
	cfg.Regions[config.DefaultRegionName] = rc
	spec := specOf(b, cfg)
	spec.Fleet.DatabaseURL = db
	policy, err := ttl.Load(strings.NewReader("causes:\n  uniquePlacement: 10s\n"))
	if err != nil {
		b.Fatal(err)
	}
	spec.TTL = policy
	e, err := engine.New(b.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close(context.Background()) })
	stop := run(b, e)
	defer func() { _ = stop() }()
	general := e.Region(config.DefaultRegionName).Pipeline().General()
	// The pipeline refills the sink only while the timer is stopped: the
	// timed loop measures the hot path alone, not the background work
	// competing with it for the two cores.
	refill := func() {
		if err := e.ScanResume(config.DefaultRegionName); err != nil {
			b.Fatal(err)
		}
		// The first fill generates the terrain: allow it minutes.
		waitForUpTo(b, 5*time.Minute, "a full general sink", func() bool { return general.Len() >= capacity })
		if err := e.ScanPause(config.DefaultRegionName); err != nil {
			b.Fatal(err)
		}
		if err := e.Region(config.DefaultRegionName).Pipeline().Settle(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	refill()
	ctx := context.Background()
	req := engine.Request{Player: "bench"}
	durs := make([]time.Duration, 0, 1<<22)
	b.ReportAllocs()
	for b.Loop() {
		if general.Len() < low {
			b.StopTimer()
			refill()
			b.StartTimer()
		}
		start := time.Now()
		loc, err := e.Teleport(ctx, config.DefaultRegionName, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Complete(loc.ID); err != nil {
			b.Fatal(err)
		}
		if len(durs) < cap(durs) {
			durs = append(durs, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	pct := func(p float64) float64 { return float64(durs[int(p*float64(len(durs)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
}
