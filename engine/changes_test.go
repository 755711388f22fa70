package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// TestChunksChanged fills the hot cache of a region on a Minecraft save,
// then reports the west half of its chunks changed without touching the
// region file, as a game server does between a player's change and its
// save: from the report on, no place of those chunks is handed out, though
// the copy on disk still shows them safe; the sinks refill from the east
// half. The save that follows (lava in the west half) ends the holds, and
// still nothing of the west half is handed out.
func TestChunksChanged(t *testing.T) {
	const period = 50 * time.Millisecond
	save := t.TempDir()
	regionDir := filepath.Join(save, "region")
	if err := anviltest.WriteLevel(save, anviltest.Level{}); err != nil {
		t.Fatal(err)
	}
	writeFreshRegion(t, regionDir, func(int) bool { return false })

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

	if _, err := e.ChunksChanged("nether", []geom.Chunk{{}}); reason(err) != engine.ReasonUnknownWorld {
		t.Fatalf("an unknown world: %v", err)
	}
	if _, err := e.ChunksChanged("mc", make([]geom.Chunk, engine.MaxChangedChunks+1)); reason(err) != engine.ReasonInvalid {
		t.Fatalf("too many chunks: %v", err)
	}
	waitFor(t, "a full general sink", func() bool { return fill(stats(t, e, region), "general") >= 10 })

	var west []geom.Chunk
	for cz := range 8 {
		for cx := range 4 {
			west = append(west, geom.Chunk{X: int64(cx), Z: int64(cz)}, geom.Chunk{X: int64(cx), Z: int64(cz)}) // repeats count once
		}
	}
	rep, err := e.ChunksChanged("mc", west)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chunks != 32 || rep.Held != 32 || rep.Dropped == 0 {
		t.Fatalf("report %+v: want 32 chunks, 32 held, some cached places dropped", rep)
	}
	if w := stats(t, e, region).Watch; w.Reported != 32 || w.Held != 32 {
		t.Fatalf("watch stats %+v", w)
	}
	try := func(step string) int {
		t.Helper()
		served := 0
		for range 20 {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			loc, err := e.Teleport(ctx, region, engine.Request{Player: "p"})
			cancel()
			if err != nil {
				if r := reason(err); r != engine.ReasonNoLocation {
					t.Fatalf("%s: Teleport: %v", step, err)
				}
				continue
			}
			if err := e.Complete(loc.ID); err != nil {
				t.Fatal(err)
			}
			served++
			if c := (geom.Block{X: loc.X, Z: loc.Z}).Chunk(); c.X < 4 {
				t.Fatalf("%s: handed out %d, %d in chunk %v, reported changed", step, loc.X, loc.Z, c)
			}
		}
		return served
	}
	if try("held") == 0 {
		t.Fatal("held: no place served from the chunks not reported")
	}

	// The save reaches disk: the holds end, the watcher's own path takes
	// over, and the lava now on disk keeps the west half out.
	before := stats(t, e, region).Watch.ChangedChunks
	writeFreshRegion(t, regionDir, func(cx int) bool { return cx < 4 })
	waitFor(t, "the holds to end at the save", func() bool {
		w := stats(t, e, region).Watch
		return w.ChangedChunks >= before+64 && w.Held == 0
	})
	try("saved")
	for _, c := range west[:4] {
		b := geom.Block{X: c.X*16 + 8, Z: c.Z*16 + 8}
		if g, ok := groundOf(t, save, engine.Location{X: b.X, Z: b.Z}); !ok || !strings.Contains(g, "lava") {
			t.Fatalf("the save did not write lava at %v: %q", c, g)
		}
	}
}
