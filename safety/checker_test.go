package safety_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/blockdata"
)

// grid is a BlockReader over explicit columns.
type grid struct {
	minY int
	cols [world.ChunkSize * world.ChunkSize][]world.BlockID // from minY up
}

func (g *grid) Block(x, y, z int) world.BlockID {
	col := g.cols[z*world.ChunkSize+x]
	if i := y - g.minY; i >= 0 && i < len(col) {
		return col[i]
	}
	return world.Air
}

var (
	air        = world.Air
	stone      = world.Block("minecraft:stone")
	grassBlock = world.Block("minecraft:grass_block[snowy=false]")
	lava       = world.Block("minecraft:lava[level=0]")
	shortGrass = world.Block("minecraft:short_grass")
	netherrack = world.Block("minecraft:netherrack")
	bedrock    = world.Block("minecraft:bedrock")
	oakLeaves  = world.Block("minecraft:oak_leaves[distance=1,persistent=false,waterlogged=false]")
	plains     = world.Biome("minecraft:plains")
	desert     = world.Biome("minecraft:desert")
	ocean      = world.Biome("minecraft:deep_ocean")
)

// newChunk returns a chunk of void columns with block data.
func newChunk(pos geom.Chunk, minY, maxY int) (*world.Chunk, *grid) {
	g := &grid{minY: minY}
	c := world.NewChunk(pos, int32(minY), int32(maxY))
	c.Blocks = g
	for i := range c.Columns {
		c.Columns[i] = world.Column{Top: world.NoTop, Biome: plains}
	}
	return c, g
}

// setColumn stores blocks (from minY up) at (x, z) and derives its summary:
// the top is the highest block that is neither air nor short grass (as a
// MOTION_BLOCKING heightmap would have it).
func setColumn(c *world.Chunk, g *grid, x, z int, biome world.BiomeID, blocks ...world.BlockID) {
	g.cols[z*world.ChunkSize+x] = blocks
	col := &c.Columns[z*world.ChunkSize+x]
	*col = world.Column{Top: world.NoTop, Biome: biome}
	for i := len(blocks) - 1; i >= 0; i-- {
		if b := blocks[i]; !b.IsAir() && b != shortGrass {
			y := g.minY + i
			col.Top, col.Ground = int16(y), b
			col.Above = [2]world.BlockID{g.Block(x, y+1, z), g.Block(x, y+2, z)}
			break
		}
	}
}

// surfaceChunk is a chunk whose every column is stone up to 62, then the
// given ground block at 63 and the given headroom blocks above. The
// summary says the ground is the top, whatever lies above it.
func surfaceChunk(ground world.BlockID, above ...world.BlockID) *world.Chunk {
	c, g := newChunk(geom.Chunk{X: 2, Z: -3}, -64, 320)
	col := make([]world.BlockID, 0, 200)
	for y := -64; y < 63; y++ {
		col = append(col, stone)
	}
	col = append(col, ground)
	col = append(col, above...)
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			setColumn(c, g, x, z, plains, col...)
			c.Columns[z*world.ChunkSize+x] = world.Column{Top: 63, Ground: ground, Above: [2]world.BlockID{
				g.Block(x, 64, z), g.Block(x, 65, z)}, Biome: plains}
		}
	}
	return c
}

func mustNew(t testing.TB, r safety.Rules) *safety.Checker {
	t.Helper()
	k, err := safety.New(r)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestDefaultGround(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	tests := []struct {
		ground string
		want   safety.Reason
	}{
		{"minecraft:lava[level=0]", safety.GroundUnsafe},
		{"minecraft:water[level=0]", safety.GroundUnsafe},
		{"minecraft:magma_block", safety.GroundUnsafe},
		{"minecraft:cactus[age=0]", safety.GroundUnsafe},
		{"minecraft:fire[age=0,east=false,north=false,south=false,up=false,west=false]", safety.GroundUnsafe},
		{"minecraft:soul_fire", safety.GroundUnsafe},
		{"minecraft:campfire[facing=north,lit=true,signal_fire=false,waterlogged=false]", safety.GroundUnsafe},
		{"minecraft:powder_snow", safety.GroundUnsafe},
		{"minecraft:oak_leaves[distance=1,persistent=false,waterlogged=false]", safety.GroundUnsafe},
		{"minecraft:cherry_leaves[distance=7,persistent=true,waterlogged=false]", safety.GroundUnsafe},
		{"minecraft:oak_stairs[facing=east,half=bottom,shape=straight,waterlogged=true]", safety.GroundUnsafe},
		{"minecraft:bubble_column[drag=true]", safety.GroundUnsafe},
		{"minecraft:short_grass", safety.GroundNotSolid},
		{"minecraft:grass_block[snowy=false]", safety.Accepted},
		{"minecraft:stone", safety.Accepted},
		{"minecraft:sand", safety.Accepted},
		{"minecraft:campfire[facing=north,lit=false,signal_fire=false,waterlogged=false]", safety.GroundUnsafe},
		{"minecraft:cobweb", safety.GroundUnsafe},
		{"minecraft:nether_portal[axis=x]", safety.GroundUnsafe},
		{"minecraft:barrier[waterlogged=false]", safety.GroundUnsafe},
		{"minecraft:oak_stairs[facing=east,half=bottom,shape=straight,waterlogged=false]", safety.GroundNotSolid},
		{"minecraft:oak_fence[east=false,north=false,south=false,waterlogged=false,west=false]", safety.GroundNotSolid},
		{"minecraft:oak_sign[rotation=0,waterlogged=false]", safety.GroundNotSolid},
		{"minecraft:oak_wall_sign[facing=north,waterlogged=false]", safety.GroundNotSolid},
		{"minecraft:white_banner[rotation=4]", safety.GroundNotSolid},
		{"minecraft:white_wall_banner[facing=east]", safety.GroundNotSolid},
		{"minecraft:stone_pressure_plate[powered=false]", safety.GroundNotSolid},
		{"minecraft:heavy_weighted_pressure_plate[power=0]", safety.GroundNotSolid},
		{"minecraft:moving_piston[facing=up,type=normal]", safety.GroundNotSolid},
		{"minecraft:chest[facing=north,type=single,waterlogged=false]", safety.GroundNotSolid},
		{"minecraft:snow[layers=1]", safety.GroundNotSolid},
		{"minecraft:snow[layers=3]", safety.Accepted},
		{"minecraft:oak_slab[type=bottom,waterlogged=false]", safety.Accepted},
		{"minecraft:oak_slab[type=top,waterlogged=false]", safety.Accepted},
		{"minecraft:oak_slab[type=bottom,waterlogged=true]", safety.GroundUnsafe},
		{"minecraft:white_carpet", safety.Accepted},
		{"minecraft:farmland[moisture=7]", safety.Accepted},
		{"minecraft:dirt_path", safety.Accepted},
		{"minecraft:soul_sand", safety.Accepted},
		{"minecraft:glass", safety.Accepted},
		{"minecraft:block_from_the_future", safety.GroundUnknown}, // unknown: fails closed
		{"mymod:strange_block", safety.GroundUnknown},
		{"minecraft:stone[made_up=true]", safety.GroundUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.ground, func(t *testing.T) {
			c := surfaceChunk(world.Block(tt.ground), air, air)
			r, ok := k.CheckColumn(c, 5, 9)
			if r.Reason != tt.want || ok != (tt.want == safety.Accepted) {
				t.Fatalf("CheckColumn(ground %s) = %v, %v; want %v", tt.ground, r.Reason, ok, tt.want)
			}
			if ok && (r.Y != 64 || r.Ground != world.Block(tt.ground) || r.Biome != plains || r.X != 5 || r.Z != 9) {
				t.Fatalf("accepted result %+v, want y 64 at (5, 9)", r)
			}
			if !ok && r.Cause() != memory.CauseSafety {
				t.Fatalf("cause %v, want safety", r.Cause())
			}
		})
	}
}

func TestDefaultHeadroom(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	b := world.Block
	tests := []struct {
		name   string
		above  []world.BlockID
		accept bool
	}{
		{"air", []world.BlockID{air, air}, true},
		{"cave air", []world.BlockID{world.CaveAir, world.Air}, true},
		{"short grass", []world.BlockID{shortGrass, air}, true},
		{"tall grass", []world.BlockID{b("minecraft:tall_grass[half=lower]"), b("minecraft:tall_grass[half=upper]")}, true},
		{"flower", []world.BlockID{b("minecraft:red_tulip"), air}, true},
		{"water", []world.BlockID{b("minecraft:water[level=0]"), air}, false},
		{"leaves overhead", []world.BlockID{air, oakLeaves}, false},
		{"stone overhead", []world.BlockID{air, stone}, false},
		{"berry bush", []world.BlockID{b("minecraft:sweet_berry_bush[age=3]"), air}, false},
		{"wither rose", []world.BlockID{b("minecraft:wither_rose"), air}, false},
		{"fire", []world.BlockID{b("minecraft:fire[age=1,east=false,north=false,south=false,up=false,west=false]"), air}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := surfaceChunk(grassBlock, tt.above...)
			c.Blocks = nil // the summary alone must do
			r, ok := k.CheckColumn(c, 0, 0)
			if ok != tt.accept {
				t.Fatalf("CheckColumn(headroom %v) = %v, %v; want accepted %v", tt.above, r.Reason, ok, tt.accept)
			}
			if !ok && (r.Reason != safety.NoHeadroom || r.Cause() != memory.CauseSafety) {
				t.Fatalf("rejected for %v (%v), want no headroom (safety)", r.Reason, r.Cause())
			}
		})
	}
}

func TestHeadroomBeyondSummary(t *testing.T) {
	k := mustNew(t, safety.Rules{Headroom: 3})
	c := surfaceChunk(grassBlock, air, air, stone)
	if r, ok := k.CheckColumn(c, 1, 1); ok || r.Reason != safety.NoHeadroom {
		t.Fatalf("stone at the third block above: %v, %v; want no headroom", r.Reason, ok)
	}
	c = surfaceChunk(grassBlock, air, air, air)
	if r, ok := k.CheckColumn(c, 1, 1); !ok {
		t.Fatalf("three air blocks: %v", r.Reason)
	}
	c.Blocks = nil
	if r, ok := k.CheckColumn(c, 1, 1); ok || r.Reason != safety.NoBlockData || r.Cause() != memory.CauseVert {
		t.Fatalf("headroom 3 without block data: %v, %v; want no block data (vert)", r.Reason, ok)
	}
}

func TestUnknownBlocks(t *testing.T) {
	acid := world.Block("mymod:acid[level=2]")
	gas := world.Block("mymod:gas")
	brandNew := world.Block("minecraft:block_from_the_future")
	tests := []struct {
		name  string
		rules safety.Rules
		block world.BlockID
		want  safety.Class
	}{
		{"default fails closed", safety.Rules{}, acid, safety.UnknownUnsafe},
		{"unknown solid", safety.Rules{UnknownBlocks: "solid"}, acid, safety.Ground},
		{"unknown unsafe", safety.Rules{UnknownBlocks: "unsafe"}, acid, safety.UnknownUnsafe},
		{"known namespace", safety.Rules{UnknownBlocks: "unsafe", KnownNamespaces: []string{"mymod"}}, acid, safety.Ground},
		{"solid rule", safety.Rules{UnknownBlocks: "unsafe", Solid: []string{"mymod:acid"}}, acid, safety.Ground},
		{"unsafe rule", safety.Rules{Unsafe: []string{"#unsafe", "mymod:acid[level=1|2]"}}, acid, safety.Unsafe},
		{"unsafe beats solid", safety.Rules{Unsafe: []string{"mymod:*"}, Solid: []string{"mymod:acid"}}, acid, safety.Unsafe},
		{"air-like rule", safety.Rules{AirLike: []string{"#air_like", "mymod:gas"}}, gas, safety.AirLike},
		{"minecraft names the data lacks fail closed", safety.Rules{}, brandNew, safety.UnknownUnsafe},
		{"solid names a future block", safety.Rules{Solid: []string{"block_from_the_future"}}, brandNew, safety.Ground},
		{"air stays air", safety.Rules{AirLike: []string{}}, world.CaveAir, safety.AirLike},
		{"unsafe: [] lets leaves be ground", safety.Rules{Unsafe: []string{}}, oakLeaves, safety.Ground},
		{"unsafe: [] keeps the hazards", safety.Rules{Unsafe: []string{}}, lava, safety.Unsafe},
		{"solid cannot make a hazard ground", safety.Rules{Solid: []string{"magma_block"}}, world.Block("minecraft:magma_block"), safety.Unsafe},
		{"air-like cannot make water free space", safety.Rules{AirLike: []string{"water"}}, world.Block("minecraft:water[level=0]"), safety.Unsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustNew(t, tt.rules)
			if got := k.Classify(tt.block); got != tt.want {
				t.Fatalf("Classify(%v) = %v, want %v", tt.block, got, tt.want)
			}
		})
	}
	// An unknown ground block rejects with its own reason.
	k := mustNew(t, safety.Rules{UnknownBlocks: "unsafe"})
	if r, ok := k.CheckColumn(surfaceChunk(acid, air, air), 3, 3); ok || r.Reason != safety.GroundUnknown || r.Cause() != memory.CauseSafety {
		t.Fatalf("unknown ground: %v, %v", r.Reason, ok)
	}
	// An unknown block overhead is not air-like.
	k = mustNew(t, safety.Rules{})
	if r, ok := k.CheckColumn(surfaceChunk(stone, gas, air), 3, 3); ok || r.Reason != safety.NoHeadroom {
		t.Fatalf("unknown block overhead: %v, %v", r.Reason, ok)
	}
	// An ID never interned (no such block) fails closed.
	if got := k.Classify(world.BlockID(1 << 30)); got != safety.UnknownUnsafe {
		t.Fatalf("Classify(never-interned ID) = %v, want unknown-unsafe", got)
	}
}

func TestYBounds(t *testing.T) {
	c := surfaceChunk(grassBlock, air, air) // lands at y 64
	tests := []struct {
		name     string
		min, max *int
		want     safety.Reason
	}{
		{"unbounded", nil, nil, safety.Accepted},
		{"at max", nil, ptr(64), safety.Accepted},
		{"above max", nil, ptr(63), safety.AboveMaxY},
		{"at min", ptr(64), nil, safety.Accepted},
		{"below min", ptr(65), nil, safety.BelowMinY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustNew(t, safety.Rules{MinY: tt.min, MaxY: tt.max})
			r, _ := k.CheckColumn(c, 0, 0)
			if r.Reason != tt.want {
				t.Fatalf("CheckColumn = %v, want %v", r.Reason, tt.want)
			}
			if r.Reason != safety.Accepted && r.Cause() != memory.CauseVert {
				t.Fatalf("cause %v, want vert", r.Cause())
			}
		})
	}
	// The build height bounds too: feet below MaxY.
	low, g := newChunk(geom.Chunk{}, 0, 64)
	col := make([]world.BlockID, 64)
	for i := range col {
		col[i] = stone
	}
	setColumn(low, g, 0, 0, plains, col...)
	k := mustNew(t, safety.Rules{})
	if r, _ := k.CheckColumn(low, 0, 0); r.Reason != safety.AboveMaxY {
		t.Fatalf("ground at the build limit: %v, want above max y", r.Reason)
	}
	if r, _ := k.CheckColumn(low, 1, 0); r.Reason != safety.Void || r.Cause() != memory.CauseVert {
		t.Fatalf("void column: %v (%v), want void (vert)", r.Reason, r.Cause())
	}
}

func TestBiomes(t *testing.T) {
	mk := func(b world.BiomeID) *world.Chunk {
		c := surfaceChunk(grassBlock, air, air)
		for i := range c.Columns {
			c.Columns[i].Biome = b
		}
		return c
	}
	tests := []struct {
		name  string
		rules safety.BiomeRules
		biome world.BiomeID
		ok    bool
	}{
		{"default allows all", safety.BiomeRules{}, ocean, true},
		{"allowed", safety.BiomeRules{Allow: []string{"plains", "desert"}}, desert, true},
		{"not allowed", safety.BiomeRules{Allow: []string{"plains"}}, desert, false},
		{"denied tag", safety.BiomeRules{Deny: []string{"#ocean"}}, ocean, false},
		{"denied glob", safety.BiomeRules{Deny: []string{"*desert*"}}, desert, false},
		{"deny wins", safety.BiomeRules{Allow: []string{"*"}, Deny: []string{"plains"}}, plains, false},
		{"not denied", safety.BiomeRules{Deny: []string{"#ocean"}}, plains, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustNew(t, safety.Rules{Biomes: tt.rules})
			r, ok := k.CheckColumn(mk(tt.biome), 4, 4)
			if ok != tt.ok || (!ok && (r.Reason != safety.BiomeDenied || r.Cause() != memory.CauseBiome)) {
				t.Fatalf("biome %v: %v, %v (%v); want ok %v", tt.biome, r.Reason, ok, r.Cause(), tt.ok)
			}
		})
	}
}

func TestBorder(t *testing.T) {
	// Chunk 10 spans x 160..175; the border's half size is 165.
	c := surfaceChunk(grassBlock, air, air)
	c.Pos = geom.Chunk{X: 10, Z: 0}
	k := mustNew(t, safety.Rules{Border: &safety.Border{Size: 330}})
	if r, ok := k.CheckColumn(c, 4, 0); !ok {
		t.Fatalf("x 164 inside a border of half size 165: %v", r.Reason)
	}
	r, ok := k.CheckColumn(c, 5, 0)
	if ok || r.Reason != safety.OutsideBorder || r.Cause() != memory.CauseWorldBorder {
		t.Fatalf("x 165 outside: %v, %v (%v)", r.Reason, ok, r.Cause())
	}
	b := safety.Border{CenterX: -100, CenterZ: 50, Size: 10}
	for _, tt := range []struct {
		x, z int64
		in   bool
	}{{-100, 50, true}, {-105, 50, true}, {-106, 50, false}, {-96, 54, true}, {-95, 50, false}, {-100, 55, false}} {
		if got := b.Contains(tt.x, tt.z); got != tt.in {
			t.Errorf("Border%+v.Contains(%d, %d) = %v, want %v", b, tt.x, tt.z, got, tt.in)
		}
	}
}

// netherColumn: bedrock floor at 0, netherrack to 127 with a roof of
// bedrock 123..127, and these pockets of air:
//
//	10..11  a two-block cavity on netherrack (the lowest landing)
//	31..60  a large cavern on netherrack (the highest safe landing below 120)
//	80..85  a cavern over a lava floor at 79 (unsafe)
//	100     a one-block gap (no headroom)
func netherChunk() (*world.Chunk, *grid) {
	c, g := newChunk(geom.Chunk{X: -7, Z: 3}, 0, 256)
	col := make([]world.BlockID, 128)
	for y := range col {
		switch {
		case y == 0 || y >= 123:
			col[y] = bedrock
		case y >= 10 && y <= 11, y >= 31 && y <= 60, y >= 80 && y <= 85, y == 100:
			col[y] = air
		case y == 79:
			col[y] = lava
		default:
			col[y] = netherrack
		}
	}
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			setColumn(c, g, x, z, world.Biome("minecraft:nether_wastes"), col...)
		}
	}
	return c, g
}

func TestVerticalStrategies(t *testing.T) {
	c, _ := netherChunk()
	down, up := safety.Down, safety.Up
	tests := []struct {
		name string
		r    safety.Rules
		y    int
		want safety.Reason
	}{
		{"surface under a max y", safety.Rules{MaxY: ptr(120)}, 0, safety.AboveMaxY},
		{"nether preset", safety.Nether(), 31, safety.Accepted},
		{"linear down from 120", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(120)}}, 31, safety.Accepted},
		{"linear down from 84", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(84)}}, 31, safety.Accepted},
		{"linear down from 40", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(40)}}, 31, safety.Accepted},
		{"linear down from 30", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(30)}}, 10, safety.Accepted},
		{"linear down, roof at 9", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(9)}}, 0, safety.NoSafeY},
		{"linear up", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Direction: up}}, 10, safety.Accepted},
		{"linear up from 12", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Direction: up, Start: ptr(12)}}, 31, safety.Accepted},
		{"linear up min y", safety.Rules{MinY: ptr(61), Vertical: safety.Vertical{Strategy: safety.Linear, Direction: up}}, 124 + 4, safety.Accepted},
		{"linear headroom 5", safety.Rules{Headroom: 5, Vertical: safety.Vertical{Strategy: safety.Linear, Direction: up}}, 31, safety.Accepted},
		{"linear within y bounds only", safety.Rules{MinY: ptr(86), MaxY: ptr(120), Vertical: safety.Vertical{Strategy: safety.Linear}}, 0, safety.NoSafeY},
		{"jump down", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump, Direction: down, Start: ptr(120)}}, 31, safety.Accepted},
		{"jump down step 7", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump, Start: ptr(120), Step: 7}}, 31, safety.Accepted},
		{"jump up", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump, Direction: up, Step: 2}}, 10, safety.Accepted},
		{"jump up misses a thin cavity", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump, Direction: up, Step: 3}}, 31, safety.Accepted},
		{"jump up big step", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump, Direction: up, Step: 20}}, 31, safety.Accepted},
		{"fixed on the floor", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(31)}}, 31, safety.Accepted},
		{"fixed in the air", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(50)}}, 50, safety.GroundNotSolid},
		{"fixed on lava", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(80)}}, 80, safety.GroundUnsafe},
		{"fixed in rock", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(70)}}, 70, safety.NoHeadroom},
		{"fixed in a gap", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(100)}}, 100, safety.NoHeadroom},
		{"fixed out of bounds", safety.Rules{MaxY: ptr(20), Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(31)}}, 31, safety.AboveMaxY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := mustNew(t, tt.r)
			r, ok := k.CheckColumn(c, 6, 11)
			if r.Reason != tt.want || ok != (tt.want == safety.Accepted) {
				t.Fatalf("CheckColumn = %v, %v; want %v", r.Reason, ok, tt.want)
			}
			if ok && r.Y != tt.y {
				t.Fatalf("landing y %d, want %d", r.Y, tt.y)
			}
			if ok && r.Ground != netherrack && r.Ground != bedrock {
				t.Fatalf("ground %v", r.Ground)
			}
			if !ok && tt.want != safety.GroundUnsafe && tt.want != safety.GroundNotSolid && tt.want != safety.NoHeadroom &&
				r.Cause() != memory.CauseVert {
				t.Fatalf("cause %v, want vert", r.Cause())
			}
		})
	}
}

// TestSurfaceOnNetherRoof: the surface strategy on a roofed world lands
// on the roof unless max y forbids it.
func TestSurfaceOnNetherRoof(t *testing.T) {
	c, _ := netherChunk()
	r, ok := mustNew(t, safety.Rules{}).CheckColumn(c, 0, 0)
	if !ok || r.Y != 128 || r.Ground != bedrock {
		t.Fatalf("surface on the roof: %+v, %v; want y 128 on bedrock", r, ok)
	}
}

// TestNetherCeiling: in a chunk with a ceiling no strategy lands at or
// above it, feet or head, and the surface strategy searches down from
// below it, past lava, for the highest floor with headroom.
func TestNetherCeiling(t *testing.T) {
	c, g := netherChunk()
	c.HasCeiling, c.Ceiling = true, 127
	// Column (1, 1): air from 121 up to the roof's top layer at 127 (as a
	// thin roof would leave it), a floor at 120: a landing at 121 would
	// put the head at 122, below the roof; one at 125 and 126 touches it.
	col := slices.Clone(g.cols[1*world.ChunkSize+1])
	for y := 121; y < 127; y++ {
		col[y] = air
	}
	setColumn(c, g, 1, 1, world.Biome("minecraft:nether_wastes"), col...)
	tests := []struct {
		name   string
		r      safety.Rules
		x, z   int
		y      int
		reason safety.Reason
	}{
		{"surface searches down", safety.Rules{}, 6, 11, 31, safety.Accepted},
		{"surface under a thin roof", safety.Rules{}, 1, 1, 121, safety.Accepted},
		{"surface headroom 6 just fits under the roof", safety.Rules{Headroom: 6}, 1, 1, 121, safety.Accepted},
		{"surface headroom 7 does not fit under the roof", safety.Rules{Headroom: 7}, 1, 1, 31, safety.Accepted},
		{"linear down from the top", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear}}, 6, 11, 31, safety.Accepted},
		{"linear down from above the roof", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Start: ptr(200)}}, 1, 1, 121, safety.Accepted},
		{"jump down from the top", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Jump}}, 6, 11, 31, safety.Accepted},
		{"linear up to the roof", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Direction: safety.Up, Start: ptr(100)}}, 1, 1, 121, safety.Accepted},
		{"linear up over the pocket", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Linear, Direction: safety.Up, Start: ptr(122)}}, 1, 1, 0, safety.NoSafeY},
		{"fixed at the roof", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(126)}}, 1, 1, 126, safety.AboveMaxY},
		{"fixed under the roof", safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(121)}}, 1, 1, 121, safety.Accepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := mustNew(t, tt.r).CheckColumn(c, tt.x, tt.z)
			if r.Reason != tt.reason || (ok && r.Y != tt.y) {
				t.Fatalf("CheckColumn = y %d, %v; want y %d, %v", r.Y, r.Reason, tt.y, tt.reason)
			}
			if ok && r.Y+max(tt.r.Headroom, safety.DefaultHeadroom)-1 >= 127 {
				t.Fatalf("landing at %d reaches the ceiling", r.Y)
			}
		})
	}
	// Every column of the chunk, every strategy: nothing at or above it.
	for _, r := range []safety.Rules{{}, safety.Nether(), {Vertical: safety.Vertical{Strategy: safety.Linear}}, {Vertical: safety.Vertical{Strategy: safety.Jump, Step: 9}}} {
		k := mustNew(t, r)
		for i := range world.ChunkSize * world.ChunkSize {
			if res, ok := k.CheckColumn(c, i%16, i/16); ok && res.Y+1 >= 127 {
				t.Fatalf("%+v: column %d lands at %d", r.Vertical, i, res.Y)
			}
		}
		if _, _, y, _, ok := k.Screen(c); !ok || y+1 >= 127 {
			t.Fatalf("%+v: Screen = y %d, %v", r.Vertical, y, ok)
		}
	}
}

func TestVerticalNeedsBlocks(t *testing.T) {
	c, _ := netherChunk()
	c.Blocks = nil
	for _, v := range []safety.Vertical{
		{Strategy: safety.Linear}, {Strategy: safety.Jump}, {Strategy: safety.Fixed, Y: ptr(31)},
	} {
		k := mustNew(t, safety.Rules{Vertical: v})
		r, ok := k.CheckColumn(c, 0, 0)
		if ok || r.Reason != safety.NoBlockData || r.Cause() != memory.CauseVert {
			t.Errorf("%s without block data: %v, %v (%v); want no block data (vert)", v.Strategy, r.Reason, ok, r.Cause())
		}
	}
	// Fixed at the summary's top needs no block data.
	k := mustNew(t, safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(128)}})
	if r, ok := k.CheckColumn(c, 0, 0); !ok {
		t.Errorf("fixed at the top from the summary: %v", r.Reason)
	}
	k = mustNew(t, safety.Rules{Vertical: safety.Vertical{Strategy: safety.Fixed, Y: ptr(200)}})
	if r, ok := k.CheckColumn(c, 0, 0); ok || r.Reason != safety.GroundNotSolid {
		t.Errorf("fixed above the top from the summary: %v, want ground not solid", r.Reason)
	}
}

// TestSearchModel compares the linear strategy with a brute force over
// random columns, and checks that jump finds only safe landings (and the
// same as linear with a step of 1).
func TestSearchModel(t *testing.T) {
	palette := []world.BlockID{air, air, air, stone, stone, lava, shortGrass, oakLeaves}
	rng := rand.New(rand.NewPCG(1, 2))
	const minY, maxY = -16, 48
	for iter := range 3000 {
		c, g := newChunk(geom.Chunk{}, minY, maxY)
		col := make([]world.BlockID, maxY-minY)
		for i := range col {
			col[i] = palette[rng.IntN(len(palette))]
		}
		setColumn(c, g, 0, 0, plains, col...)
		if rng.IntN(3) == 0 {
			c.HasCeiling, c.Ceiling = true, int32(minY+rng.IntN(maxY-minY))
		}
		headroom := 1 + rng.IntN(3)
		start := minY - 3 + rng.IntN(maxY-minY+6)
		step := 1 + rng.IntN(6)
		dir := []string{safety.Down, safety.Up}[rng.IntN(2)]
		base := safety.Rules{Headroom: headroom}
		if rng.IntN(3) == 0 {
			base.MinY, base.MaxY = ptr(minY+rng.IntN(20)), ptr(maxY-rng.IntN(20))
		}
		lin, jump, jump1 := base, base, base
		lin.Vertical = safety.Vertical{Strategy: safety.Linear, Direction: dir, Start: &start}
		jump.Vertical = safety.Vertical{Strategy: safety.Jump, Direction: dir, Start: &start, Step: step}
		jump1.Vertical = safety.Vertical{Strategy: safety.Jump, Direction: dir, Start: &start, Step: 1}
		kl, kj, kj1 := mustNew(t, lin), mustNew(t, jump), mustNew(t, jump1)

		lo, hi := minY+1, maxY-1
		if c.HasCeiling {
			hi = min(hi, int(c.Ceiling)-headroom)
		}
		if base.MinY != nil {
			lo, hi = max(lo, *base.MinY), min(hi, *base.MaxY)
		}
		safe := func(y int) bool {
			if y < lo || y > hi || kl.Classify(g.Block(0, y-1, 0)) != safety.Ground {
				return false
			}
			for i := range headroom {
				if kl.Classify(g.Block(0, y+i, 0)) != safety.AirLike {
					return false
				}
			}
			return true
		}
		want, found := 0, false
		if dir == safety.Down {
			for y := min(start, hi); y >= lo; y-- {
				if safe(y) {
					want, found = y, true
					break
				}
			}
		} else {
			for y := max(start, lo); y <= hi; y++ {
				if safe(y) {
					want, found = y, true
					break
				}
			}
		}
		desc := fmt.Sprintf("iter %d: %s from %d in [%d, %d], headroom %d, ceiling %v %d", iter, dir, start, lo, hi, headroom, c.HasCeiling, c.Ceiling)
		if c.HasCeiling {
			// Surface under a ceiling: the highest safe y below it.
			top, has := 0, false
			for y := hi; y >= lo; y-- {
				if safe(y) {
					top, has = y, true
					break
				}
			}
			rs, oks := mustNew(t, base).CheckColumn(c, 0, 0)
			if oks != has || (oks && rs.Y != top) {
				t.Fatalf("%s: surface = %d, %v (%v); brute force %d, %v", desc, rs.Y, oks, rs.Reason, top, has)
			}
		}
		r, ok := kl.CheckColumn(c, 0, 0)
		if ok != found || (ok && r.Y != want) {
			t.Fatalf("%s: linear = %d, %v (%v); brute force %d, %v", desc, r.Y, ok, r.Reason, want, found)
		}
		if !ok && r.Reason != safety.NoSafeY {
			t.Fatalf("%s: linear rejected with %v", desc, r.Reason)
		}
		r1, ok1 := kj1.CheckColumn(c, 0, 0)
		if ok1 != ok || r1.Y != r.Y {
			t.Fatalf("%s: jump step 1 = %d, %v; linear %d, %v", desc, r1.Y, ok1, r.Y, ok)
		}
		rj, okj := kj.CheckColumn(c, 0, 0)
		if okj {
			if !safe(rj.Y) {
				t.Fatalf("%s: jump step %d landed at unsafe %d", desc, step, rj.Y)
			}
			if dir == safety.Down && (rj.Y > want || rj.Y > start) || dir == safety.Up && (rj.Y < want || rj.Y < start) {
				t.Fatalf("%s: jump step %d landed at %d beyond the first safe y %d", desc, step, rj.Y, want)
			}
		}
	}
}

func TestScreen(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	c := surfaceChunk(lava, air, air)
	safeCol := func(x, z int) {
		c.Columns[z*world.ChunkSize+x].Ground = grassBlock
	}
	safeCol(0, 0)
	safeCol(8, 8)
	safeCol(7, 8)
	seen := map[[2]int]int{}
	for range 600 {
		x, z, y, _, ok := k.Screen(c)
		if !ok || y != 64 {
			t.Fatalf("Screen = (%d, %d, %d, %v); want a safe column at y 64", x, z, y, ok)
		}
		seen[[2]int{x, z}]++
	}
	for _, col := range [][2]int{{0, 0}, {8, 8}, {7, 8}} {
		// Each of the 3 safe columns: 200 expected; 120 is far below
		// (p < 1e-9 for a uniform pick).
		if seen[col] < 120 {
			t.Errorf("Screen picked column %v %d times of 600, want about 200 (uniform): %v", col, seen[col], seen)
		}
	}
	if len(seen) != 3 {
		t.Errorf("Screen picked %d distinct columns, want the 3 safe ones: %v", len(seen), seen)
	}
	// Excluded columns are never picked and count as unique placement.
	for range 50 {
		x, z, _, _, ok := k.ScreenExcept(c, nil, func(x, z int) bool { return x == 0 || z == 8 && x == 8 })
		if !ok || x != 7 || z != 8 {
			t.Fatalf("ScreenExcept = (%d, %d, %v); want (7, 8), the only column not excluded", x, z, ok)
		}
	}

	c = surfaceChunk(lava, air, air)
	if _, _, _, cause, ok := k.Screen(c); ok || cause != memory.CauseSafety {
		t.Fatalf("Screen(all lava) = %v, %v; want safety", cause, ok)
	}
	// 129 denied columns against 127 lava ones: biome wins.
	for i := range 129 {
		c.Columns[i].Biome = ocean
		c.Columns[i].Ground = grassBlock
	}
	kd := mustNew(t, safety.Rules{Biomes: safety.BiomeRules{Deny: []string{"#ocean"}}})
	if _, _, _, cause, ok := kd.Screen(c); ok || cause != memory.CauseBiome {
		t.Fatalf("Screen(mostly denied) = %v, %v; want biome", cause, ok)
	}
	if _, _, _, cause, ok := k.Screen(nil); ok || cause != memory.CauseNullChunk {
		t.Fatalf("Screen(nil) = %v, %v", cause, ok)
	}

	// Summary only with a linear strategy: undecidable, passed unverified.
	nc, _ := netherChunk()
	nc.Blocks = nil
	kn := mustNew(t, safety.Nether())
	if x, z, y, _, ok := kn.Screen(nc); !ok || y != 120 || x < 0 || x > 15 || z < 0 || z > 15 {
		t.Fatalf("Screen(nether summary) = (%d, %d, %d, %v); want a column at y 120, unverified", x, z, y, ok)
	}
	// ... but what the summary can tell still rejects.
	knd := mustNew(t, safety.Rules{Biomes: safety.BiomeRules{Deny: []string{"#nether"}}, Vertical: safety.Nether().Vertical})
	if _, _, _, cause, ok := knd.Screen(nc); ok || cause != memory.CauseBiome {
		t.Fatalf("Screen(denied nether summary) = %v, %v; want biome", cause, ok)
	}
}

// countingSource makes chunks and counts loads, to prove checks load
// nothing.
type countingSource struct {
	loads atomic.Int64
	chunk func(pos geom.Chunk) *world.Chunk
}

func (s *countingSource) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	s.loads.Add(1)
	return s.chunk(pos), nil
}

func newStore(t testing.TB) (*world.Resident, *countingSource) {
	src := &countingSource{chunk: func(pos geom.Chunk) *world.Chunk {
		c := surfaceChunk(grassBlock, air, air)
		c.Pos = pos
		return c
	}}
	s := world.NewResident(src, world.ResidentOptions{})
	t.Cleanup(func() { s.Close() })
	return s, src
}

func TestCheckFailsClosed(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	s, src := newStore(t)
	pos := geom.Chunk{X: 4, Z: -2}
	b := geom.Block{X: 4*16 + 3, Z: -2*16 + 5}

	r, ok := k.Check(nil, 3, 5)
	if ok || r.Reason != safety.NoReservation || r.Cause() != memory.CauseNullChunk {
		t.Fatalf("Check(nil) = %v, %v", r.Reason, ok)
	}
	if r, ok := k.Accepts(nil, b); ok || r.Reason != safety.NoReservation {
		t.Fatalf("Accepts(nil) = %v, %v", r.Reason, ok)
	}

	res, err := s.Reserve(context.Background(), pos)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := k.Accepts(res, b); !ok || r.Y != 64 || r.X != 3 || r.Z != 5 {
		t.Fatalf("Accepts(open reservation) = %+v, %v", r, ok)
	}
	if r, ok := k.Check(res, 3, 5); !ok || r.Y != 64 {
		t.Fatalf("Check(open reservation) = %+v, %v", r, ok)
	}
	if r, ok := k.Accepts(res, geom.Block{X: 0, Z: 0}); ok || r.Reason != safety.OutsideChunk || r.Cause() != memory.CauseNullChunk {
		t.Fatalf("Accepts(block in another chunk) = %v, %v", r.Reason, ok)
	}
	if r, ok := k.Check(res, 16, 0); ok || r.Reason != safety.OutsideChunk {
		t.Fatalf("Check(x 16) = %v, %v", r.Reason, ok)
	}
	if r, ok := k.Check(res, 0, -1); ok || r.Reason != safety.OutsideChunk {
		t.Fatalf("Check(z -1) = %v, %v", r.Reason, ok)
	}
	res.Close()
	if r, ok := k.Accepts(res, b); ok || r.Reason != safety.ReservationClosed || r.Cause() != memory.CauseNullChunk {
		t.Fatalf("Accepts(closed) = %v, %v", r.Reason, ok)
	}
	if r, ok := k.Check(res, 3, 5); ok || r.Reason != safety.ReservationClosed {
		t.Fatalf("Check(closed) = %v, %v", r.Reason, ok)
	}
	if n := src.loads.Load(); n != 1 {
		t.Fatalf("checks caused %d loads, want only the reservation's 1", n)
	}
}

// TestClassifyConcurrent grows the tables from many goroutines while the
// world interns new names.
func TestClassifyConcurrent(t *testing.T) {
	k := mustNew(t, safety.Rules{UnknownBlocks: "solid"})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				leaves := world.Block(fmt.Sprintf("minecraft:test_%d_%d_leaves", w, i))
				mod := world.Block(fmt.Sprintf("concmod:block_%d_%d", w, i))
				biome := world.Biome(fmt.Sprintf("minecraft:test_%d_%d_ocean", w, i))
				if got := k.Classify(leaves); got != safety.Unsafe {
					t.Errorf("Classify(%v) = %v, want unsafe", leaves, got)
					return
				}
				if got := k.Classify(mod); got != safety.Ground {
					t.Errorf("Classify(%v) = %v, want ground", mod, got)
					return
				}
				if !k.BiomeAllowed(biome) || k.Classify(stone) != safety.Ground {
					t.Error("stable answers changed")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestAcceptsAllocs(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	s, _ := newStore(t)
	res, err := s.Reserve(context.Background(), geom.Chunk{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	b := geom.Block{X: 5, Z: 7}
	if allocs := testing.AllocsPerRun(1000, func() { k.Accepts(res, b) }); allocs != 0 {
		t.Fatalf("Accepts allocates %v times, want 0", allocs)
	}
	nc, _ := netherChunk()
	kn := mustNew(t, safety.Nether())
	if allocs := testing.AllocsPerRun(100, func() { kn.CheckColumn(nc, 1, 2) }); allocs != 0 {
		t.Fatalf("a linear search allocates %v times, want 0", allocs)
	}
}

func BenchmarkAccepts(b *testing.B) {
	k := mustNew(b, safety.Rules{})
	s, _ := newStore(b)
	res, err := s.Reserve(context.Background(), geom.Chunk{})
	if err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	pos := geom.Block{X: 5, Z: 7}
	b.Run("surface", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := k.Accepts(res, pos); !ok {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("surface-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k.Accepts(res, pos)
			}
		})
	})
	nc, _ := netherChunk()
	kn := mustNew(b, safety.Nether())
	b.Run("nether-linear", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := kn.CheckColumn(nc, 5, 7); !ok {
				b.Fatal("rejected")
			}
		}
	})
}

func BenchmarkScreen(b *testing.B) {
	k := mustNew(b, safety.Rules{})
	c := surfaceChunk(lava, air, air)
	c.Columns[0].Ground = grassBlock // the last column tried but one
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, ok := k.Screen(c); !ok {
			b.Fatal("rejected")
		}
	}
}

// TestJumpHugeStep: a step far beyond the world's height probes only the
// ends of the range and cannot overflow.
func TestJumpHugeStep(t *testing.T) {
	c, _ := netherChunk()
	for _, dir := range []string{safety.Down, safety.Up} {
		k := mustNew(t, safety.Rules{MinY: ptr(100), Vertical: safety.Vertical{Strategy: safety.Jump, Direction: dir, Step: math.MaxInt}})
		r, ok := k.CheckColumn(c, 0, 0)
		if !ok || r.Y != 128 {
			t.Errorf("jump %s with a huge step: %+v, %v; want the roof at 128", dir, r, ok)
		}
	}
}

// TestCollisionDataByVersion checks that a chunk's collision data is the
// version's that saved it: numeric states of old worlds included.
func TestCollisionDataByVersion(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	old := blockdata.ForDataVersion(1343) // 1.12.2
	tests := []struct {
		data   *blockdata.Table
		ground string
		want   safety.Reason
	}{
		{old, "minecraft:stone[legacy_data=0,legacy_id=1]", safety.Accepted},
		{old, "minecraft:stone_slab[legacy_data=0,legacy_id=44]", safety.Accepted}, // lower slab
		{old, "minecraft:stone_slab[legacy_data=8,legacy_id=44]", safety.Accepted}, // upper slab
		{old, "minecraft:oak_sign[legacy_data=4,legacy_id=63]", safety.GroundNotSolid},
		{old, "minecraft:oak_wall_sign[legacy_data=2,legacy_id=68]", safety.GroundNotSolid},
		{old, "minecraft:stone_pressure_plate[legacy_data=0,legacy_id=70]", safety.GroundNotSolid},
		{old, "minecraft:moving_piston[legacy_data=0,legacy_id=36]", safety.GroundNotSolid},
		{old, "minecraft:white_banner[legacy_data=0,legacy_id=176]", safety.GroundNotSolid},
		{old, "minecraft:snow[layers=1,legacy_data=0,legacy_id=78]", safety.GroundNotSolid},
		{old, "minecraft:lava[legacy_data=0,legacy_id=11]", safety.GroundUnsafe},
		{blockdata.ForDataVersion(0), "minecraft:oak_fence[legacy_data=0,legacy_id=85]", safety.GroundNotSolid}, // 1.8
		{blockdata.ForDataVersion(1631), "minecraft:grass_path", safety.Accepted},                               // 1.13.2
		{blockdata.ForDataVersion(1631), "minecraft:dirt_path", safety.GroundUnknown},                           // named so from 1.17
	}
	for _, tt := range tests {
		t.Run(tt.data.Name()+" "+tt.ground, func(t *testing.T) {
			c := surfaceChunk(world.Block(tt.ground), air, air)
			c.Data = tt.data
			if r, ok := k.CheckColumn(c, 1, 1); r.Reason != tt.want || ok != (tt.want == safety.Accepted) {
				t.Fatalf("CheckColumn(ground %s on %s data) = %v, %v; want %v", tt.ground, tt.data.Name(), r.Reason, ok, tt.want)
			}
		})
	}
}

// TestUnknownCountedAndLoggedOnce checks that unknown names are counted,
// and warned about once per name however often they are seen.
func TestUnknownCountedAndLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	k, err := safety.NewWithOptions(safety.Rules{}, safety.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	goo := world.Block("countmod:goo")
	c := surfaceChunk(goo, air, air)
	for range 3 {
		if _, _, _, cause, ok := k.Screen(c); ok || cause != memory.CauseSafety {
			t.Fatalf("Screen(all unknown) = %v, %v; want safety", cause, ok)
		}
	}
	if n := strings.Count(buf.String(), "countmod:goo"); n != 1 {
		t.Fatalf("the unknown name was logged %d times, want once:\n%s", n, buf.String())
	}
	// Names counts every unknown name the process has interned (other
	// tests intern many): at least this one.
	if u := k.Unknown(); u.Names < 1 || u.Rejections != 3*256 {
		t.Fatalf("Unknown() = %+v, want at least 1 name and %d rejections", u, 3*256)
	}
}

func TestStandY(t *testing.T) {
	k := mustNew(t, safety.Rules{})
	tests := []struct {
		ground string
		want   float64
	}{
		{"minecraft:stone", 64},
		{"minecraft:oak_slab[type=bottom,waterlogged=false]", 63.5},
		{"minecraft:oak_slab[type=top,waterlogged=false]", 64},
		{"minecraft:snow[layers=3]", 63.25}, // collision one layer below the look
		{"minecraft:white_carpet", 63.0625},
		{"minecraft:farmland[moisture=0]", 63.9375},
		{"minecraft:dirt_path", 63.9375},
		{"minecraft:lava[level=0]", 64}, // not ground: y itself
	}
	for _, tt := range tests {
		c := surfaceChunk(world.Block(tt.ground), air, air) // top 63, lands at 64
		if got := k.StandY(c, 2, 64, 3); got != tt.want {
			t.Errorf("StandY(ground %s) = %v, want %v", tt.ground, got, tt.want)
		}
	}
	if got := k.StandY(nil, 0, 70, 0); got != 70 {
		t.Errorf("StandY(nil chunk) = %v, want 70", got)
	}
}
