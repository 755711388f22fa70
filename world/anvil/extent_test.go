package anvil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
)

// saveOf lays the given fixture region files out as a save folder's
// overworld (DIR/region/r.X.Z.mca) and returns DIR.
func saveOf(tb testing.TB, files ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	reg := filepath.Join(dir, "region")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(anvilfixture.Path(tb, f))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(reg, filepath.Base(f)), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// slotTruth reads every slot of every region of w with Info, without the
// headers' help, and returns the finished chunks and how many slots hold a
// chunk at all.
func slotTruth(t *testing.T, w *World) (finished []geom.Chunk, present int) {
	t.Helper()
	regions, err := w.Regions()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range regions {
		for i := range ChunksPerRegion {
			c := SlotChunk(r, i)
			info, err := w.Info(t.Context(), c)
			if err != nil {
				continue // an empty slot: ungenerated
			}
			present++
			if info.Full {
				finished = append(finished, c)
			}
		}
	}
	return finished, present
}

// exact gives Extent time to read every chunk even under the race
// detector on a loaded machine (the default budget of 5 s is not).
var exact = ExtentOptions{Budget: 10 * time.Minute}

func TestExtentFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.path, func(t *testing.T) {
			t.Parallel()
			w, err := Open(saveOf(t, f.path), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			e, err := w.Extent(t.Context(), exact)
			if err != nil {
				t.Fatal(err)
			}
			fin, present := slotTruth(t, w)
			if e.Regions != 1 || e.Present != f.chunks || e.Present != present || e.Checked != present ||
				e.Finished != f.full || e.Finished != len(fin) || !e.Exact || e.Unreadable != 0 {
				t.Fatalf("Extent = regions %d, present %d, checked %d, finished %d, exact %v, unreadable %d; want 1, %d, %d, %d, true, 0",
					e.Regions, e.Present, e.Checked, e.Finished, e.Exact, e.Unreadable, f.chunks, f.chunks, f.full)
			}
			checkGeometry(t, &e, fin)
			t.Logf("%d present, %d finished, %v, took %v", e.Present, e.Finished, e.Bounds, e.Took)
		})
	}
}

// checkGeometry compares Bounds, CoverRadius and Within with brute force
// over the finished chunks fin.
func checkGeometry(t *testing.T, e *Extent, fin []geom.Chunk) {
	t.Helper()
	if !e.HasBounds {
		t.Fatal("HasBounds false with finished chunks")
	}
	box := ChunkBox{fin[0], fin[0]}
	for _, c := range fin {
		box.Min.X, box.Min.Z = min(box.Min.X, c.X), min(box.Min.Z, c.Z)
		box.Max.X, box.Max.Z = max(box.Max.X, c.X), max(box.Max.Z, c.Z)
	}
	if e.Bounds != box {
		t.Errorf("Bounds = %v, want %v", e.Bounds, box)
	}
	for _, center := range []geom.Chunk{{}, box.Center(), box.Min, {X: -40, Z: 77}} {
		r := e.CoverRadius(center)
		c, err := geom.NewCircle(center, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range fin {
			if !c.Contains(ch) {
				t.Fatalf("CoverRadius(%v) = %d leaves out finished %v", center, r, ch)
			}
		}
		if r > 0 {
			smaller, _ := geom.NewCircle(center, r-1, 0)
			all := true
			for _, ch := range fin {
				all = all && smaller.Contains(ch)
			}
			if all {
				t.Errorf("CoverRadius(%v) = %d, but %d covers every finished chunk", center, r, r-1)
			}
		}
		if _, n := e.Within(c); n != len(fin) {
			t.Errorf("Within(covering %v) finished %d, want %d", c, n, len(fin))
		}
	}
	// A small circle holding only part of the finished area.
	part, err := geom.NewCircle(box.Center(), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ch := range fin {
		if part.Contains(ch) {
			want++
		}
	}
	if present, n := e.Within(part); n != want || present < n {
		t.Errorf("Within(%v) = present %d, finished %d; want finished %d", part, present, n, want)
	}
}

func TestExtentSeveralRegions(t *testing.T) {
	a, b := "prismarine-provider-anvil/1.16/r.0.-1.mca", "prismarine-provider-anvil/1.21.1/r.0.0.mca"
	w, err := Open(saveOf(t, a, b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e, err := w.Extent(t.Context(), ExtentOptions{Budget: exact.Budget, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if e.Regions != 2 || e.Present != 253+225 || e.Finished != 253+16 || !e.Exact {
		t.Fatalf("Extent = regions %d, present %d, finished %d, exact %v; want 2, 478, 269, true",
			e.Regions, e.Present, e.Finished, e.Exact)
	}
	fin, _ := slotTruth(t, w)
	checkGeometry(t, &e, fin)
}

func TestExtentEmpty(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "region")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	// The game leaves region files of zeros (or of no byte) behind.
	if err := os.WriteFile(filepath.Join(reg, "r.0.0.mca"), make([]byte, HeaderSize), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reg, "r.1.0.mca"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e, err := w.Extent(t.Context(), ExtentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Regions != 2 || e.Present != 0 || e.Finished != 0 || !e.Exact || e.HasBounds {
		t.Fatalf("Extent = %+v, want 2 regions and nothing else", e)
	}
	if r := e.CoverRadius(geom.Chunk{}); r != -1 {
		t.Errorf("CoverRadius = %d, want -1", r)
	}
	c, _ := geom.NewCircle(geom.Chunk{}, 10, 0)
	if p, n := e.Within(c); p != 0 || n != 0 {
		t.Errorf("Within = %d, %d, want 0, 0", p, n)
	}
}

func TestExtentErrors(t *testing.T) {
	w, err := Open(saveOf(t, "prismarine-provider-anvil/1.16/r.0.-1.mca"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []ExtentOptions{{Budget: -time.Second}, {Workers: -1}} {
		if _, err := w.Extent(t.Context(), o); err == nil {
			t.Errorf("Extent(%+v) succeeded, want an error", o)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.Extent(ctx, ExtentOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Extent with an ended context = %v, want context.Canceled", err)
	}
	w.Close()
	if _, err := w.Extent(t.Context(), ExtentOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Extent after Close = %v, want ErrClosed", err)
	}
}

// TestExtentBudget runs out of time at once: what was not read is
// estimated, and the result says so.
func TestExtentBudget(t *testing.T) {
	w, err := Open(saveOf(t, "prismarine-provider-anvil/1.19.4/r.0.0.mca"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e, err := w.Extent(t.Context(), ExtentOptions{Budget: time.Nanosecond, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Present != 529 || e.Exact || e.Checked >= e.Present {
		t.Fatalf("Extent = present %d, checked %d, exact %v; want 529, fewer checked, not exact", e.Present, e.Checked, e.Exact)
	}
}

// TestExtentEstimate checks the estimate on states set by hand: 10 chunks
// in a row, 4 read (3 finished), 6 unread.
func TestExtentEstimate(t *testing.T) {
	e := Extent{Present: 10}
	for x := range int64(10) {
		e.chunks = append(e.chunks, geom.Chunk{X: x})
	}
	e.states = []chunkState{
		stateFinished, stateFinished, stateUnfinished, stateFinished,
		stateUnread, stateUnread, stateUnread, stateUnread, stateUnread, stateUnreadable,
	}
	e.summarise()
	// 3 of 4 checked finished (the unreadable one counts as checked).
	if e.Checked != 5 || e.Unreadable != 1 || e.Exact || e.Ratio != 3.0/5 || e.Finished != 3+3 {
		t.Fatalf("summarise = checked %d, unreadable %d, exact %v, ratio %v, finished %d; want 5, 1, false, 0.6, 6",
			e.Checked, e.Unreadable, e.Exact, e.Ratio, e.Finished)
	}
	if want := (ChunkBox{geom.Chunk{X: 0}, geom.Chunk{X: 8}}); !e.HasBounds || e.Bounds != want {
		t.Errorf("Bounds = %v, want %v (unread chunks may be finished)", e.Bounds, want)
	}
	if r := e.CoverRadius(geom.Chunk{X: 0}); r != 8 {
		t.Errorf("CoverRadius = %d, want 8", r)
	}
	c, _ := geom.NewCircle(geom.Chunk{X: 6}, 1, 0) // chunks 5, 6, 7: unread
	if p, n := e.Within(c); p != 3 || n != 2 {
		t.Errorf("Within = %d, %d, want 3 present, round(0.6*3) = 2 finished", p, n)
	}
	// With none of the checked finished, unread chunks are not candidates.
	for i := range e.states {
		if e.states[i] == stateFinished {
			e.states[i] = stateUnfinished
		}
	}
	e = Extent{Present: 10, chunks: e.chunks, states: e.states}
	e.summarise()
	if e.Finished != 0 || e.HasBounds || e.CoverRadius(geom.Chunk{}) != -1 {
		t.Errorf("no finished chunk seen: finished %d, bounds %v, cover %d", e.Finished, e.HasBounds, e.CoverRadius(geom.Chunk{}))
	}
}

func TestChunkBox(t *testing.T) {
	b := ChunkBox{geom.Chunk{X: -3, Z: -32}, geom.Chunk{X: 0, Z: -1}}
	if c := b.Center(); c != (geom.Chunk{X: -2, Z: -17}) {
		t.Errorf("Center = %v, want chunk(-2, -17)", c)
	}
	if !b.Contains(geom.Chunk{X: -3, Z: -1}) || b.Contains(geom.Chunk{X: 1, Z: -1}) {
		t.Error("Contains wrong at the edge")
	}
	if got, want := b.String(), "chunks x -3..0, z -32..-1 (blocks x -48..15, z -512..-1)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func BenchmarkExtent(b *testing.B) {
	w, err := Open(saveOf(b, "prismarine-provider-anvil/1.19.4/r.0.0.mca"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Extent(context.Background(), ExtentOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
