package memory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// goldenTable builds a table with static, dynamic and probation runs and
// biome counts, at a fixed clock.
func goldenTable(t *testing.T, clk *fakeClock) *Table {
	t.Helper()
	tb, err := New(Options{Len: 1000, World: "world_nether", Clock: clk.Now, TTL: modelTTL})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tb, 3, CauseBiome, "minecraft:ocean")
	mustAdd(t, tb, 4, CauseBiome, "minecraft:ocean")
	mustAdd(t, tb, 9, CauseBiome, "minecraft:river")
	mustAdd(t, tb, 100, CauseSafetyExternal, "a") // will be on probation
	tb.Rebuild()
	clk.Advance(120 * time.Second)
	mustAdd(t, tb, 200, CauseUniquePlacement, "")
	mustAdd(t, tb, 201, CauseUniquePlacement, "")
	mustAdd(t, tb, 500, CauseVert, "")
	tb.Rebuild()
	return tb
}

func TestGoldenV3(t *testing.T) {
	clk := newFakeClock()
	tb := goldenTable(t, clk)
	path := filepath.Join(t.TempDir(), "golden.bin")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "v3.bin")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("saved bytes differ from %s:\n got %x\nwant %x", golden, got, want)
	}
	// Pin the layout independently of Encode: header, then 25-byte records.
	be := binary.BigEndian
	if string(want[:4]) != "RTPM" || be.Uint32(want[4:]) != 3 || be.Uint16(want[8:]) != uint16(len("world_nether")) {
		t.Fatalf("header = %x", want[:10])
	}
	off := 10 + len("world_nether")
	if be.Uint32(want[off:]) != 25 || be.Uint64(want[off+4:]) != 5 {
		t.Fatalf("stride/count = %x, want 25 and 5 runs", want[off:off+12])
	}
	rec := want[off+12:]
	now := uint64(clk.Now().Unix())
	first := Run{Start: int64(be.Uint64(rec)), Len: int64(be.Uint64(rec[8:])), Cause: Cause(rec[16]), Expires: int64(be.Uint64(rec[17:]))}
	if first != (Run{Start: 3, Len: 2, Cause: CauseBiome}) {
		t.Fatalf("first record = %+v, want [3, 5) biome static", first)
	}
	probe := rec[25*2:] // records: [3,5) biome, [9,10) biome, [100,101) probation, ...
	if got := (Run{Start: int64(be.Uint64(probe)), Len: int64(be.Uint64(probe[8:])), Cause: Cause(probe[16]), Expires: int64(be.Uint64(probe[17:]))}); got.Start != 100 || got.Cause != CauseSafetyExternal || uint64(got.Expires) != now-20 {
		t.Fatalf("third record = %+v, want the probation run at 100 expired 20 s ago", got)
	}
}

func TestSaveOpenOfflineDecay(t *testing.T) {
	clk := newFakeClock()
	tb := goldenTable(t, clk)
	path := filepath.Join(t.TempDir(), "m.bin")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after         time.Duration
		active, probe []int64 // run starts
	}{
		// Saved at t0+120. Run 100 expired at t0+100; the file keeps no TTL,
		// so its probation lasts the cause's TTL (200 s for source ""), to
		// t0+300. Run 200 expires at t0+270, probation to t0+420.
		{0, []int64{3, 9, 200, 500}, []int64{100}},
		{149 * time.Second, []int64{3, 9, 200, 500}, []int64{100}},
		{151 * time.Second, []int64{3, 9, 500}, []int64{100, 200}},
		{181 * time.Second, []int64{3, 9, 500}, []int64{200}},
		{301 * time.Second, []int64{3, 9, 500}, nil},
	} {
		c := &fakeClock{now: clk.Now().Add(tc.after)}
		got, err := Open(path, Options{Len: 1000, Clock: c.Now, TTL: modelTTL})
		if err != nil {
			t.Fatal(err)
		}
		starts := func(rs []Run) []int64 {
			var s []int64
			for _, r := range rs {
				s = append(s, r.Start)
			}
			return s
		}
		if a, p := starts(activeRuns(got)), starts(probationRuns(got)); !slices.Equal(a, tc.active) || !slices.Equal(p, tc.probe) {
			t.Errorf("Open %v later: active %v probation %v, want %v and %v", tc.after, a, p, tc.active, tc.probe)
		}
		if got.World() != "world_nether" {
			t.Errorf("World() = %q", got.World())
		}
		if n := got.Stats().Rejections["biome[minecraft:ocean]"]; n != 2 {
			t.Errorf("biome[minecraft:ocean] after load = %d, want 2", n)
		}
	}
}

func legacyFile(version, stride int, runs [][3]int64) []byte {
	be := binary.BigEndian
	b := []byte("RTPM")
	b = be.AppendUint32(b, uint32(version))
	b = be.AppendUint16(b, 5)
	b = append(b, "world"...)
	b = be.AppendUint32(b, uint32(stride))
	b = be.AppendUint64(b, uint64(len(runs)))
	for _, r := range runs {
		rec := make([]byte, stride)
		be.PutUint64(rec, uint64(r[0]))
		be.PutUint64(rec[8:], uint64(r[1]))
		if version >= 2 {
			rec[16] = byte(r[2])
		}
		b = append(b, rec...)
	}
	return be.AppendUint32(b, 0)
}

func TestLegacyVersionsArePermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want []Run
	}{
		{"v1", legacyFile(1, 16, [][3]int64{{5, 2, 0}, {40, 1, 0}}),
			[]Run{{Start: 5, Len: 2, Cause: CauseSafety}, {Start: 40, Len: 1, Cause: CauseSafety}}},
		{"v2", legacyFile(2, 17, [][3]int64{{5, 2, int64(CauseSafetyExternal)}, {40, 1, int64(CauseBiome)}}),
			[]Run{{Start: 5, Len: 2, Cause: CauseSafetyExternal}, {Start: 40, Len: 1, Cause: CauseBiome}}},
		{"v2 wide stride", legacyFile(2, 20, [][3]int64{{7, 3, int64(CauseVert)}}),
			[]Run{{Start: 7, Len: 3, Cause: CauseVert}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.bin")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			far := &fakeClock{now: time.Unix(4_000_000_000, 0)} // long after any TTL
			tb, err := Open(path, Options{Len: 100, Clock: far.Now})
			if err != nil {
				t.Fatal(err)
			}
			if got := activeRuns(tb); !slices.Equal(got, tc.want) {
				t.Fatalf("runs = %v, want %v (permanent)", got, tc.want)
			}
		})
	}
}

func TestCorruptFileMovedAside(t *testing.T) {
	clk := newFakeClock()
	good := filepath.Join(t.TempDir(), "good.bin")
	if err := goldenTable(t, clk).Save(good); err != nil {
		t.Fatal(err)
	}
	valid, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":          {},
		"bad magic":      append([]byte("XXXX"), valid[4:]...),
		"version 9":      append(append([]byte("RTPM"), 0, 0, 0, 9), valid[8:]...),
		"trailing bytes": append(slices.Clone(valid), 1),
		"overlap":        legacyFile(2, 17, [][3]int64{{5, 10, 0}, {8, 1, 0}}),
		"zero length":    legacyFile(2, 17, [][3]int64{{5, 0, 0}}),
		"bad cause":      legacyFile(2, 17, [][3]int64{{5, 1, 77}}),
		"beyond table":   legacyFile(2, 17, [][3]int64{{990, 20, 0}}),
		"huge count":     bytes.Replace(legacyFile(2, 17, nil), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, 1),
	}
	for i := 1; i < len(valid); i += 7 {
		cases["truncated at "+string(rune('0'+i%10))+"/"+itoa(i)] = valid[:i]
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "m.bin")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			tb, err := Open(path, Options{Len: 1000, Clock: clk.Now})
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open() error = %v, want a *CorruptError", err)
			}
			if tb == nil || tb.Selectable() != 1000 {
				t.Fatalf("Open() table = %v, want an empty usable table", tb)
			}
			if !strings.Contains(err.Error(), path) || ce.MovedTo == "" {
				t.Fatalf("error %q does not name the file and where it went", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("corrupt file still at %s (stat: %v)", path, err)
			}
			moved, err := os.ReadFile(ce.MovedTo)
			if err != nil || !bytes.Equal(moved, data) {
				t.Fatalf("moved-aside file = %d bytes, %v; want the original %d bytes", len(moved), err, len(data))
			}
			// Saving now writes a fresh file without touching the moved one.
			if err := tb.Save(path); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(ce.MovedTo); !bytes.Equal(again, data) {
				t.Fatal("the moved-aside file changed after Save")
			}
		})
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + string(appendInt(nil, i))) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func TestOpenMissingFileIsEmpty(t *testing.T) {
	tb, err := Open(filepath.Join(t.TempDir(), "none.bin"), Options{Len: 10})
	if err != nil || tb.Selectable() != 10 {
		t.Fatalf("Open(missing) = %v, %v; want an empty table", tb, err)
	}
}

func TestSaveCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rtp-data", "regions", "m.bin")
	if err := goldenTable(t, newFakeClock()).Save(path); err != nil {
		t.Fatalf("Save into a missing directory: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestSaveLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	tb := goldenTable(t, newFakeClock())
	for range 3 {
		if err := tb.Save(filepath.Join(dir, "m.bin")); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after saves, want 1", len(entries))
	}
}

func FuzzDecode(f *testing.F) {
	clk := newFakeClock()
	tb, err := New(Options{Len: 1000, World: "w", Clock: clk.Now})
	if err != nil {
		f.Fatal(err)
	}
	for _, i := range []int64{1, 2, 9, 500} {
		_ = tb.AddBad(i, CauseSafety, "")
	}
	tb.Rebuild()
	v3, _ := tb.Snapshot().Encode(nil)
	f.Add(v3)
	f.Add(legacyFile(1, 16, [][3]int64{{5, 2, 0}}))
	f.Add(legacyFile(2, 17, [][3]int64{{5, 2, 4}}))
	if golden, err := os.ReadFile(filepath.Join("testdata", "v3.bin")); err == nil {
		f.Add(golden)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// A decodable file re-encodes (as version 3) and decodes to the same runs.
		enc, err := file.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v", err)
		}
		if !slices.Equal(again.Runs, file.Runs) || again.World != file.World || len(again.Biomes) != len(file.Biomes) {
			t.Fatalf("round trip changed the file: %+v vs %+v", again, file)
		}
		// Loading into a table never panics; runs beyond it are an error.
		tb, err := New(Options{Len: 1 << 40, World: file.World, Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		_ = tb.Load(file)
	})
}
