package procworld_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

func newWorld(tb testing.TB, src terrain.Source, opts procworld.Options) *procworld.World {
	tb.Helper()
	w, err := procworld.New(src, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func load(tb testing.TB, w *procworld.World, pos geom.Chunk) *world.Chunk {
	tb.Helper()
	c, err := w.Load(context.Background(), pos)
	if err != nil {
		tb.Fatalf("Load(%v) = %v", pos, err)
	}
	return c
}

func summary(tb testing.TB, w *procworld.World, pos geom.Chunk) *world.Chunk {
	tb.Helper()
	c, err := w.Summary(context.Background(), pos)
	if err != nil {
		tb.Fatalf("Summary(%v) = %v", pos, err)
	}
	return c
}

// floorY is the expected top for a sample height.
func floorY(e float32) int {
	return min(max(int(math.Floor(float64(e))), procworld.MinY), procworld.MaxY-1)
}

func blocks(names ...string) []world.BlockID {
	out := make([]world.BlockID, len(names))
	for i, n := range names {
		out[i] = world.Block("minecraft:" + n)
	}
	return out
}

func biomes(names ...string) []world.BiomeID {
	out := make([]world.BiomeID, len(names))
	for i, n := range names {
		if !strings.Contains(n, ":") {
			n = "minecraft:" + n
		}
		out[i] = world.Biome(n)
	}
	return out
}

var (
	water      = world.Block("minecraft:water")
	lava       = world.Block("minecraft:lava")
	leaves     = world.Block("minecraft:oak_leaves")
	cactus     = world.Block("minecraft:cactus")
	grass      = world.Block("minecraft:grass_block")
	sand       = world.Block("minecraft:sand")
	stone      = world.Block("minecraft:stone")
	gravel     = world.Block("minecraft:gravel")
	bedrock    = world.Block("minecraft:bedrock")
	deepslate  = world.Block("minecraft:deepslate")
	magma      = world.Block("minecraft:magma_block")
	powderSnow = world.Block("minecraft:powder_snow")
	oakLog     = world.Block("minecraft:oak_log")
)

// coverRules are, per cover, the biomes and ground blocks a column may
// have.
var coverRules = map[terrain.Cover]struct {
	biomes []world.BiomeID
	ground []world.BlockID
}{
	terrain.CoverOcean:     {biomes("ocean", "deep_ocean"), blocks("water")},
	terrain.CoverRiver:     {biomes("river"), blocks("water")},
	terrain.CoverLake:      {biomes("rtp:lake"), blocks("water")},
	terrain.CoverBeach:     {biomes("beach"), blocks("sand", "stone", "gravel")},
	terrain.CoverPlains:    {biomes("plains"), blocks("grass_block", "stone", "gravel")},
	terrain.CoverForest:    {biomes("forest"), blocks("grass_block", "oak_leaves", "stone", "gravel")},
	terrain.CoverDesert:    {biomes("desert"), blocks("sand", "cactus", "stone", "gravel")},
	terrain.CoverMountains: {biomes("stony_peaks"), blocks("stone", "gravel")},
	terrain.CoverSnow:      {biomes("snowy_plains", "snowy_slopes"), blocks("snow_block", "powder_snow", "stone", "gravel")},
	terrain.CoverSwamp:     {biomes("swamp"), blocks("grass_block", "water", "stone", "gravel")},
	terrain.CoverVolcanic:  {biomes("rtp:volcanic"), blocks("basalt", "magma_block")},
	terrain.CoverLava:      {biomes("rtp:volcanic"), blocks("lava")},
}

// TestFaithful checks every column of a chunk of each cover against
// procgen.Column at the same block centre: the top is the elevation's
// floor (the water surface's on water, a tree or cactus above the ground),
// the biome and ground block fit the cover, and steep columns are bare.
func TestFaithful(t *testing.T) {
	ctx := context.Background()
	g := sharedGenerator(t)
	w := newWorld(t, g, procworld.Options{})
	seen := map[world.BlockID]int{}
	var slopes [5]int // dry columns but volcanic ones by slope, 4 and more together
	for _, f := range fixtures(t) {
		c := load(t, w, f.pos)
		o := f.pos.Origin()
		// The chunk's columns and a ring around them, from the generator.
		var ring [18][18]procgen.Column
		for z := range 18 {
			for x := range 18 {
				col, err := g.Column(ctx, o.X+int64(x)-1, o.Z+int64(z)-1)
				if err != nil {
					t.Fatal(err)
				}
				ring[z][x] = col
			}
		}
		if got := ring[9][9].Cover; got != f.cover {
			t.Fatalf("fixture %v: centre cover %v, want %v", f.pos, got, f.cover)
		}
		for z := range world.ChunkSize {
			for x := range world.ChunkSize {
				pc := ring[z+1][x+1]
				col := c.Column(x, z)
				where := func() string {
					return (geom.Block{X: o.X + int64(x), Z: o.Z + int64(z)}).String() + " (" + pc.Cover.String() + ")"
				}
				seen[col.Ground]++
				if fluid := col.Ground == water || col.Ground == lava; col.Fluid != fluid {
					t.Errorf("%s: Fluid %v on %v", where(), col.Fluid, col.Ground)
				}
				rules := coverRules[pc.Cover]
				if !slices.Contains(rules.biomes, col.Biome) {
					t.Errorf("%s: biome %v, want one of %v", where(), col.Biome, rules.biomes)
				}
				if !slices.Contains(rules.ground, col.Ground) {
					t.Errorf("%s: ground %v, want one of %v", where(), col.Ground, rules.ground)
				}
				g := floorY(pc.Elevation)
				switch {
				case pc.Wet():
					if want := floorY(pc.Water); int(col.Top) != want || col.Ground != water {
						t.Errorf("%s: top %d %v, want the water surface %d (water %v, ground %v)", where(), col.Top, col.Ground, want, pc.Water, pc.Elevation)
					}
				case col.Ground == leaves:
					if d := int(col.Top) - g; d < 3 || d > 6 {
						t.Errorf("%s: canopy %d above the ground %d, want 3 to 6", where(), d, g)
					}
					if b := c.Blocks.Block(x, g, z); b != grass {
						t.Errorf("%s: under the canopy the ground %d is %v, want grass", where(), g, b)
					}
				case col.Ground == cactus:
					if d := int(col.Top) - g; d < 1 || d > 3 {
						t.Errorf("%s: cactus %d high, want 1 to 3", where(), d)
					}
					if b := c.Blocks.Block(x, g, z); b != sand {
						t.Errorf("%s: cactus on %v, want sand", where(), b)
					}
				default:
					if int(col.Top) != g {
						t.Errorf("%s: top %d, want floor(%v) = %d", where(), col.Top, pc.Elevation, g)
					}
				}
				// Steep ground is bare stone or gravel, gravel only there.
				switch pc.Cover {
				case terrain.CoverBeach, terrain.CoverPlains, terrain.CoverForest, terrain.CoverDesert,
					terrain.CoverSnow, terrain.CoverSwamp, terrain.CoverMountains:
					slope := 0
					for _, n := range [][2]int{{x, z + 1}, {x + 2, z + 1}, {x + 1, z}, {x + 1, z + 2}} {
						d := floorY(ring[n[1]][n[0]].Elevation) - g
						slope = max(slope, d, -d)
					}
					slopes[min(slope, 4)]++
					bare := col.Ground == stone || col.Ground == gravel
					if pc.Cover != terrain.CoverMountains && bare != (slope >= 3) || col.Ground == gravel && slope < 3 {
						t.Errorf("%s: ground %v with slope %d (bare from 3)", where(), col.Ground, slope)
					}
				}
			}
		}
	}
	for _, b := range []world.BlockID{water, lava, leaves, grass, sand, stone, magma, world.Block("minecraft:basalt"), world.Block("minecraft:snow_block")} {
		if seen[b] == 0 {
			t.Errorf("no %v column in the fixtures", b)
		}
	}
	if slopes[2]+slopes[1] == 0 || slopes[3]+slopes[4] == 0 || seen[gravel] == 0 {
		t.Errorf("dry columns by slope 0, 1, 2, 3, 4+: %v, %d gravel; want some on both sides of the threshold", slopes, seen[gravel])
	}
	t.Logf("grounds: %v; dry columns by slope 0, 1, 2, 3, 4+: %v", seen, slopes)
}

// TestLoadSummaryAgree: Summary has Load's columns and no blocks.
func TestLoadSummaryAgree(t *testing.T) {
	w := newWorld(t, sharedGenerator(t), procworld.Options{})
	for _, f := range fixtures(t) {
		full := load(t, w, f.pos)
		sum := summary(t, w, f.pos)
		if sum.Blocks != nil || full.Blocks == nil {
			t.Fatalf("%v: Summary Blocks %v, Load Blocks %v; want nil and a reader", f.pos, sum.Blocks, full.Blocks)
		}
		if sum.Pos != f.pos || full.Pos != f.pos || sum.MinY != procworld.MinY || sum.MaxY != procworld.MaxY ||
			full.MinY != procworld.MinY || full.MaxY != procworld.MaxY {
			t.Fatalf("%v: Summary %v [%d, %d), Load %v [%d, %d)", f.pos, sum.Pos, sum.MinY, sum.MaxY, full.Pos, full.MinY, full.MaxY)
		}
		if *sum.AllColumns() != *full.AllColumns() {
			t.Fatalf("%v: Summary and Load columns differ", f.pos)
		}
		via, err := world.Summary(context.Background(), w, f.pos)
		if err != nil || via.Blocks != nil || *via.AllColumns() != *full.AllColumns() {
			t.Fatalf("world.Summary(%v) = blocks %v, err %v; want the screener's summary", f.pos, via.Blocks, err)
		}
	}
}

// sameChunk fails unless a and b have equal columns and equal blocks
// everywhere (and a little beyond).
func sameChunk(t *testing.T, what string, a, b *world.Chunk) {
	t.Helper()
	if a.Pos != b.Pos || *a.AllColumns() != *b.AllColumns() {
		t.Fatalf("%s: %v and %v columns differ", what, a.Pos, b.Pos)
	}
	for z := -1; z <= world.ChunkSize; z++ {
		for x := -1; x <= world.ChunkSize; x++ {
			for y := procworld.MinY - 2; y < procworld.MaxY+2; y++ {
				if p, q := a.Blocks.Block(x, y, z), b.Blocks.Block(x, y, z); p != q {
					t.Fatalf("%s: %v block (%d, %d, %d) is %v and %v", what, a.Pos, x, y, z, p, q)
				}
			}
		}
	}
}

// TestDeterministic: the same chunk from a warm World, again, from a fresh
// World over a fresh generator, and from Worlds with other tile sizes is
// identical.
func TestDeterministic(t *testing.T) {
	warm := newWorld(t, sharedGenerator(t), procworld.Options{})
	fresh := newWorld(t, newGenerator(t), procworld.Options{})
	small := newWorld(t, sharedGenerator(t), procworld.Options{TileSize: 16})
	large := newWorld(t, sharedGenerator(t), procworld.Options{TileSize: 32})
	for _, cv := range []terrain.Cover{terrain.CoverForest, terrain.CoverVolcanic, terrain.CoverSwamp, terrain.CoverSnow} {
		pos := fixtureFor(t, cv)
		first := load(t, warm, pos)
		sameChunk(t, "warm again", first, load(t, warm, pos))
		sameChunk(t, "fresh world", first, load(t, fresh, pos))
		sameChunk(t, "tile size 16", first, load(t, small, pos))
		sameChunk(t, "tile size 32", first, load(t, large, pos))
	}
}

// TestDecorationsFollowSeed: the generator's seed reseeds the decorations.
func TestDecorationsFollowSeed(t *testing.T) {
	flat := func(req terrain.Request) *terrain.Tile {
		tl := flatTile(req)
		for i := range tl.Cover {
			tl.Cover[i] = terrain.CoverForest
		}
		return tl
	}
	a := newWorld(t, &fakeSource{tile: flat}, procworld.Options{})
	b := newWorld(t, &seededSource{fakeSource{tile: flat}, 1}, procworld.Options{})
	c := newWorld(t, &seededSource{fakeSource{tile: flat}, 0}, procworld.Options{})
	pos := geom.Chunk{X: 3, Z: -9}
	ca, cb, cc := load(t, a, pos), load(t, b, pos), load(t, c, pos)
	if *ca.AllColumns() != *cc.AllColumns() {
		t.Error("seed 0 and a source without procgen params decorate differently")
	}
	if *ca.AllColumns() == *cb.AllColumns() {
		t.Error("seeds 0 and 1 decorate a forest identically")
	}
}

// seededSource is a fakeSource whose Params are procgen.Params with a seed.
type seededSource struct {
	fakeSource
	seed int64
}

func (s *seededSource) Params() any {
	p := procgen.DefaultParams()
	p.Seed = s.seed
	return p
}

// TestBlocks checks the synthesised blocks against the summaries: the top
// block, the two above, air higher up and outside the chunk, bedrock at
// MinY, solid ground under every top but a canopy, water down to a bed.
func TestBlocks(t *testing.T) {
	w := newWorld(t, sharedGenerator(t), procworld.Options{})
	for _, f := range fixtures(t) {
		c := load(t, w, f.pos)
		br := c.Blocks
		for z := range world.ChunkSize {
			for x := range world.ChunkSize {
				col := c.Column(x, z)
				top := int(col.Top)
				if got := br.Block(x, top, z); got != col.Ground {
					t.Fatalf("%v (%d, %d): block at top %d is %v, summary says %v", f.pos, x, z, top, got, col.Ground)
				}
				for i, a := range col.Above {
					if got := br.Block(x, top+1+i, z); got != a {
						t.Fatalf("%v (%d, %d): block %d above the top is %v, summary says %v", f.pos, x, z, i+1, got, a)
					}
				}
				for y := top + 3; y <= procworld.MaxY; y++ {
					if got := br.Block(x, y, z); got != world.Air {
						t.Fatalf("%v (%d, %d): block %d is %v above the top %d", f.pos, x, z, y, got, top)
					}
				}
				if got := br.Block(x, procworld.MinY-1, z); got != world.Air {
					t.Fatalf("%v (%d, %d): block below MinY is %v", f.pos, x, z, got)
				}
				if got := br.Block(x, procworld.MinY, z); got != bedrock {
					t.Fatalf("%v (%d, %d): block at MinY is %v, want bedrock", f.pos, x, z, got)
				}
				if got := br.Block(x, procworld.MinY+1, z); got != deepslate {
					t.Fatalf("%v (%d, %d): block at MinY+1 is %v, want deepslate", f.pos, x, z, got)
				}
				// Below the top: a canopy's air gap, or water down to a bed,
				// then solid ground to bedrock.
				y := top
				switch col.Ground {
				case leaves:
					for y > procworld.MinY && br.Block(x, y, z) == leaves {
						y--
					}
					for y > procworld.MinY && (br.Block(x, y, z) == world.Air || br.Block(x, y, z) == oakLog) {
						y--
					}
					if got := br.Block(x, y, z); got != grass || top-y < 3 {
						t.Fatalf("%v (%d, %d): canopy at %d over %v at %d", f.pos, x, z, top, got, y)
					}
				case water:
					for y > procworld.MinY && br.Block(x, y, z) == water {
						y--
					}
					if y == top || y == procworld.MinY {
						t.Fatalf("%v (%d, %d): water from %d down to %d", f.pos, x, z, top, y)
					}
				}
				for ; y > procworld.MinY; y-- {
					if b := br.Block(x, y, z); b.IsAir() || b == water {
						t.Fatalf("%v (%d, %d): block %d under the top %d (%v) is %v", f.pos, x, z, y, top, col.Ground, b)
					}
				}
			}
		}
		for _, p := range [][3]int{{-1, 70, 0}, {16, 70, 0}, {0, 70, -1}, {0, 70, 16}} {
			if got := br.Block(p[0], p[1], p[2]); got != world.Air {
				t.Fatalf("%v: block outside the chunk %v is %v, want air", f.pos, p, got)
			}
		}
		if s, ok := br.(world.Sizer); !ok || s.MemSize() <= 0 || c.MemSize() > 32<<10 {
			t.Fatalf("%v: block reader Sizer %v, chunk MemSize %d; want a Sizer and a compact chunk", f.pos, ok, c.MemSize())
		}
	}
}

// TestDefaultSafety runs the real default safety rules over the fixtures:
// water, lava, leaves, magma, powder snow and cactus columns are rejected
// for their ground; plains grass with air-like headroom is accepted.
func TestDefaultSafety(t *testing.T) {
	k, err := safety.New(safety.Default())
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, sharedGenerator(t), procworld.Options{})
	plains := world.Biome("minecraft:plains")
	rejected := map[world.BlockID]int{}
	accepted := 0
	for _, f := range fixtures(t) {
		c := summary(t, w, f.pos)
		for z := range world.ChunkSize {
			for x := range world.ChunkSize {
				col := c.Column(x, z)
				r, ok := k.CheckColumn(c, x, z)
				switch col.Ground {
				case water, lava, leaves, magma, powderSnow, cactus:
					if ok || r.Reason != safety.GroundUnsafe {
						t.Fatalf("%v (%d, %d): %v column: %v, want GroundUnsafe", f.pos, x, z, col.Ground, r.Reason)
					}
					rejected[col.Ground]++
				case grass:
					if col.Biome != plains {
						continue
					}
					headroom := k.Classify(col.Above[0]) == safety.AirLike && k.Classify(col.Above[1]) == safety.AirLike
					if !headroom {
						t.Fatalf("%v (%d, %d): plains grass under %v", f.pos, x, z, col.Above)
					}
					if !ok || r.Y != int(col.Top)+1 || r.Ground != grass {
						t.Fatalf("%v (%d, %d): plains grass: %v at y %d, want accepted at %d", f.pos, x, z, r.Reason, r.Y, col.Top+1)
					}
					accepted++
				}
			}
		}
	}
	for _, b := range []world.BlockID{water, lava, leaves} {
		if rejected[b] == 0 {
			t.Errorf("no %v column checked", b)
		}
	}
	if accepted == 0 {
		t.Error("no plains grass column checked")
	}
	t.Logf("rejected %v; accepted %d plains grass columns", rejected, accepted)
}

// TestVerticalStrategies: a linear search down over Load's blocks lands
// under tree canopies where there is headroom; on a summary it needs
// block data.
func TestVerticalStrategies(t *testing.T) {
	rules := safety.Default()
	rules.Vertical = safety.Vertical{Strategy: safety.Linear}
	k, err := safety.New(rules)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, sharedGenerator(t), procworld.Options{})
	pos := fixtureFor(t, terrain.CoverForest)
	c := load(t, w, pos)
	under := 0
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			col := c.Column(x, z)
			r, ok := k.CheckColumn(c, x, z)
			if col.Ground != leaves {
				continue
			}
			if !ok {
				continue // a trunk, or a canopy too low to stand under
			}
			br := c.Blocks
			if r.Y >= int(col.Top) || br.Block(x, r.Y-1, z) != grass || br.Block(x, r.Y, z) != world.Air || br.Block(x, r.Y+1, z) != world.Air {
				t.Fatalf("%v (%d, %d): linear landing at %d under a canopy at %d: %v below", pos, x, z, r.Y, col.Top, br.Block(x, r.Y-1, z))
			}
			under++
		}
	}
	if under == 0 {
		t.Fatal("linear search landed under no canopy")
	}
	if r, ok := k.CheckColumn(summary(t, w, pos), 8, 8); ok || r.Reason != safety.NoBlockData {
		t.Fatalf("linear search on a summary: %v, want NoBlockData", r.Reason)
	}
}

// TestUnsafeShare measures the share of columns the default safety rules
// reject over a large area, sampling one chunk every 256 blocks. The
// procedural world must give the learning pipeline something to learn: a
// meaningful share of land (not just the sea) is unsafe.
func TestUnsafeShare(t *testing.T) {
	k, err := safety.New(safety.Default())
	if err != nil {
		t.Fatal(err)
	}
	g, err := procgen.NewWithOptions(procgen.DefaultParams(), procgen.Options{CacheCells: 96})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, g, procworld.Options{TileSize: 16})
	half := int64(16) // chunks of 256 blocks each way: a 8192-block square
	if raceBuild {
		half = 8
	}
	var cols, rejected, land, landRejected, chunks, chunksEmpty int
	for cz := -half; cz < half; cz++ {
		for cx := -half; cx < half; cx++ {
			pos := geom.Chunk{X: cx*16 + 7, Z: cz*16 + 7}
			c := summary(t, w, pos)
			for z := range world.ChunkSize {
				for x := range world.ChunkSize {
					col := c.Column(x, z)
					_, ok := k.CheckColumn(c, x, z)
					wet := col.Ground == water && !slices.Contains(biomes("swamp"), col.Biome)
					cols++
					if !wet {
						land++
					}
					if !ok {
						rejected++
						if !wet {
							landRejected++
						}
					}
				}
			}
			chunks++
			if _, _, _, _, ok := k.Screen(c); !ok {
				chunksEmpty++
			}
		}
	}
	share, landShare := float64(rejected)/float64(cols), float64(landRejected)/float64(land)
	t.Logf("%d chunks over %d blocks square: %.1f%% of columns unsafe, %.1f%% of land columns unsafe; %.1f%% of chunks with no safe column",
		chunks, 2*half*256, 100*share, 100*landShare, 100*float64(chunksEmpty)/float64(chunks))
	if share < 0.2 || share > 0.8 {
		t.Errorf("unsafe share %.3f outside [0.2, 0.8]", share)
	}
	if landShare < 0.08 {
		t.Errorf("unsafe share of land %.3f below 0.08", landShare)
	}
}

// TestArchive: a second World on the same archive loads its chunks with
// archive hits and no generation.
func TestArchive(t *testing.T) {
	ctx := context.Background()
	a := newArchive(t, memstore.New(archive.Limits{}))
	first := newWorld(t, a, procworld.Options{})
	var chunks []*world.Chunk
	tiles := map[terrain.Request]bool{}
	for _, f := range fixtures(t)[:4] {
		chunks = append(chunks, load(t, first, f.pos))
		req, err := first.TileRequest(f.pos)
		if err != nil {
			t.Fatal(err)
		}
		tiles[req] = true
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := a.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Generations != int64(len(tiles)) || before.Entries != int64(len(tiles)) {
		t.Fatalf("first world: %d generations, %d entries; want %d", before.Generations, before.Entries, len(tiles))
	}
	second := newWorld(t, a, procworld.Options{})
	for i, f := range fixtures(t)[:4] {
		if c := load(t, second, f.pos); *c.AllColumns() != *chunks[i].AllColumns() {
			t.Fatalf("%v: second world's columns differ", f.pos)
		}
	}
	after, err := a.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Generations != before.Generations || after.Hits-before.Hits != int64(len(tiles)) {
		t.Fatalf("second world: generations %d -> %d, hits %d -> %d; want no generation and %d hits",
			before.Generations, after.Generations, before.Hits, after.Hits, len(tiles))
	}
}

func TestOutside(t *testing.T) {
	src := &fakeSource{}
	w := newWorld(t, src, procworld.Options{})
	for _, pos := range []geom.Chunk{
		{X: procworld.MaxChunk, Z: 0},
		{X: 0, Z: procworld.MaxChunk},
		{X: -procworld.MaxChunk - 1, Z: 0},
		{X: 0, Z: -procworld.MaxChunk - 1},
		{X: math.MaxInt64, Z: math.MinInt64},
	} {
		for name, fn := range map[string]func(context.Context, geom.Chunk) (*world.Chunk, error){"Load": w.Load, "Summary": w.Summary} {
			c, err := fn(context.Background(), pos)
			var pe *world.PosError
			if c != nil || !errors.Is(err, world.ErrOutside) || !errors.As(err, &pe) || pe.Pos != pos {
				t.Errorf("%s(%v) = %v, %v; want world.ErrOutside in a PosError", name, pos, c, err)
			}
		}
		if _, err := w.TileRequest(pos); !errors.Is(err, world.ErrOutside) {
			t.Errorf("TileRequest(%v) = %v, want world.ErrOutside", pos, err)
		}
	}
	if n := src.calls.Load(); n != 0 {
		t.Fatalf("the source was called %d times for chunks outside the world", n)
	}
	// The extreme chunks inside load from the real generator.
	real := newWorld(t, sharedGenerator(t), procworld.Options{TileSize: 16})
	for _, pos := range []geom.Chunk{{X: -procworld.MaxChunk, Z: procworld.MaxChunk - 1}, {X: procworld.MaxChunk - 1, Z: -procworld.MaxChunk}} {
		if _, err := real.Summary(context.Background(), pos); err != nil {
			t.Errorf("Summary(%v) = %v at the edge of the world", pos, err)
		}
	}
}

func TestTileRequest(t *testing.T) {
	for _, size := range []int{16, 64, 1024} {
		w := newWorld(t, &fakeSource{}, procworld.Options{TileSize: size})
		for _, pos := range []geom.Chunk{{X: 0, Z: 0}, {X: -1, Z: 5}, {X: 70, Z: -300}} {
			req, err := w.TileRequest(pos)
			if err != nil {
				t.Fatal(err)
			}
			o, s := pos.Origin(), int64(size)
			if req.Size != int32(size) || req.Resolution != int32(size) || req.Border != 1 ||
				req.OriginX%s != 0 || req.OriginZ%s != 0 ||
				o.X < req.OriginX || o.X+16 > req.OriginX+s || o.Z < req.OriginZ || o.Z+16 > req.OriginZ+s {
				t.Errorf("size %d: TileRequest(%v) = %v, want the aligned tile holding the chunk", size, pos, req)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		opts procworld.Options
		errs []string
	}{
		{"zero", procworld.Options{}, nil},
		{"smallest", procworld.Options{TileSize: 16, CacheTiles: 1}, nil},
		{"largest", procworld.Options{TileSize: 1024}, nil},
		{"tile below chunk", procworld.Options{TileSize: 8}, []string{"tile size 8"}},
		{"tile not a power of two", procworld.Options{TileSize: 48}, []string{"tile size 48"}},
		{"tile too large", procworld.Options{TileSize: 2048}, []string{"tile size 2048"}},
		{"negative tile", procworld.Options{TileSize: -64}, []string{"tile size -64"}},
		{"negative cache", procworld.Options{CacheTiles: -1}, []string{"cache tiles -1"}},
		{"both", procworld.Options{TileSize: 100, CacheTiles: -2}, []string{"tile size 100", "cache tiles -2"}},
	} {
		err := c.opts.Validate()
		if (err == nil) != (len(c.errs) == 0) {
			t.Errorf("%s: Validate() = %v, want errors %v", c.name, err, c.errs)
			continue
		}
		for _, want := range c.errs {
			if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "procworld: ") {
				t.Errorf("%s: Validate() = %q, want it to mention %q", c.name, err, want)
			}
		}
		_, nerr := procworld.New(&fakeSource{}, c.opts)
		if (nerr == nil) != (err == nil) {
			t.Errorf("%s: New error %v, Validate %v", c.name, nerr, err)
		}
	}
	if _, err := procworld.New(nil, procworld.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestWaterWithoutSurface: a tile that marks water by cover alone (a
// generator without SeabedClamp reports the surface as the elevation)
// still gives water columns, over an assumed bed.
func TestWaterWithoutSurface(t *testing.T) {
	src := &fakeSource{tile: func(req terrain.Request) *terrain.Tile {
		tl := flatTile(req)
		for i := range tl.Elevations {
			tl.Elevations[i] = 62.5
		}
		tl.Min, tl.Max = 62.5, 62.5
		for i := range tl.Cover {
			tl.Cover[i] = []terrain.Cover{terrain.CoverOcean, terrain.CoverRiver, terrain.CoverLake}[i%3]
		}
		return tl
	}}
	c := load(t, newWorld(t, src, procworld.Options{TileSize: 16}), geom.Chunk{X: 1, Z: 1})
	want := biomes("ocean", "river", "rtp:lake")
	for i, col := range c.AllColumns() {
		if col.Top != 62 || col.Ground != water || !col.Fluid || col.Biome != want[i%3] || col.Above != [2]world.BlockID{} {
			t.Fatalf("column %d: %+v, want water at 62 in %v", i, col, want[i%3])
		}
		x, z := i%16, i/16
		var bed int
		for bed = 62; c.Blocks.Block(x, bed, z) == water; bed-- {
		}
		if bed >= 62 || bed < 55 || c.Blocks.Block(x, bed, z).IsAir() {
			t.Fatalf("column %d: water down to %d over %v", i, bed+1, c.Blocks.Block(x, bed, z))
		}
	}
}

// TestSteepSoftGround: soft covers on a steep ramp are bare rock; on a
// gentle one they keep their cover.
func TestSteepSoftGround(t *testing.T) {
	ramp := func(step float32, cv terrain.Cover) *fakeSource {
		return &fakeSource{tile: func(req terrain.Request) *terrain.Tile {
			tl := flatTile(req)
			side := req.Side()
			tl.Min, tl.Max = float32(math.Inf(1)), float32(math.Inf(-1))
			for k := range tl.Elevations {
				tl.Elevations[k] = 64.5 + step*float32(k%side)
			}
			for j := range int(req.Resolution) {
				for i := range int(req.Resolution) {
					e := tl.Elevations[(j+1)*side+i+1]
					tl.Min, tl.Max = min(tl.Min, e), max(tl.Max, e)
				}
			}
			for k := range tl.Cover {
				tl.Cover[k] = cv
			}
			return tl
		}}
	}
	for _, cv := range []terrain.Cover{terrain.CoverPlains, terrain.CoverBeach, terrain.CoverSnow, terrain.CoverDesert} {
		steep := load(t, newWorld(t, ramp(3, cv), procworld.Options{TileSize: 16}), geom.Chunk{})
		gentle := load(t, newWorld(t, ramp(1, cv), procworld.Options{TileSize: 16}), geom.Chunk{})
		var gravels int
		steepCols, gentleCols := steep.AllColumns(), gentle.AllColumns()
		for i := range steepCols {
			if g := steepCols[i].Ground; g != stone && g != gravel {
				t.Fatalf("%v on a 3-block ramp: column %d is %v, want stone or gravel", cv, i, g)
			} else if g == gravel {
				gravels++
			}
			if g := gentleCols[i].Ground; g == stone || g == gravel {
				t.Fatalf("%v on a 1-block ramp: column %d is %v", cv, i, g)
			}
		}
		if gravels == 0 || gravels == len(steepCols) {
			t.Fatalf("%v on a 3-block ramp: %d gravel columns of 256, want a mix", cv, gravels)
		}
	}
}

// TestBlocksInAnyOrder reads every block of every fixture chunk three
// ways and wants the same blocks: each column from a chunk loaded for it
// alone, y by y across all columns (every read a different
// column from the last), and from goroutines that each read a share of the
// columns in that interleaved order from one shared chunk at once. A
// block that came from the wrong column's derivation, or a race between
// readers, fails it (run it with -race).
func TestBlocksInAnyOrder(t *testing.T) {
	w := newWorld(t, sharedGenerator(t), procworld.Options{})
	const height = procworld.MaxY - procworld.MinY
	for _, f := range fixtures(t) {
		var want [world.ChunkSize * world.ChunkSize][height]world.BlockID
		for i := range want {
			byColumn := load(t, w, f.pos).Blocks // a chunk that read no other column
			for y := range height {
				want[i][y] = byColumn.Block(i%world.ChunkSize, procworld.MinY+y, i/world.ChunkSize)
			}
		}
		// Across the columns x outer, z inner, so that one read after
		// another changes only z (the readers below change x).
		across := load(t, w, f.pos).Blocks
		for y := range height {
			for j := range want {
				x, z := j/world.ChunkSize, j%world.ChunkSize
				i := z*world.ChunkSize + x
				if got := across.Block(x, procworld.MinY+y, z); got != want[i][y] {
					t.Fatalf("%v column %d, y %d: %v read across columns, %v read column by column", f.pos, i, procworld.MinY+y, got, want[i][y])
				}
			}
		}
		shared := load(t, w, f.pos).Blocks
		const readers = 4
		var wg sync.WaitGroup
		errs := make([]string, readers)
		for r := range readers {
			wg.Go(func() {
				for y := range height {
					for i := r; i < len(want); i += readers {
						if got := shared.Block(i%world.ChunkSize, procworld.MinY+y, i/world.ChunkSize); got != want[i][y] {
							errs[r] = fmt.Sprintf("column %d, y %d: %v read concurrently, %v alone", i, procworld.MinY+y, got, want[i][y])
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for r, e := range errs {
			if e != "" {
				t.Errorf("%v reader %d: %s", f.pos, r, e)
			}
		}
	}
}
