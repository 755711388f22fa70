package anvil

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world"
)

// fixture is one real region file and what it holds (SOURCES.md beside
// the files; counts checked against the oracle chunk by chunk).
type fixture struct {
	path        string
	chunks      int   // chunks stored
	full        int   // finished chunks
	dataVersion int32 // every chunk's DataVersion (0: none, before 1.9)
	landings    bool  // whether the simple landing rule finds places
	// cutZlib counts chunks whose zlib stream stops after the NBT, without
	// its final block and checksum.
	cutZlib int
}

var fixtures = []fixture{
	{"prismarine-provider-anvil/1.8.9/r.-1.0.mca", 300, 288, 0, true, 0},
	{"prismarine-provider-anvil/1.9/r.-1.-1.mca", 326, 289, 169, true, 0},
	{"prismarine-provider-anvil/1.11.2/r.-1.0.mca", 28, 25, 922, true, 0},
	{"prismarine-provider-anvil/1.12.2/r.0.-1.mca", 105, 99, 1343, true, 0},
	{"prismarine-provider-anvil/1.13.2/r.-1.-1.mca", 189, 75, 1631, true, 0},
	{"prismarine-provider-anvil/1.14.4/r.0.-1.mca", 299, 299, 1976, true, 0},
	{"prismarine-provider-anvil/1.16/r.0.-1.mca", 253, 253, 2566, true, 0},
	{"prismarine-provider-anvil/1.17.1/r.0.0.mca", 144, 144, 2730, true, 0},
	{"prismarine-provider-anvil/1.18.2/r.0.0.mca", 280, 27, 2975, false, 0},
	{"prismarine-provider-anvil/1.19.4/r.0.0.mca", 529, 144, 3337, true, 0},
	{"prismarine-provider-anvil/1.20.6/r.0.0.mca", 225, 16, 3839, true, 0},
	{"prismarine-provider-anvil/1.21.1/r.0.0.mca", 225, 16, 3955, true, 0},
	{"NBT/root/r.0.0.mca", 1, 1, 2230, true, 0},
	// Every zlib stream here stops right after the NBT's last byte, without
	// the final deflate block and Adler-32 trailer. The game reads only as
	// far as the NBT goes and loads them; so does the reader.
	{"NBT/root/r.2.2.mca", 3, 3, 1628, true, 3},
	{"NBT/1_17_1/r.-3.-2.mca", 1, 1, 2730, true, 0},
	{"NBT/1_18/r.-1.-1.mca", 1, 1, 2845, true, 0},
	{"NBT/1_18/r.15.-9.mca", 1, 1, 2845, true, 0},
}

// voidWorld is the near-empty 1.17.1 world; its only blocks are a small
// redstone contraption in chunk (0, 0).
const voidWorld = "prismarine-provider-anvil/1.17.1/r.0.0.mca"

func regionOf(tb testing.TB, file string) geom.Region {
	var r geom.Region
	if _, err := fmt.Sscanf(filepath.Base(file), "r.%d.%d.mca", &r.X, &r.Z); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return r
}

// fixtureStats are the per-fixture figures the test checks and reports.
type fixtureStats struct {
	chunks, full, columns int
	dataVersions          map[int32]int
	// hmVsScan counts full columns whose stored MOTION_BLOCKING top
	// differs from the oracle's top-down scan of the blocks.
	hmVsScan int
	// lightVsScan counts (numeric chunks) columns whose legacy HeightMap
	// differs from the oracle's light-opacity scan; lightVsTop those whose
	// HeightMap top differs from the reader's MOTION_BLOCKING-like top.
	lightVsScan, lightVsTop int
	landings                int
	landingChunks           map[geom.Chunk]int
	fluid                   int // full columns with a fluid on top
}

func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.path, func(t *testing.T) {
			t.Parallel()
			st := checkFixture(t, anvilfixture.Path(t, f.path), f)
			t.Logf("%s: chunks %d, full %d, DataVersion %v, full columns %d, heightmap/scan disagreements %d, legacy HeightMap vs light scan %d, vs top %d, landings %d, fluid tops %d",
				f.path, st.chunks, st.full, st.dataVersions, st.columns, st.hmVsScan, st.lightVsScan, st.lightVsTop, st.landings, st.fluid)
			if strings.Contains(f.path, "1.18.2") && st.fluid == 0 {
				t.Error("the all-ocean 1.18.2 fixture reports no column with a fluid on top")
			}
		})
	}
}

func checkFixture(t *testing.T, file string, f fixture) fixtureStats {
	ctx := context.Background()
	// Screening (column summaries only) for every chunk; full blocks for
	// every sixteenth full chunk, checked block by block.
	w, err := Open(filepath.Dir(file), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wb, err := Open(filepath.Dir(file), Options{Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	r := regionOf(t, file)
	hdr, err := w.Header(r)
	if err != nil {
		t.Fatal(err)
	}
	raws := oracleRaw(t, file)
	var inflater oracleInflater
	cut := 0
	st := fixtureStats{dataVersions: map[int32]int{}, landingChunks: map[geom.Chunk]int{}}
	chunks := hdr.Chunks(r)
	st.chunks = len(chunks)
	if len(chunks) != f.chunks || len(raws) != f.chunks {
		t.Fatalf("header lists %d chunks, oracle %d, want %d", len(chunks), len(raws), f.chunks)
	}
	for n, c := range chunks {
		ch, info, err := w.LoadInfo(ctx, c)
		if err != nil && !errors.Is(err, world.ErrUngenerated) {
			t.Fatalf("LoadInfo(%v): %v", c, err)
		}
		st.dataVersions[info.DataVersion]++
		if info.DataVersion != f.dataVersion {
			t.Errorf("LoadInfo(%v).DataVersion = %d, want %d", c, info.DataVersion, f.dataVersion)
		}
		if !info.Full {
			if !errors.Is(err, world.ErrUngenerated) {
				t.Errorf("LoadInfo(%v) of a %q chunk = %v, want ErrUngenerated", c, info.Status, err)
			}
			if raceBuild && n%4 != 0 {
				// Under the race detector the oracle reads a quarter of
				// the unfinished chunks (all of them otherwise).
				continue
			}
		}
		raw, cutStream := inflater.inflate(t, raws[Slot(c)])
		if cutStream {
			cut++
		}
		o := oracleDecode(t, raw)
		if info.Pos != c || info.Pos != (geom.Chunk{X: int64(o.x), Z: int64(o.z)}) {
			t.Errorf("LoadInfo(%v).Pos = %v, oracle %d,%d", c, info.Pos, o.x, o.z)
		}
		if info.DataVersion != o.dataVersion {
			t.Errorf("LoadInfo(%v).DataVersion = %d, oracle %d", c, info.DataVersion, o.dataVersion)
		}
		if info.Status != o.status || info.Full != o.full() {
			t.Errorf("LoadInfo(%v) = status %q full %v, oracle %q %v", c, info.Status, info.Full, o.status, o.full())
		}
		if !o.full() {
			continue
		}
		if err != nil {
			t.Fatalf("Load(%v): %v", c, err)
		}
		st.full++
		if ch.Blocks != nil {
			t.Fatalf("Load(%v) without Options.Blocks has blocks", c)
		}
		if st.full%16 == 1 {
			if ch, err = wb.Load(ctx, c); err != nil {
				t.Fatalf("Load(%v) with blocks: %v", c, err)
			}
		}
		if ch.Pos != c || int(ch.MinY) != o.minY || int(ch.MaxY) != o.maxY {
			t.Fatalf("Load(%v) = pos %v y %d..%d, oracle y %d..%d", c, ch.Pos, ch.MinY, ch.MaxY, o.minY, o.maxY)
		}
		checkColumns(t, ch, o, &st)
		for _, l := range Landings(ch) {
			x, z := l.Block.Local()
			if l.Block.Chunk() != c {
				t.Fatalf("landing %v outside %v", l, c)
			}
			g, a1, a2 := o.block(x, l.Y, z), o.block(x, l.Y+1, z), o.block(x, l.Y+2, z)
			if !oracleSafeGround(g) || !oracleAir(a1) || !oracleAir(a2) {
				t.Errorf("landing %v y %d: raw blocks %s / %s / %s are not safe", l.Block, l.Y, g, a1, a2)
			}
			st.landings++
			st.landingChunks[c]++
		}
	}
	if cut != f.cutZlib {
		t.Errorf("%d chunks with cut zlib streams, want %d", cut, f.cutZlib)
	}
	if st.full != f.full {
		t.Errorf("%d full chunks, want %d", st.full, f.full)
	}
	if st.hmVsScan != 0 {
		t.Errorf("%d columns whose MOTION_BLOCKING heightmap disagrees with the blocks", st.hmVsScan)
	}
	if st.lightVsScan != 0 {
		t.Errorf("%d columns whose legacy HeightMap disagrees with a light-opacity scan", st.lightVsScan)
	}
	if f.path == voidWorld {
		// The void world's only blocks are a redstone contraption in chunk
		// (0, 0); its flat stone tops are safe by the blocks. Every other
		// column is void and must yield nothing.
		for c, n := range st.landingChunks {
			if c != (geom.Chunk{}) {
				t.Errorf("void world: %d landings in %v", n, c)
			}
		}
	}
	if f.landings != (st.landings > 0) {
		t.Errorf("%d landings found, want some: %v", st.landings, f.landings)
	}
	return st
}

// checkColumns compares the reader's chunk with the oracle, column by
// column, and every block when the chunk has them.
func checkColumns(t *testing.T, ch *world.Chunk, o *oracleChunk, st *fixtureStats) {
	t.Helper()
	lh := o.lv.HeightMap
	for z := range 16 {
		for x := range 16 {
			st.columns++
			col := ch.Column(x, z)
			top := int(col.Top)
			scan := o.scanTop(x, z)
			if hm, ok := o.motionTop(x, z); ok {
				// The reader reports the file's heightmap; the file's
				// heightmap must match its blocks.
				if top != hm {
					t.Fatalf("%v column %d,%d: Top %d, stored MOTION_BLOCKING %d", ch.Pos, x, z, top, hm)
				}
				if hm != scan {
					st.hmVsScan++
					t.Logf("%v column %d,%d: MOTION_BLOCKING %d, blocks scan %d (%s)", ch.Pos, x, z, hm, scan, o.block(x, hm, z))
				}
			} else {
				// No MOTION_BLOCKING (before 1.13, or upgraded 1.13 chunks):
				// the reader scans the blocks itself.
				if top != scan {
					t.Fatalf("%v column %d,%d: Top %d, oracle scan %d", ch.Pos, x, z, top, scan)
				}
				if lh != nil {
					light := int(lh[z*16+x]) - 1
					if o.legacy() && light != o.lightTop(x, z) {
						st.lightVsScan++
					}
					if light != top {
						st.lightVsTop++
					}
				}
			}
			if col.Fluid != (top != world.NoTop && world.IsFluid(o.blockID(x, top, z))) {
				t.Fatalf("%v column %d,%d: Fluid %v on %s", ch.Pos, x, z, col.Fluid, o.block(x, top, z))
			}
			if col.Fluid {
				st.fluid++
			}
			if top == world.NoTop {
				if col.Ground != world.Air || col.Above != [2]world.BlockID{} {
					t.Fatalf("%v column %d,%d: void column with blocks %v", ch.Pos, x, z, col)
				}
			} else {
				for k, id := range []world.BlockID{col.Ground, col.Above[0], col.Above[1]} {
					if want := o.blockID(x, top+k, z); id != want {
						t.Fatalf("%v column %d,%d y %d: block %s, oracle %s", ch.Pos, x, z, top+k, id, o.block(x, top+k, z))
					}
				}
			}
			by := top
			if top == world.NoTop {
				by = o.minY
			}
			if got, want := col.Biome.String(), o.biome(x, by, z); got != want {
				t.Fatalf("%v column %d,%d y %d: biome %s, oracle %s", ch.Pos, x, z, by, got, want)
			}
			if ch.Blocks == nil {
				continue
			}
			for y := o.minY - 1; y <= o.maxY; y++ {
				if got, want := ch.Blocks.Block(x, y, z), o.blockID(x, y, z); got != want {
					t.Fatalf("%v block %d,%d,%d: %s, oracle %s", ch.Pos, x, y, z, got, o.block(x, y, z))
				}
			}
		}
	}
}
