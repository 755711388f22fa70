package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// BenchmarkTeleportHotMinecraft is BenchmarkTeleportHot on a Minecraft
// save (a synthetic region file of 32 x 32 grass chunks): Teleport and
// Complete of a location from a filled general sink of 256, refilled with
// the timer stopped whenever it falls below 32. Sub-benchmark "watched"
// runs with the change watcher on (the freshness check: every take asks
// the entry's reservation whether its chunk changed, and the watcher polls
// the region folder every second); "unwatched" with Options.WatchPeriod
// negative (no epochs at all). Unique placement is off, so the chunks can
// serve any number of iterations. It reports p50-ns and p99-ns like
// BenchmarkTeleportHot. Run it with a fixed count:
//
//	go test -run '^$' -bench BenchmarkTeleportHotMinecraft -benchtime 100000x ./engine/
func BenchmarkTeleportHotMinecraft(b *testing.B) {
	save := b.TempDir()
	if err := anviltest.WriteLevel(save, anviltest.Level{}); err != nil {
		b.Fatal(err)
	}
	writeGrassRegion(b, filepath.Join(save, "region"), 32, func(int) bool { return false })
	for _, bc := range []struct {
		name   string
		period time.Duration
	}{{"watched", 0}, {"unwatched", -1}} {
		b.Run(bc.name, func(b *testing.B) { benchTeleportHotMinecraft(b, save, bc.period) })
	}
}

func benchTeleportHotMinecraft(b *testing.B, save string, period time.Duration) {
	const (
		capacity = 256
		low      = 32
	)
	cfg := testConfig(b)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: save, Dimension: config.Overworld}}
	rc := cfg.Regions[config.DefaultRegionName]
	rc.World = "mc"
	rc.Shape = geom.ShapeSpec{Kind: "square", CenterX: 256, CenterZ: 256, Radius: 255} // the 1,024 chunks
	rc.Sinks.General.Capacity = capacity
	// Places are handed out again and again from 1,024 chunks: unique
	// placement would mark them all.
	rc.UniquePlacement.Radius = 0
	rc.Pulse = time.Millisecond
	rc.Queues = config.Queues{Backlog: 512, Cold: 1024}
	rc.Budget = config.Budget{Candidates: 256, Screens: 128, MaxScreens: 128, PromotionsPerPulse: 128,
		MaxPromotions: 128, Transfers: 64, LoginBurst: 0}
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	e := newEngineOpts(b, cfg, engine.Options{WatchPeriod: period})
	stop := run(b, e)
	defer func() { _ = stop() }()
	region := e.Region(config.DefaultRegionName)
	general := region.Pipeline().General()
	refill := func() {
		if err := e.ScanResume(config.DefaultRegionName); err != nil {
			b.Fatal(err)
		}
		waitForUpTo(b, 2*time.Minute, "a full general sink", func() bool { return general.Len() >= capacity })
		if err := e.ScanPause(config.DefaultRegionName); err != nil {
			b.Fatal(err)
		}
		if err := region.Pipeline().Settle(context.Background()); err != nil {
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
	st, err := e.Stats(config.DefaultRegionName)
	if err != nil {
		b.Fatal(err)
	}
	if (st.Watch != nil) != (period >= 0) {
		b.Fatalf("watch stats %+v with WatchPeriod %v", st.Watch, period)
	}
	slices.Sort(durs)
	pct := func(p float64) float64 { return float64(durs[int(p*float64(len(durs)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
}
