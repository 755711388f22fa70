package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// TestWatchedUngeneratedKeptUntilChange: on a watched Minecraft world, a
// region reaching past the generated chunks keeps them as ungenerated
// past the timed default (10 minutes of the engine's clock), so they are
// not drawn and read again; a restart forgets what the memory file
// brought back of them, since the game may have written them meanwhile.
func TestWatchedUngeneratedKeptUntilChange(t *testing.T) {
	dir := t.TempDir()
	var chunks []*anviltest.Chunk
	for x := range 4 {
		for z := range 4 {
			c := anviltest.NewChunk(x, z, anvil.Overworld)
			if err := c.Fill(0, -64, 0, 15, 63, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	// Chunks -4..7 on each axis: 144, 16 of them generated.
	cfg := saveConfig(t, dir, 32, 32, 96)
	clk := &fakeClock{}
	e := newEngineOpts(t, cfg, engine.Options{Clock: clk.Now})
	stop := run(t, e)
	loc := teleport(t, e, engine.Request{Player: "p"})
	if err := e.Complete(loc.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ungenerated cells in memory", func() bool {
		return stats(t, e, config.DefaultRegionName).Memory.ByCause["ungenerated"] > 0
	})
	before := stats(t, e, config.DefaultRegionName).Memory
	if before.StaticRuns == 0 {
		t.Errorf("memory %+v: no static run", before)
	}
	clk.Advance(11 * time.Minute)
	waitFor(t, "two rebuilds past the timed default", func() bool {
		return stats(t, e, config.DefaultRegionName).Memory.Rebuilds >= before.Rebuilds+2
	})
	after := stats(t, e, config.DefaultRegionName).Memory
	if after.Probation != 0 {
		t.Errorf("%d cells on probation after 11 minutes: the ungenerated runs expired", after.Probation)
	}
	if after.ByCause["ungenerated"] < before.ByCause["ungenerated"] {
		t.Errorf("ungenerated cells %d after 11 minutes, %d before: want them kept until their region file changes",
			after.ByCause["ungenerated"], before.ByCause["ungenerated"])
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A restart on the same data: the memory file holds the ungenerated
	// runs, and the region forgets them as it opens.
	data, err := os.ReadFile(filepath.Join(cfg.DataDir, engine.MemoryDir, config.DefaultRegionName+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := memory.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	saved := int64(0)
	for _, r := range f.Runs {
		if r.Cause == memory.CauseUngenerated {
			saved += r.Len
			if r.Expires != 0 {
				t.Errorf("saved ungenerated run %+v expires", r)
			}
		}
	}
	if saved == 0 {
		t.Fatalf("the memory file holds no ungenerated run: %+v", f.Runs)
	}
	var log lockedBuffer
	e2 := newEngineOpts(t, cfg, engine.Options{Clock: clk.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	st := stats(t, e2, config.DefaultRegionName).Memory
	if n := st.ByCause["ungenerated"]; n != 0 {
		t.Errorf("after a restart: %d ungenerated cells, want 0", n)
	}
	if !strings.Contains(log.String(), "will be read again") {
		t.Errorf("the restart does not say the chunks will be read again:\n%s", log.String())
	}
}
