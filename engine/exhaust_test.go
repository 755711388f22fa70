package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// airSave writes a save whose region r.0.0 holds a 6 x 6 block of
// finished chunks that are all air (chunks 0..5, 0..5) and a row of
// unfinished ones (x 6). It returns the save folder and the chunks.
func airSave(t *testing.T) (string, []*anviltest.Chunk) {
	t.Helper()
	dir := t.TempDir()
	var chunks []*anviltest.Chunk
	for x := range 7 {
		for z := range 6 {
			c := anviltest.NewChunk(x, z, anvil.Overworld)
			if x == 6 {
				c.Status, c.NoHeightmaps = "minecraft:noise", true
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	return dir, chunks
}

// saveConfig is testConfig with its one region, a square of radius
// radius blocks round block (cx, cz), on the save at dir, watched every
// 10 ms.
func saveConfig(t *testing.T, dir string, cx, cz, radius int64) *config.Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: dir, Dimension: config.Overworld, WatchPeriod: 10 * time.Millisecond}}
	rc := cfg.Regions[config.DefaultRegionName]
	rc.World = "mc"
	rc.Shape = geom.ShapeSpec{Kind: "square", CenterX: cx, CenterZ: cz, Radius: radius}
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	return cfg
}

// replaceRegions writes the region files of chunks in the save at dir as
// the game saves them, so that the watcher never sees one half written:
// into a folder beside, then renamed over the old ones.
func replaceRegions(t *testing.T, dir string, chunks []*anviltest.Chunk) {
	t.Helper()
	tmp := filepath.Join(dir, "new-region")
	if err := anviltest.WriteRegions(tmp, chunks); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(tmp, n.Name()), filepath.Join(dir, "region", n.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExhaustedAllAir: on a save whose finished chunks are all air, with
// unfinished chunks and missing region files in the region, a teleport
// fails with ReasonExhausted within the 30 s the region is allowed, and
// says how memory's cells divide among the causes; stats and Exhausted
// show it, later teleports fail at once. Writing a chunk with ground into
// the save makes the region serve again by itself.
func TestExhaustedAllAir(t *testing.T) {
	dir, chunks := airSave(t)
	// Chunks -2..7 on each axis: the save's chunks, and chunks of the
	// missing region files r.-1.*.
	cfg := saveConfig(t, dir, 48, 48, 80)
	e := newEngine(t, cfg)
	run(t, e)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "p"})
	took := time.Since(start)
	if reason(err) != engine.ReasonExhausted {
		t.Fatalf("Teleport on an all-air save = %v after %v, want %s", err, took, engine.ReasonExhausted)
	}
	t.Logf("exhausted after %v: %v", took, err)
	for _, want := range []string{"vert", "ungenerated"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not count %s", err, want)
		}
	}
	st := stats(t, e, config.DefaultRegionName)
	x := st.Exhaustion
	if !x.Exhausted || x.Times != 1 || x.Since.IsZero() || x.ByCause["vert"] != 36 || x.ByCause["ungenerated"] == 0 {
		t.Errorf("Exhaustion = %+v, want exhausted once, vert 36 and ungenerated cells", x)
	}
	if st.Memory.Len != st.Memory.BadCount {
		t.Errorf("memory: %d bad of %d cells, want all", st.Memory.BadCount, st.Memory.Len)
	}
	if got := e.Exhausted(); len(got) != 1 || !strings.HasPrefix(got[0], config.DefaultRegionName+" (") {
		t.Errorf("Exhausted() = %q", got)
	}
	// Later teleports fail at once, without waiting.
	begin := time.Now()
	_, err = e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "q"})
	if reason(err) != engine.ReasonExhausted || time.Since(begin) > time.Second {
		t.Errorf("second teleport = %v after %v, want %s at once", err, time.Since(begin), engine.ReasonExhausted)
	}

	// The game writes ground into chunks 1..4 (both axes), saving the
	// region file with new timestamps: the watcher sees the chunks
	// change, memory forgets them, and the region serves from them. (A
	// single changed chunk amid rejected ones may be absorbed again by
	// the spatial resolution before it is screened; a patch of 16 is
	// not, whole.)
	later := time.Now().Add(time.Minute)
	patch := func(x, z int64) bool { return x >= 1 && x <= 4 && z >= 1 && z <= 4 }
	for _, c := range chunks {
		c.Modified = later
		if patch(int64(c.X), int64(c.Z)) {
			if err := c.Fill(0, -64, 0, 15, 63, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
		}
	}
	replaceRegions(t, dir, chunks)
	loc, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "p", Wait: 20 * time.Second})
	for reason(err) == engine.ReasonExhausted && ctx.Err() == nil {
		// Asked before the watcher's poll: the state ends with it.
		waitFor(t, "the region to have places again", func() bool {
			return !stats(t, e, config.DefaultRegionName).Exhaustion.Exhausted
		})
		loc, err = e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "p", Wait: 20 * time.Second})
	}
	if err != nil {
		t.Fatalf("Teleport after the save changed: %v", err)
	}
	if c := (geom.Block{X: loc.X, Z: loc.Z}).Chunk(); !patch(c.X, c.Z) || loc.Y != 64 {
		t.Errorf("location %+v, want one on the stone of chunks 1..4 at y 64", loc)
	}
	if x := stats(t, e, config.DefaultRegionName).Exhaustion; x.Times != 1 {
		t.Errorf("Exhaustion after the change = %+v", x)
	}
}

// switchWorld is an embedder's world: every chunk ungenerated until
// generated is set, then flat grass at y 64.
type switchWorld struct{ generated atomic.Bool }

func (w *switchWorld) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !w.generated.Load() {
		return nil, &world.PosError{Pos: pos, Err: world.ErrUngenerated}
	}
	ch := world.NewChunk(pos, -64, 320)
	for i := range ch.Columns {
		ch.Columns[i] = world.Column{Top: 64, Ground: world.Block("minecraft:grass_block[snowy=false]")}
	}
	return ch, nil
}

// TestExhaustedRecoversWhenMemoryExpires: an embedder's world, watched by
// nobody, whose every chunk is ungenerated exhausts its region; the
// chunks being generated changes nothing until memory's ungenerated runs
// expire (the engine's clock, a fake one, passes their TTL), and then the
// region serves again by itself.
func TestExhaustedRecoversWhenMemoryExpires(t *testing.T) {
	cfg := testConfig(t)
	spec := specOf(t, cfg)
	src := &switchWorld{}
	spec.Worlds = map[string]engine.WorldSpec{config.DefaultWorldName: {Source: src, Key: "switch"}}
	rs := spec.Regions[config.DefaultRegionName]
	rs.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 64}
	spec.Regions[config.DefaultRegionName] = rs
	clk := &fakeClock{}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger(), Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	run(t, e)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "p"})
	if reason(err) != engine.ReasonExhausted || !strings.Contains(err.Error(), "ungenerated") {
		t.Fatalf("Teleport on an ungenerated world = %v, want %s counting ungenerated cells", err, engine.ReasonExhausted)
	}
	src.generated.Store(true)
	if _, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: "p"}); reason(err) != engine.ReasonExhausted {
		t.Fatalf("Teleport before memory expired = %v, want %s", err, engine.ReasonExhausted)
	}
	clk.Advance(11 * time.Minute)
	waitFor(t, "the region to have places again", func() bool {
		return !stats(t, e, config.DefaultRegionName).Exhaustion.Exhausted
	})
	loc := teleport(t, e, engine.Request{Player: "p", Wait: 20 * time.Second})
	if loc.Y != 65 {
		t.Errorf("location %+v, want y 65 on the grass", loc)
	}
	if err := e.Complete(loc.ID); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, e, config.DefaultRegionName); st.Exhaustion.Exhausted || st.Exhaustion.Times != 1 {
		t.Errorf("Exhaustion = %+v after recovery", st.Exhaustion)
	}
}

// TestHalfUnreadable: on a save where every other chunk is gzip data
// under the zlib byte (unreadable), 50 places come within 5 s, and each
// unreadable chunk is read (and fails) at most once: memory remembers it
// as unreadable. Rewriting the region file makes its chunks read again,
// once each.
func TestHalfUnreadable(t *testing.T) {
	dir := t.TempDir()
	var chunks []*anviltest.Chunk
	damaged := 0
	for x := range 16 {
		for z := range 16 {
			c := anviltest.NewChunk(x, z, anvil.Overworld)
			if err := c.Fill(0, -64, 0, 15, 63, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
			if (x+z)%2 == 0 {
				c.GzipAsZlib = true
				damaged++
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	// Written by a tool long ago: the file is at rest.
	file := filepath.Join(dir, "region", "r.0.0.mca")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	cfg := saveConfig(t, dir, 128, 128, 127) // chunks 0..15 on each axis
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Sinks.General.Capacity = 64
	rc.Queues = config.Queues{Backlog: 128, Cold: 128}
	rc.Budget.Candidates, rc.Budget.Screens = 64, 32
	cfg.Regions[config.DefaultRegionName] = rc
	e := newEngine(t, cfg)
	run(t, e)
	start := time.Now()
	picks := func(n int) {
		t.Helper()
		for i := range n {
			loc := teleport(t, e, engine.Request{Player: "p"})
			if c := (geom.Block{X: loc.X, Z: loc.Z}).Chunk(); (c.X+c.Z)%2 == 0 {
				t.Fatalf("pick %d at %+v, in a damaged chunk", i, loc)
			}
			if err := e.Complete(loc.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	picks(50)
	took := time.Since(start)
	t.Logf("50 places in %v", took)
	if took > 5*time.Second {
		t.Errorf("50 places took %v, want at most 5 s", took)
	}
	// Each failed read is one unreadable rejection, and memory holds one
	// cell per damaged chunk rejected: once the counts agree, no chunk was
	// read twice (a second read would leave more rejections than cells).
	onceEach := func(what string) uint64 {
		t.Helper()
		var st engine.Stats
		waitFor(t, what, func() bool {
			st = stats(t, e, config.DefaultRegionName)
			reads := st.Watch.Reader.ReadErrors
			return reads > 0 && reads == uint64(st.Memory.ByCause["unreadable"])
		})
		if n := st.Pipeline.ScreenRejections["ERROR"]; n != 0 {
			t.Errorf("%d screening errors, want none (unreadable is a rejection)", n)
		}
		return st.Watch.Reader.ReadErrors
	}
	first := onceEach("each failed read remembered, none read twice")
	if first > uint64(damaged) {
		t.Errorf("%d failed reads of %d damaged chunks", first, damaged)
	}
	picks(50)
	if n := onceEach("the reads of 50 more picks remembered"); n > uint64(damaged) {
		t.Errorf("%d failed reads of %d damaged chunks after 50 more picks", n, damaged)
	}

	// The file changes (a new modification): each damaged chunk is read
	// again, once.
	later := time.Now().Add(time.Minute)
	for _, c := range chunks {
		c.Modified = later
	}
	replaceRegions(t, dir, chunks)
	waitFor(t, "the change seen", func() bool {
		return stats(t, e, config.DefaultRegionName).Watch.ChangedChunks > 0
	})
	before := stats(t, e, config.DefaultRegionName).Watch.Reader.ReadErrors
	picks(20)
	waitFor(t, "damaged chunks read again", func() bool {
		return stats(t, e, config.DefaultRegionName).Watch.Reader.ReadErrors > before
	})
	st := stats(t, e, config.DefaultRegionName)
	again := st.Watch.Reader.ReadErrors - before
	if cells := uint64(st.Memory.ByCause["unreadable"]); again > uint64(damaged) || cells > uint64(damaged) {
		t.Errorf("after the change: %d more failed reads, %d unreadable cells; want at most %d each", again, cells, damaged)
	}
}
