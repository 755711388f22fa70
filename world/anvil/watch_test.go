package anvil

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world"
)

// copyFile copies src to dst (a new file, a new inode).
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// stamp sets file's modification time to a distinct value n seconds after
// a day in 2020, so that a test does not depend on the clock's granularity
// and Poll trusts an unchanged stat (the time is long past).
func stamp(tb testing.TB, file string, n int) {
	tb.Helper()
	t := time.Unix(1_600_000_000+int64(n), 0)
	if err := os.Chtimes(file, t, t); err != nil {
		tb.Fatal(err)
	}
}

// putUint32 writes v big-endian at off of file, in place.
func putUint32(tb testing.TB, file string, off int64, v uint32) {
	tb.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(binary.BigEndian.AppendUint32(nil, v), off); err != nil {
		tb.Fatal(err)
	}
}

func readHeaderFile(tb testing.TB, file string) *Header {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := ParseHeader(data)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// openPolled opens dir with the retry pauses skipped and takes the
// baseline Poll, which must report nothing.
func openPolled(t *testing.T, dir string, opts Options) *World {
	t.Helper()
	w, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.health.pause = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	if c := poll(t, w); !isEmpty(c) {
		t.Fatalf("baseline Poll = %+v, want nothing", c)
	}
	return w
}

func poll(t *testing.T, w *World) Changes {
	t.Helper()
	c, err := w.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(c.Chunks, compareChunks) || len(slices.Compact(slices.Clone(c.Chunks))) != len(c.Chunks) {
		t.Fatalf("Poll chunks not sorted and unique: %v", c.Chunks)
	}
	for _, d := range c.Damaged {
		if !slices.Contains(c.Chunks, d) {
			t.Fatalf("damaged %v is not among the changed chunks", d)
		}
	}
	return c
}

func isEmpty(c Changes) bool { return len(c.Chunks) == 0 && len(c.Regions) == 0 && len(c.Damaged) == 0 }

// union is the sorted, unique chunks of the headers.
func union(r geom.Region, hs ...*Header) []geom.Chunk {
	var out []geom.Chunk
	for _, h := range hs {
		out = append(out, h.Chunks(r)...)
	}
	slices.SortFunc(out, compareChunks)
	return slices.Compact(out)
}

func TestPoll(t *testing.T) {
	dir := t.TempDir()
	rA, rB := geom.Region{X: 0, Z: 0}, geom.Region{X: 0, Z: -1}
	fileA, fileB := filepath.Join(dir, RegionName(rA)), filepath.Join(dir, RegionName(rB))
	copyFile(t, anvilfixture.Path(t, "prismarine-provider-anvil/1.21.1/r.0.0.mca"), fileA)
	copyFile(t, anvilfixture.Path(t, "prismarine-provider-anvil/1.16/r.0.-1.mca"), fileB)
	stamp(t, fileA, 0)
	stamp(t, fileB, 0)
	w := openPolled(t, dir, Options{})
	ctx := context.Background()
	if c := poll(t, w); !isEmpty(c) {
		t.Fatalf("Poll of an unchanged folder = %+v", c)
	}
	hdrA := readHeaderFile(t, fileA)
	present := union(rA, hdrA)
	if len(present) != 225 {
		t.Fatalf("fixture holds %d chunks, want 225", len(present))
	}

	t.Run("timestamp", func(t *testing.T) {
		c0 := present[17]
		putUint32(t, fileA, SectorSize+4*int64(Slot(c0)), hdrA.Timestamps[Slot(c0)]+1)
		stamp(t, fileA, 1)
		if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{c0}) || len(c.Regions) != 0 || len(c.Damaged) != 0 {
			t.Fatalf("Poll after one new timestamp = %+v, want only %v", c, c0)
		}
		if c := poll(t, w); !isEmpty(c) {
			t.Fatalf("second Poll = %+v, want nothing", c)
		}
	})

	t.Run("location", func(t *testing.T) {
		// Slot a points at slot b's sectors: a moved (and now holds the
		// wrong chunk); nothing else changed.
		a, b := present[3], present[4]
		putUint32(t, fileA, 4*int64(Slot(a)), hdrA.Locations[Slot(b)])
		stamp(t, fileA, 2)
		if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{a}) || len(c.Regions) != 0 {
			t.Fatalf("Poll after a moved chunk = %+v, want only %v", c, a)
		}
		_, err := w.Load(ctx, a)
		var ce *ChunkError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Reason != fmt.Sprintf("slot holds chunk (%d,%d)", b.X, b.Z) {
			t.Fatalf("Load of a slot holding another chunk = %v", err)
		}
		putUint32(t, fileA, 4*int64(Slot(a)), hdrA.Locations[Slot(a)])
		stamp(t, fileA, 3)
		if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{a}) {
			t.Fatalf("Poll after moving it back = %+v, want only %v", c, a)
		}
		if _, err := w.Load(ctx, a); err != nil && !errors.Is(err, world.ErrUngenerated) {
			t.Fatalf("Load after the fix = %v", err)
		}
	})

	t.Run("same header", func(t *testing.T) {
		// New content, the header untouched: every chunk may differ.
		data, _ := os.ReadFile(fileA)
		data[len(data)-1] ^= 0xff
		if err := os.WriteFile(fileA, data, 0o644); err != nil {
			t.Fatal(err)
		}
		stamp(t, fileA, 4)
		c := poll(t, w)
		if !slices.Equal(c.Chunks, present) || !slices.Equal(c.Regions, []geom.Region{rA}) {
			t.Fatalf("Poll after a rewrite under the same header: %d chunks, regions %v; want all %d of %v", len(c.Chunks), c.Regions, len(present), rA)
		}
	})

	t.Run("new file", func(t *testing.T) {
		rC := geom.Region{X: -1, Z: 0}
		fileC := filepath.Join(dir, RegionName(rC))
		copyFile(t, anvilfixture.Path(t, "prismarine-provider-anvil/1.8.9/r.-1.0.mca"), fileC)
		c := poll(t, w)
		if want := union(rC, readHeaderFile(t, fileC)); !slices.Equal(c.Chunks, want) || !slices.Equal(c.Regions, []geom.Region{rC}) {
			t.Fatalf("Poll after a new file = %d chunks, regions %v; want %d of %v", len(c.Chunks), c.Regions, len(want), rC)
		}
		if _, err := w.Load(ctx, geom.Chunk{X: -1, Z: 0}); err != nil && !errors.Is(err, world.ErrUngenerated) {
			t.Fatalf("Load from the new file = %v", err)
		}
	})

	t.Run("rename", func(t *testing.T) {
		// Hold the old file open, then rename a synthetic region over it.
		pos := present[0]
		if _, err := w.Load(ctx, pos); err != nil && !errors.Is(err, world.ErrUngenerated) {
			t.Fatal(err)
		}
		other := geom.Chunk{X: 31, Z: 31}
		staging := t.TempDir()
		newFile := writeRegion(t, staging, rA, []regionChunk{
			{pos: pos, nbt: flatChunk(t, pos, 42), scheme: CompressionZlib, stamp: 1},
			{pos: other, nbt: flatChunk(t, other, 43), scheme: CompressionGzip, stamp: 1},
		})
		newHdr := readHeaderFile(t, newFile)
		old := readHeaderFile(t, fileA)
		if err := os.Rename(newFile, fileA); err != nil {
			t.Fatal(err)
		}
		c := poll(t, w)
		if want := union(rA, old, newHdr); !slices.Equal(c.Chunks, want) || !slices.Equal(c.Regions, []geom.Region{rA}) {
			t.Fatalf("Poll after a rename = %d chunks, regions %v; want %d of %v", len(c.Chunks), c.Regions, len(want), rA)
		}
		for _, tc := range []struct {
			pos geom.Chunk
			top int
		}{{pos, 42}, {other, 43}} {
			ch, err := w.Load(ctx, tc.pos)
			if err != nil || int(ch.Column(0, 0).Top) != tc.top {
				t.Fatalf("Load(%v) after the rename = %v; want the new file's chunk, top %d", tc.pos, err, tc.top)
			}
		}
		if _, err := w.Load(ctx, present[1]); !errors.Is(err, world.ErrUngenerated) {
			t.Fatalf("Load of a chunk only the old file held = %v, want ErrUngenerated", err)
		}
	})

	t.Run("same size same mtime replacement", func(t *testing.T) {
		st, _ := os.Stat(fileA)
		tmp := fileA + ".tmp"
		copyFile(t, fileA, tmp)
		putUint32(t, tmp, SectorSize+4*int64(Slot(present[0])), 99)
		if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, fileA); err != nil {
			t.Fatal(err)
		}
		if c := poll(t, w); !slices.Equal(c.Regions, []geom.Region{rA}) || !slices.Contains(c.Chunks, present[0]) {
			t.Fatalf("Poll after a same-size, same-time replacement = %+v", c)
		}
	})

	t.Run("garbage header", func(t *testing.T) {
		old := readHeaderFile(t, fileB)
		data, _ := os.ReadFile(fileB)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range HeaderSize {
			data[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(fileB, data, 0o644); err != nil {
			t.Fatal(err)
		}
		stamp(t, fileB, 5)
		c := poll(t, w)
		if !slices.Contains(c.Regions, rB) || len(c.Damaged) == 0 {
			t.Fatalf("Poll after a garbage header: regions %v, %d damaged; want %v and damage", c.Regions, len(c.Damaged), rB)
		}
		for _, ch := range old.Chunks(rB) {
			if !slices.Contains(c.Chunks, ch) {
				t.Fatalf("Poll after a garbage header misses %v", ch)
			}
			if _, err := w.Load(ctx, ch); err == nil {
				t.Fatalf("Load(%v) under a garbage header succeeded", ch)
			}
		}
		if s := w.Stats(); s.ReadErrors == 0 || s.DamagedChunks == 0 {
			t.Errorf("Stats after garbage = %+v", s)
		}
	})

	t.Run("delete", func(t *testing.T) {
		old := readHeaderFile(t, fileB)
		if err := os.Remove(fileB); err != nil {
			t.Fatal(err)
		}
		c := poll(t, w)
		if want := union(rB, old); !slices.Equal(c.Chunks, want) || !slices.Equal(c.Regions, []geom.Region{rB}) {
			t.Fatalf("Poll after a delete = %d chunks, regions %v; want %d of %v", len(c.Chunks), c.Regions, len(want), rB)
		}
		if _, err := w.Load(ctx, old.Chunks(rB)[0]); !errors.Is(err, world.ErrUngenerated) {
			t.Fatalf("Load from a deleted file = %v, want ErrUngenerated", err)
		}
	})

	t.Run("short file", func(t *testing.T) {
		old := readHeaderFile(t, fileA)
		if err := os.Truncate(fileA, 100); err != nil {
			t.Fatal(err)
		}
		c := poll(t, w)
		if !slices.Equal(c.Chunks, union(rA, old)) || !slices.Equal(c.Regions, []geom.Region{rA}) {
			t.Fatalf("Poll after cutting a file short = %+v", c)
		}
	})

	if s := w.Stats(); s.Polls < 10 || s.ChangedChunks == 0 {
		t.Errorf("Stats = %+v, want the polls and changes counted", s)
	}
	w.Close()
	if _, err := w.Poll(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Poll after Close = %v, want ErrClosed", err)
	}
}

// TestPollExternal: a chunk stored in its own .mcc file is reported when
// that file changes, appears or goes, though its region file does not.
func TestPollExternal(t *testing.T) {
	dir := t.TempDir()
	pos := geom.Chunk{X: 2, Z: 3}
	writeRegion(t, dir, geom.Region{}, []regionChunk{{pos: pos, nbt: flatChunk(t, pos, 7), scheme: CompressionZlib, external: true}})
	mcc := filepath.Join(dir, ExternalName(pos))
	stamp(t, mcc, 0)
	w := openPolled(t, dir, Options{})
	ctx := context.Background()
	if ch, err := w.Load(ctx, pos); err != nil || ch.Column(0, 0).Top != 7 {
		t.Fatalf("Load = %v", err)
	}
	if err := os.WriteFile(mcc, compress(t, CompressionZlib, flatChunk(t, pos, 9)), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp(t, mcc, 1)
	if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{pos}) || len(c.Regions) != 0 {
		t.Fatalf("Poll after a new .mcc = %+v, want only %v", c, pos)
	}
	if ch, err := w.Load(ctx, pos); err != nil || ch.Column(0, 0).Top != 9 {
		t.Fatalf("Load after the change = %v, want top 9", err)
	}
	os.Remove(mcc)
	if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{pos}) {
		t.Fatalf("Poll after removing the .mcc = %+v, want %v", c, pos)
	}
	if _, err := w.Load(ctx, pos); err == nil {
		t.Fatal("Load without its .mcc succeeded")
	}
	if c := poll(t, w); !isEmpty(c) {
		t.Fatalf("Poll with nothing changed = %+v", c)
	}
}

// TestPollRacy: a file modified just before its header was read has the
// header read again, so a change that keeps its stat is still seen; a file
// modified long before is trusted by its stat alone.
func TestPollRacy(t *testing.T) {
	dir := t.TempDir()
	r := geom.Region{}
	a, b := geom.Chunk{X: 1}, geom.Chunk{X: 2}
	file := writeRegion(t, dir, r, []regionChunk{
		{pos: a, nbt: flatChunk(t, a, 5), scheme: CompressionZlib, stamp: 1},
		{pos: b, nbt: flatChunk(t, b, 6), scheme: CompressionZlib, stamp: 1},
	})
	w := openPolled(t, dir, Options{}) // the file's time is now: racy
	// Same size, same time, new timestamp for a.
	rewrite := func(c geom.Chunk, ts uint32) {
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		putUint32(t, file, SectorSize+4*int64(Slot(c)), ts)
		if err := os.Chtimes(file, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(a, 2)
	if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{a}) || len(c.Regions) != 0 {
		t.Fatalf("Poll after a change within the racy window = %+v, want only %v", c, a)
	}
	stamp(t, file, 0) // long past: the stat changed, the header did not
	if c := poll(t, w); len(c.Chunks) != 2 || !slices.Equal(c.Regions, []geom.Region{r}) {
		t.Fatalf("Poll after a new time and the same header = %+v, want both chunks and the region", c)
	}
	// Now trusted: a change that keeps size and time is not read (the
	// price of polls that read nothing).
	rewrite(b, 3)
	if c := poll(t, w); !isEmpty(c) {
		t.Fatalf("Poll of a trusted, unchanged stat = %+v, want nothing read", c)
	}
}

// TestPollMissingFolder: a save whose region folder does not exist yet
// polls as empty, and sees the folder's files once they come.
func TestPollMissingFolder(t *testing.T) {
	save := t.TempDir()
	writeLevel(t, save, map[string]any{"DataVersion": int32(3955)})
	w := openPolled(t, save, Options{})
	if err := os.MkdirAll(filepath.Join(save, "region"), 0o755); err != nil {
		t.Fatal(err)
	}
	pos := geom.Chunk{X: 1, Z: 1}
	writeRegion(t, filepath.Join(save, "region"), geom.Region{}, []regionChunk{{pos: pos, nbt: flatChunk(t, pos, 5), scheme: CompressionZlib}})
	if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{pos}) || !slices.Equal(c.Regions, []geom.Region{{}}) {
		t.Fatalf("Poll after the first region file = %+v", c)
	}
}

// TestPollRace runs Poll against Loads while region files are rewritten
// in place and replaced; every Load must return one of the versions
// written, and a Load after the last Poll the last version.
func TestPollRace(t *testing.T) {
	dir := t.TempDir()
	var all []geom.Chunk
	regions := []geom.Region{{X: 0, Z: 0}, {X: 1, Z: -1}}
	write := func(target string, r geom.Region, level int) {
		var chunks []regionChunk
		for i := range 3 {
			pos := geom.Chunk{X: r.Origin().X + int64(i), Z: r.Origin().Z + int64(2*i)}
			chunks = append(chunks, regionChunk{pos: pos, nbt: flatChunk(t, pos, level), scheme: CompressionZlib, stamp: uint32(level)})
		}
		writeRegion(t, target, r, chunks)
	}
	for _, r := range regions {
		write(dir, r, 10)
		for i := range 3 {
			all = append(all, geom.Chunk{X: r.Origin().X + int64(i), Z: r.Origin().Z + int64(2*i)})
		}
	}
	w := openPolled(t, dir, Options{MaxOpenFiles: 1})
	var wg sync.WaitGroup
	var stop atomic.Bool
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Go(func() {
			for k := 0; !stop.Load(); k++ {
				pos := all[(g+k)%len(all)]
				ch, err := w.Load(context.Background(), pos)
				if err != nil {
					errs <- err
					return
				}
				if top := ch.Column(0, 0).Top; top < 10 || top > 20 {
					errs <- fmt.Errorf("Load(%v): top %d, not a version written", pos, top)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			if _, err := w.Poll(context.Background()); err != nil {
				errs <- err
				return
			}
			w.Stats()
		}
	})
	staging := t.TempDir()
	for level := 11; level <= 20; level++ {
		for _, r := range regions {
			write(staging, r, level)
			if err := os.Rename(filepath.Join(staging, RegionName(r)), filepath.Join(dir, RegionName(r))); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	poll(t, w)
	for _, pos := range all {
		if ch, err := w.Load(context.Background(), pos); err != nil || ch.Column(0, 0).Top != 20 {
			t.Fatalf("Load(%v) after the last Poll = %v, want the last version (top 20)", pos, err)
		}
	}
}

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		r    geom.Region
	}{
		{"r.0.0.mca", true, geom.Region{}},
		{"r.-3.12.mca", true, geom.Region{X: -3, Z: 12}},
		{"r.+3.1.mca", false, geom.Region{}},
		{"r.03.1.mca", false, geom.Region{}},
		{"r.-0.1.mca", false, geom.Region{}},
		{"r.1.mca", false, geom.Region{}},
		{"r.1.2.mcr", false, geom.Region{}},
		{"r.1.2.3.mca", false, geom.Region{}},
		{"c.1.2.mcc", false, geom.Region{}},
	} {
		r, ok := parseRegionName(tc.name)
		if ok != tc.ok || ok && r != tc.r {
			t.Errorf("parseRegionName(%q) = %v, %v; want %v, %v", tc.name, r, ok, tc.r, tc.ok)
		}
	}
	if c, ok := parseExternalName("c.-40.7.mcc"); !ok || c != (geom.Chunk{X: -40, Z: 7}) {
		t.Errorf("parseExternalName = %v, %v", c, ok)
	}
}

// FuzzParseNames: a name parses only when it is exactly what RegionName
// or ExternalName writes for the parsed position.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"r.0.0.mca", "r.-1.5.mca", "c.3.-9.mcc", "r.9223372036854775807.0.mca", "r..mca"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if r, ok := parseRegionName(name); ok && RegionName(r) != name {
			t.Fatalf("parseRegionName(%q) = %v, which is named %q", name, r, RegionName(r))
		}
		if c, ok := parseExternalName(name); ok && ExternalName(c) != name {
			t.Fatalf("parseExternalName(%q) = %v, which is named %q", name, c, ExternalName(c))
		}
	})
}

// BenchmarkPoll polls a folder of 64 unchanged region files (copies of
// the fixtures).
func BenchmarkPoll(b *testing.B) {
	dir := b.TempDir()
	const files = 64
	for i := range files {
		f := fixtures[i%len(fixtures)]
		copyFile(b, anvilfixture.Path(b, f.path), filepath.Join(dir, RegionName(geom.Region{X: int64(i % 8), Z: int64(i / 8)})))
	}
	for i := range files {
		stamp(b, filepath.Join(dir, RegionName(geom.Region{X: int64(i % 8), Z: int64(i / 8)})), 0)
	}
	w, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	if _, err := w.Poll(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := w.Poll(ctx)
		if err != nil || !isEmpty(c) {
			b.Fatalf("Poll = %+v, %v", c, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/files, "ns/file")
}

// TestPollSameSecond: a chunk saved again in place within the second its
// slot was last seen keeps an identical slot; Poll reports it with the
// next change to the file.
func TestPollSameSecond(t *testing.T) {
	dir := t.TempDir()
	r := geom.Region{X: 0, Z: 0}
	file := filepath.Join(dir, RegionName(r))
	copyFile(t, anvilfixture.Path(t, "prismarine-provider-anvil/1.21.1/r.0.0.mca"), file)
	stamp(t, file, 0)
	w := openPolled(t, dir, Options{})
	present := union(r, readHeaderFile(t, file))
	a, b := present[3], present[40]
	// a is saved now: the poll sees its new timestamp.
	now := uint32(time.Now().Unix())
	putUint32(t, file, SectorSize+4*int64(Slot(a)), now)
	stamp(t, file, 1)
	if c := poll(t, w); !slices.Equal(c.Chunks, []geom.Chunk{a}) {
		t.Fatalf("Poll after saving %v = %+v, want only it", a, c)
	}
	// Within the same second a is saved again in place (its slot does
	// not change), and b is saved with an older time: both may differ.
	putUint32(t, file, SectorSize+4*int64(Slot(b)), now-100)
	stamp(t, file, 2)
	c := poll(t, w)
	if !slices.Contains(c.Chunks, a) || !slices.Contains(c.Chunks, b) {
		t.Fatalf("Poll after a same-second save of %v and a save of %v = %+v, want both", a, b, c)
	}
}
