package anviltest

import (
	"fmt"

	"github.com/rtpengine/rtp/world/anvil"
)

// Case is one kind of hard column of the builds save: what it holds and
// where one instance of it is. It is a plain value.
type Case struct {
	// Name says what the column holds ("oak_sign", "lava_pool", ...).
	Name string
	// State is the block that makes the case (the sign, the lava, ...).
	State string
	// X, Z is one block column holding the case.
	X, Z int64
	// Y is the block y of State in that column.
	Y int
}

// Scene describes a save written by one of the Write*Save functions. It
// is a plain value.
type Scene struct {
	// MinChunkX, MinChunkZ, MaxChunkX, MaxChunkZ bound the chunks written
	// (inclusive).
	MinChunkX, MinChunkZ, MaxChunkX, MaxChunkZ int
	// Cases are the hard columns, one entry per kind (BuildsSave only).
	Cases []Case
}

// Ground level of the builds save: grass at GroundY, hard cases from
// GroundY+1 (or in place of the grass).
const GroundY = 63

// hardCase places one hard column at local (x, z) of c; it returns the
// state making the case and its y.
type hardCase struct {
	name  string
	state string
	y     int // y of state; GroundY+1 unless set
	place func(c *Chunk, x, z int) error
}

func onGrass(name, state string) hardCase {
	return hardCase{name: name, state: state, y: GroundY + 1, place: func(c *Chunk, x, z int) error {
		return c.Set(x, GroundY+1, z, state)
	}}
}

func inGround(name, state string) hardCase {
	return hardCase{name: name, state: state, y: GroundY, place: func(c *Chunk, x, z int) error {
		return c.Set(x, GroundY, z, state)
	}}
}

// onWall hangs state at GroundY+1 on a stone pillar in the column south
// of it (z+1, two blocks high); the state must face north.
func onWall(name, state string) hardCase {
	return hardCase{name: name, state: state, y: GroundY + 1, place: func(c *Chunk, x, z int) error {
		if z < 15 {
			if err := c.Fill(x, GroundY+1, z+1, x, GroundY+2, z+1, "minecraft:stone"); err != nil {
				return err
			}
		}
		return c.Set(x, GroundY+1, z, state)
	}}
}

// hardCases are the columns the builds save is made to trap a landing
// with: blocks one falls through, blocks that hurt, fluids, partial
// shapes, and a few that are fine to stand on or in.
var hardCases = func() []hardCase {
	cs := []hardCase{
		onGrass("oak_sign", "minecraft:oak_sign[rotation=0,waterlogged=false]"),
		onWall("oak_wall_sign", "minecraft:oak_wall_sign[facing=north,waterlogged=false]"),
		onGrass("oak_hanging_sign", "minecraft:oak_hanging_sign[attached=false,rotation=0,waterlogged=false]"),
		onGrass("white_banner", "minecraft:white_banner[rotation=0]"),
		onWall("white_wall_banner", "minecraft:white_wall_banner[facing=north]"),
		onGrass("stone_pressure_plate", "minecraft:stone_pressure_plate[powered=false]"),
		onGrass("oak_pressure_plate", "minecraft:oak_pressure_plate[powered=false]"),
		onGrass("light_weighted_pressure_plate", "minecraft:light_weighted_pressure_plate[power=0]"),
		onGrass("heavy_weighted_pressure_plate", "minecraft:heavy_weighted_pressure_plate[power=0]"),
		onGrass("moving_piston", "minecraft:moving_piston[facing=up,type=normal]"),
		onGrass("piston_head", "minecraft:piston_head[facing=north,short=false,type=normal]"),
		onGrass("white_carpet", "minecraft:white_carpet"),
		onGrass("bottom_slab", "minecraft:stone_slab[type=bottom,waterlogged=false]"),
		onGrass("top_slab", "minecraft:stone_slab[type=top,waterlogged=false]"),
		onGrass("oak_fence", "minecraft:oak_fence[east=false,north=false,south=false,waterlogged=false,west=false]"),
		onGrass("chest", "minecraft:chest[facing=north,type=single,waterlogged=false]"),
		onGrass("torch", "minecraft:torch"),
		inGround("lava_pool", "minecraft:lava[level=0]"),
		inGround("water_pool", "minecraft:water[level=0]"),
		inGround("magma_block", "minecraft:magma_block"),
		onGrass("fire", "minecraft:fire[age=0,east=false,north=false,south=false,up=false,west=false]"),
		onGrass("campfire", "minecraft:campfire[facing=north,lit=true,signal_fire=false,waterlogged=false]"),
		onGrass("soul_campfire", "minecraft:soul_campfire[facing=north,lit=true,signal_fire=false,waterlogged=false]"),
		onGrass("cactus", "minecraft:cactus[age=0]"),
		onGrass("sweet_berry_bush", "minecraft:sweet_berry_bush[age=3]"),
		inGround("powder_snow", "minecraft:powder_snow"),
		onGrass("pointed_dripstone", "minecraft:pointed_dripstone[thickness=tip,vertical_direction=up,waterlogged=false]"),
		onGrass("wither_rose", "minecraft:wither_rose"),
		onGrass("cobweb", "minecraft:cobweb"),
		onGrass("waterlogged_stairs", "minecraft:oak_stairs[facing=north,half=bottom,shape=straight,waterlogged=true]"),
		onGrass("waterlogged_slab", "minecraft:stone_slab[type=bottom,waterlogged=true]"),
		onGrass("waterlogged_top_slab", "minecraft:stone_slab[type=top,waterlogged=true]"),
		{name: "nether_portal", state: "minecraft:nether_portal[axis=x]", y: GroundY + 1, place: func(c *Chunk, x, z int) error {
			return c.Fill(x, GroundY+1, z, x, GroundY+3, z, "minecraft:nether_portal[axis=x]")
		}},
		{name: "deep_water", state: "minecraft:water[level=0]", y: GroundY, place: func(c *Chunk, x, z int) error {
			return c.Fill(x, GroundY-3, z, x, GroundY, z, "minecraft:water[level=0]")
		}},
		{name: "sign_on_pillar", state: "minecraft:oak_sign[rotation=8,waterlogged=false]", y: GroundY + 3, place: func(c *Chunk, x, z int) error {
			if err := c.Fill(x, GroundY+1, z, x, GroundY+2, z, "minecraft:cobblestone"); err != nil {
				return err
			}
			return c.Set(x, GroundY+3, z, "minecraft:oak_sign[rotation=8,waterlogged=false]")
		}},
	}
	for layers := 1; layers <= 8; layers++ {
		cs = append(cs, onGrass(fmt.Sprintf("snow_%d", layers), fmt.Sprintf("minecraft:snow[layers=%d]", layers)))
	}
	return cs
}()

// HardCaseNames returns the names of the builds save's hard cases.
func HardCaseNames() []string {
	out := make([]string, len(hardCases))
	for i, hc := range hardCases {
		out[i] = hc.name
	}
	return out
}

// WriteBuildsSave writes an overworld save of 8 x 8 chunks (-4..3 on both
// axes, so four region files) into dir: stone up to y 62 and grass at
// GroundY, with every other column (a checkerboard) a hard case, cycling
// through them so that each kind is in every chunk's rows; the other
// columns are ordinary grass. It writes a level.dat spawning at 0, 64, 0.
func WriteBuildsSave(dir string) (Scene, error) {
	sc := Scene{MinChunkX: -4, MinChunkZ: -4, MaxChunkX: 3, MaxChunkZ: 3}
	seen := map[string]bool{}
	var chunks []*Chunk
	n := 0
	for cz := sc.MinChunkZ; cz <= sc.MaxChunkZ; cz++ {
		for cx := sc.MinChunkX; cx <= sc.MaxChunkX; cx++ {
			c := NewChunk(cx, cz, anvil.Overworld)
			if err := c.Fill(0, OverworldMinY, 0, 15, OverworldMinY, 15, "minecraft:bedrock"); err != nil {
				return sc, err
			}
			if err := c.Fill(0, OverworldMinY+1, 0, 15, GroundY-1, 15, "minecraft:stone"); err != nil {
				return sc, err
			}
			if err := c.Fill(0, GroundY, 0, 15, GroundY, 15, "minecraft:grass_block[snowy=false]"); err != nil {
				return sc, err
			}
			for z := range 16 {
				for x := range 16 {
					if (x+z)%2 != 0 || z == 15 {
						continue
					}
					hc := hardCases[n%len(hardCases)]
					n++
					if err := hc.place(c, x, z); err != nil {
						return sc, fmt.Errorf("anviltest: %s: %w", hc.name, err)
					}
					if !seen[hc.name] {
						seen[hc.name] = true
						sc.Cases = append(sc.Cases, Case{Name: hc.name, State: hc.state, X: int64(cx*16 + x), Z: int64(cz*16 + z), Y: hc.y})
					}
				}
			}
			chunks = append(chunks, c)
		}
	}
	return sc, WriteSave(dir, Save{Level: &Level{Name: "builds", SpawnY: GroundY + 1}, Chunks: chunks})
}

// noise is a small deterministic hash of a column to 0..n-1.
func noise(x, z, salt, n int) int {
	h := uint32(x)*0x9e3779b1 ^ uint32(z)*0x85ebca77 ^ uint32(salt)*0xc2b2ae3d
	h ^= h >> 15
	h *= 0x2c1b3c6d
	h ^= h >> 12
	return int(h % uint32(n))
}

// Nether layout of WriteNetherSave.
const (
	NetherLavaY    = 31  // the lava sea fills air up to this y
	NetherRoofLowY = 123 // the bedrock roof spans NetherRoofLowY..127
)

// WriteNetherSave writes a nether save of 4 x 4 chunks (-2..1) into dir
// (DIM-1/region): the chunks of NetherChunks.
func WriteNetherSave(dir string) (Scene, error) {
	sc, chunks, err := NetherChunks()
	if err != nil {
		return sc, err
	}
	return sc, WriteSave(dir, Save{Level: &Level{Name: "nether"}, Chunks: chunks})
}

// NetherChunks builds the nether of WriteNetherSave, 4 x 4 chunks (-2..1):
// bedrock at y 0 and from NetherRoofLowY to 127, netherrack terrain whose
// height varies by column (some below the lava sea, which fills air up to
// NetherLavaY), open caves above it with fire and magma here and there,
// and a netherrack ceiling under the roof. In a few patches of 8 x 8
// columns the roof is one layer thin (127) over a pocket of air from 121
// up, its floor at 120: a landing there has its head just under the roof.
// Above 127 is air, so every column's MOTION_BLOCKING top is the roof.
func NetherChunks() (Scene, []*Chunk, error) {
	sc := Scene{MinChunkX: -2, MinChunkZ: -2, MaxChunkX: 1, MaxChunkZ: 1}
	var chunks []*Chunk
	for cz := sc.MinChunkZ; cz <= sc.MaxChunkZ; cz++ {
		for cx := sc.MinChunkX; cx <= sc.MaxChunkX; cx++ {
			c := NewChunk(cx, cz, anvil.Nether)
			for z := range 16 {
				for x := range 16 {
					wx, wz := cx*16+x, cz*16+z
					// Terrain: plateaus by 4x4 cells, some under the sea.
					floor := 20 + noise(wx>>2, wz>>2, 1, 40)
					ceil := 95 + noise(wx>>3, wz>>3, 2, 20)
					steps := []struct {
						y0, y1 int
						st     string
					}{
						{0, 0, "minecraft:bedrock"},
						{1, floor, "minecraft:netherrack"},
						{ceil, NetherRoofLowY - 1, "minecraft:netherrack"},
						{NetherRoofLowY, 127, "minecraft:bedrock"},
					}
					if noise(wx>>3, wz>>3, 4, 5) == 0 {
						// A thin roof over a pocket under it.
						steps[2] = struct {
							y0, y1 int
							st     string
						}{min(ceil, 120), 120, "minecraft:netherrack"}
						steps[3].y0 = 127
					}
					for _, s := range steps {
						if err := c.Fill(x, s.y0, z, x, s.y1, z, s.st); err != nil {
							return sc, nil, err
						}
					}
					if floor < NetherLavaY {
						if err := c.Fill(x, floor+1, z, x, NetherLavaY, z, "minecraft:lava[level=0]"); err != nil {
							return sc, nil, err
						}
					} else {
						switch noise(wx, wz, 3, 16) {
						case 0:
							err := c.Set(x, floor+1, z, "minecraft:fire[age=0,east=false,north=false,south=false,up=false,west=false]")
							if err != nil {
								return sc, nil, err
							}
						case 1:
							if err := c.Set(x, floor, z, "minecraft:magma_block"); err != nil {
								return sc, nil, err
							}
						case 2:
							if err := c.Set(x, floor, z, "minecraft:soul_sand"); err != nil {
								return sc, nil, err
							}
						case 3:
							if err := c.Set(x, floor+1, z, "minecraft:soul_fire"); err != nil {
								return sc, nil, err
							}
						}
					}
				}
			}
			chunks = append(chunks, c)
		}
	}
	return sc, chunks, nil
}

// WriteEndSave writes an end save of 8 x 8 chunks (-4..3) into dir
// (DIM1/region): the chunks of EndChunks.
func WriteEndSave(dir string) (Scene, error) {
	sc, chunks, err := EndChunks()
	if err != nil {
		return sc, err
	}
	return sc, WriteSave(dir, Save{Level: &Level{Name: "end"}, Chunks: chunks})
}

// EndChunks builds the end of WriteEndSave, 8 x 8 chunks (-4..3): void,
// except a central island of end_stone (radius 40 blocks around 0, 0, top
// at y 60, floating above the void with air below it) and a few small
// islands; most columns hold no block at all.
func EndChunks() (Scene, []*Chunk, error) {
	sc := Scene{MinChunkX: -4, MinChunkZ: -4, MaxChunkX: 3, MaxChunkZ: 3}
	type island struct{ x, z, r, top int }
	islands := []island{{0, 0, 40, 60}, {-50, 45, 6, 70}, {48, -52, 5, 55}}
	var chunks []*Chunk
	for cz := sc.MinChunkZ; cz <= sc.MaxChunkZ; cz++ {
		for cx := sc.MinChunkX; cx <= sc.MaxChunkX; cx++ {
			c := NewChunk(cx, cz, anvil.End)
			for z := range 16 {
				for x := range 16 {
					wx, wz := cx*16+x, cz*16+z
					for _, is := range islands {
						dx, dz := wx-is.x, wz-is.z
						d2 := dx*dx + dz*dz
						if d2 > is.r*is.r {
							continue
						}
						// Thicker in the middle, at least 2 blocks.
						depth := 2 + (is.r*is.r-d2)*20/(is.r*is.r)
						if err := c.Fill(x, is.top-depth, z, x, is.top, z, "minecraft:end_stone"); err != nil {
							return sc, nil, err
						}
					}
				}
			}
			chunks = append(chunks, c)
		}
	}
	return sc, chunks, nil
}
