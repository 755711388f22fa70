package engine_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// writeFreshRegion writes a synthetic region file, r.0.0, holding the
// chunks x, z in [0, 8): stone up to y 63 under a top block at y 64 that
// is lava where lava(x) holds, grass otherwise.
func writeFreshRegion(t testing.TB, regionDir string, lava func(cx int) bool) {
	writeGrassRegion(t, regionDir, 8, lava)
}

// writeGrassRegion is writeFreshRegion for the chunks x, z in [0, n).
// Every call stamps its chunks with a save time of its own, one second
// after the last: the game's saves of one chunk a second apart or more
// differ in the header, which is what a Poll compares (two saves in one
// second at the same sectors are indistinguishable there).
func writeGrassRegion(t testing.TB, regionDir string, n int, lava func(cx int) bool) {
	t.Helper()
	stamp := time.Unix(1_700_000_000+saveStamps.Add(1), 0)
	var chunks []*anviltest.Chunk
	for cz := range n {
		for cx := range n {
			c := anviltest.NewChunk(cx, cz, anvil.Overworld)
			c.Modified = stamp
			top := "minecraft:grass_block[snowy=false]"
			if lava(cx) {
				top = "minecraft:lava[level=0]"
			}
			if err := c.Fill(0, -64, 0, 15, 63, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
			if err := c.Fill(0, 64, 0, 15, 64, 15, top); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteRegions(regionDir, chunks); err != nil {
		t.Fatal(err)
	}
}

// saveStamps numbers the region files writeGrassRegion writes.
var saveStamps atomic.Int64

// groundOf reads the top block under loc through a world opened for the
// purpose, so nothing the engine holds can answer; ok is false when the
// chunk cannot be read.
func groundOf(t *testing.T, save string, loc engine.Location) (string, bool) {
	t.Helper()
	w, err := anvil.Open(save, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := geom.Block{X: loc.X, Z: loc.Z}
	ch, err := w.Load(context.Background(), b.Chunk())
	if err != nil {
		return "", false
	}
	x, z := b.Local()
	return ch.Column(x, z).Ground.String(), true
}

// TestFreshnessRegionRewritten fills the hot cache of a region on a
// Minecraft save, then rewrites its one region file under the running
// engine, as the game does: (a) half the ground turned to lava, (b)
// garbage, (c) the original ground back. Once the watcher has seen a
// change (and one more poll has passed), no place handed out may stand on
// what the file no longer holds.
func TestFreshnessRegionRewritten(t *testing.T) {
	const period = 50 * time.Millisecond
	save := t.TempDir()
	regionDir := filepath.Join(save, "region")
	if err := anviltest.WriteLevel(save, anviltest.Level{}); err != nil {
		t.Fatal(err)
	}
	grass := func(int) bool { return false }
	writeFreshRegion(t, regionDir, grass)
	regionFile := filepath.Join(regionDir, anvil.RegionName(geom.Region{}))

	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: save, Dimension: config.Overworld}}
	rc := cfg.Regions[config.DefaultRegionName]
	rc.World = "mc"
	rc.Shape = geom.ShapeSpec{Kind: "square", CenterX: 64, CenterZ: 64, Radius: 63} // chunks 0..7
	rc.Sinks.General.Capacity = 10
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	e := newEngineOpts(t, cfg, engine.Options{WatchPeriod: period})
	stop := run(t, e)
	defer func() { _ = stop() }()
	region := config.DefaultRegionName

	watch := func() engine.WatchStats {
		st := stats(t, e, region)
		if st.Watch == nil {
			t.Fatal("a Minecraft world without watch stats")
		}
		return *st.Watch
	}
	// seen waits until the watcher has reported at least n more changed
	// chunks than before, then for one more poll, so that everything the
	// change implies is applied.
	seen := func(step string, before engine.WatchStats, n uint64) {
		t.Helper()
		var now engine.WatchStats
		if _, ok := eventually.Within(30*time.Second, func() bool {
			now = watch()
			return now.ChangedChunks >= before.ChangedChunks+n
		}); !ok {
			t.Fatalf("%s: the watcher did not see the rewrite: before %+v, now %+v", step, before, now)
		}
		polls := watch().Polls
		waitFor(t, "one more poll", func() bool { return watch().Polls >= polls+1 })
	}
	full := func() {
		t.Helper()
		waitFor(t, "a full general sink", func() bool { return fill(stats(t, e, region), "general") >= 10 })
	}
	// try teleports once with a short wait: a location, or ok false on a
	// miss (or a region left with nothing, as one of garbage is).
	try := func() (engine.Location, bool) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		loc, err := e.Teleport(ctx, region, engine.Request{Player: "p"})
		if err != nil {
			if r := reason(err); r != engine.ReasonNoLocation && r != engine.ReasonExhausted {
				t.Fatalf("Teleport: %v", err)
			}
			return engine.Location{}, false
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
		return loc, true
	}

	full()
	if w := watch(); w.Period != period || w.Polls == 0 {
		t.Fatalf("watch stats %+v", w)
	}

	// (a) The west half of the ground turns to lava.
	before := watch()
	writeFreshRegion(t, regionDir, func(cx int) bool { return cx < 4 })
	seen("(a)", before, 64)
	served := 0
	for range 20 {
		loc, ok := try()
		if !ok {
			continue
		}
		served++
		ground, readable := groundOf(t, save, loc)
		if !readable || strings.Contains(ground, "lava") {
			t.Fatalf("(a) handed out %d, %d on %q (readable %v) after the ground changed", loc.X, loc.Z, ground, readable)
		}
	}
	if served == 0 {
		t.Fatal("(a) no place served from the half that stayed grass")
	}
	if st := stats(t, e, region); st.Pipeline.Changed == 0 || st.Watch.Dropped+st.Pipeline.Changed == 0 {
		t.Fatalf("(a) no cached entry was dropped for the change: %+v, pipeline changed %d", st.Watch, st.Pipeline.Changed)
	}

	// (b) Garbage replaces the file: nothing of it may be handed out.
	before = watch()
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(regionFile, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	seen("(b)", before, 64)
	for range 5 {
		if loc, ok := try(); ok {
			t.Fatalf("(b) handed out %d, %d from a region file that holds garbage", loc.X, loc.Z)
		}
	}

	// (c) The original ground comes back, and so do places.
	before = watch()
	writeFreshRegion(t, regionDir, grass)
	seen("(c)", before, 1)
	var loc engine.Location
	waitFor(t, "a place after the ground came back", func() bool {
		var ok bool
		loc, ok = try()
		return ok
	})
	if ground, ok := groundOf(t, save, loc); !ok || !strings.Contains(ground, "grass") {
		t.Fatalf("(c) handed out %d, %d on %q", loc.X, loc.Z, ground)
	}
	full()
}
