package anvil

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// TestBiomePalettesEveryWidth decodes 1.18 biome palettes of every size
// from 1 to 64 entries (0 to 6 bits), checking every 4x4x4 cell of one
// section through the column tops.
func TestBiomePalettesEveryWidth(t *testing.T) {
	// Tops vary in y so each column samples a different vertical cell:
	// column (x, z) tops out at y 16 + (x&3)*4 + (z&3).
	top := func(x, z int) int { return 16 + (x&3)*4 + z&3 }
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 64; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("test:biome_%d_%d", n, i)
		}
		idx := make([]int, 64)
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		if n > 1 {
			idx[0], idx[63] = n-1, n-1 // the widest value appears
		}
		secs := flatSections(-4, 2, top, func(sy int) ([]string, []int) {
			if sy == 1 {
				return names, idx
			}
			return []string{"minecraft:plains"}, nil
		})
		ch, info, err := Decode(modernChunk(t, 3, -7, -4, "minecraft:full", heightsOf(-64, top), secs...), DecodeOptions{})
		if err != nil {
			t.Fatalf("palette of %d: %v", n, err)
		}
		if info.Pos != (geom.Chunk{X: 3, Z: -7}) || !info.Full || ch.MinY != -64 || ch.MaxY != 48 {
			t.Fatalf("palette of %d: info %+v, y %d..%d", n, info, ch.MinY, ch.MaxY)
		}
		for z := range 16 {
			for x := range 16 {
				col := ch.Column(x, z)
				y := top(x, z)
				want := names[idx[((y&15)>>2)*16+(z>>2)*4+x>>2]]
				if int(col.Top) != y || col.Ground.String() != "minecraft:stone" || col.Above != [2]world.BlockID{} {
					t.Fatalf("palette of %d: column %d,%d = %+v, want top %d", n, x, z, col, y)
				}
				if col.Biome.String() != want {
					t.Fatalf("palette of %d (%d bits): column %d,%d biome %s, want %s", n, width(n, 1), x, z, col.Biome, want)
				}
			}
		}
	}
}

func TestDecodeNegativeYAndBlocks(t *testing.T) {
	top := func(x, z int) int { return -60 + x + z } // tops from -60 to -30
	secs := flatSections(-4, 19, top, nil)
	ch, _, err := Decode(modernChunk(t, 0, 0, -4, "minecraft:full", heightsOf(-64, top), secs...), DecodeOptions{Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if ch.MinY != -64 || ch.MaxY != 320 {
		t.Fatalf("y range %d..%d, want -64..320", ch.MinY, ch.MaxY)
	}
	stone := world.Block("minecraft:stone")
	for z := range 16 {
		for x := range 16 {
			if got := int(ch.Column(x, z).Top); got != top(x, z) {
				t.Fatalf("column %d,%d top %d, want %d", x, z, got, top(x, z))
			}
			for y := -70; y < 330; y++ {
				want := world.Air
				if y >= -64 && y <= top(x, z) {
					want = stone
				}
				if got := ch.Blocks.Block(x, y, z); got != want {
					t.Fatalf("block %d,%d,%d = %s, want %s", x, y, z, got, want)
				}
			}
		}
	}
	if ch.Blocks.Block(-1, 0, 0) != world.Air || ch.Blocks.Block(0, 0, 16) != world.Air {
		t.Error("blocks outside the chunk are not air")
	}
}

func TestDecodeHeightmapFallbacks(t *testing.T) {
	top := func(x, z int) int { return 40 + x%3 }
	secs := flatSections(-4, 5, top, nil)
	for _, tc := range []struct {
		name    string
		heights []int
	}{
		{"no heightmap", nil},
		{"stale heightmap above air", heightsOf(-64, func(x, z int) int { return top(x, z) + 5 })},
		{"heightmap out of range", func() []int { h := heightsOf(-64, top); h[7] = 500; return h }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, _, err := Decode(modernChunk(t, 1, 1, -4, "full", tc.heights, secs...), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for z := range 16 {
				for x := range 16 {
					if got := int(ch.Column(x, z).Top); got != top(x, z) {
						t.Fatalf("column %d,%d top %d, want %d from the blocks", x, z, got, top(x, z))
					}
				}
			}
		})
	}
}

func TestDecodeNamesAndStatus(t *testing.T) {
	weird := state("mymod:glowing_thing", map[string]string{"zeta": "1", "alpha": "on", "mid": "x"})
	plant := state("minecraft:short_grass", nil)
	s := modernSection{y: 0, palette: []map[string]any{state("minecraft:air", nil), weird, plant}, blocks: make([]int, 4096), biomes: []string{"plains"}}
	for z := range 16 {
		for x := range 16 {
			s.blocks[5<<8|z<<4|x] = 1 // y 5: the unknown block
			s.blocks[6<<8|z<<4|x] = 2 // y 6: grass on it
		}
	}
	heights := heightsOf(0, func(int, int) int { return 5 })
	ch, _, err := Decode(modernChunk(t, 0, 0, 0, "minecraft:full", heights, s), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	col := ch.Column(4, 9)
	if col.Top != 5 || col.Ground.String() != "mymod:glowing_thing[alpha=on,mid=x,zeta=1]" ||
		col.Above[0].String() != "minecraft:short_grass" || col.Above[1] != world.Air || col.Biome.String() != "minecraft:plains" {
		t.Errorf("column = top %d ground %s above %s %s biome %s", col.Top, col.Ground, col.Above[0], col.Above[1], col.Biome)
	}
	for _, status := range []string{"minecraft:structure_starts", "minecraft:features", "carved", "empty", "mobs_spawned"} {
		_, info, err := Decode(modernChunk(t, 0, 0, 0, status, heights, s), DecodeOptions{})
		if !errors.Is(err, world.ErrUngenerated) || info.Full || info.Status != status {
			t.Errorf("status %q: info %+v, err %v; want ErrUngenerated", status, info, err)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	good := modernSection{y: 0, palette: []map[string]any{state("minecraft:air", nil), state("minecraft:stone", nil)}, blocks: make([]int, 4096)}
	good.blocks[0] = 1
	heights := heightsOf(0, func(int, int) int { return 0 })
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"palette index past the palette", func() []byte {
			s := good
			s.blocks = make([]int, 4096)
			s.blocks[0] = 7
			return modernChunk(t, 0, 0, 0, "full", heights, s)
		}()},
		{"block data of the wrong length", marshal(t, map[string]any{"DataVersion": int32(3955), "Status": "full", "xPos": int32(0), "zPos": int32(0), "yPos": int32(0),
			"Heightmaps": map[string]any{"MOTION_BLOCKING": pack(heights, 9, false)},
			"sections":   []map[string]any{{"Y": int8(0), "block_states": map[string]any{"palette": good.palette, "data": make([]int64, 5)}}}})},
		{"no position", marshal(t, map[string]any{"DataVersion": int32(3955), "Status": "full"})},
		{"yPos out of range", modernChunk(t, 0, 0, 1000, "full", heights, good)},
		{"not a compound", []byte{8, 0, 0, 0, 0}},
		{"truncated", modernChunk(t, 0, 0, 0, "full", heights, good)[:300]},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Decode(tc.data, DecodeOptions{Blocks: true}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, want ErrCorrupt", err)
			}
		})
	}
}

// legacyChunk builds a pre-1.13 chunk: one section at y 0..15 holding
// ids[y] (with metadata meta[y]) in every column, numeric biomes;
// TerrainPopulated is populated, or absent when populated is noFlag.
func legacyChunk(t *testing.T, populated int8, ids, meta []int, biome byte) []byte {
	blocks, add, data := make([]byte, 4096), make([]byte, 2048), make([]byte, 2048)
	for i := range 4096 {
		y := i >> 8
		id, m := ids[y], meta[y]
		blocks[i] = byte(id)
		add[i/2] |= byte(id>>8&15) << (4 * (i % 2))
		data[i/2] |= byte(m&15) << (4 * (i % 2))
	}
	biomes := make([]byte, 256)
	for i := range biomes {
		biomes[i] = biome
	}
	level := map[string]any{
		"xPos": int32(-2), "zPos": int32(5), "TerrainPopulated": populated, "LightPopulated": int8(1),
		"Biomes": biomes, "HeightMap": make([]int32, 256),
		"Sections": []map[string]any{{"Y": int8(0), "Blocks": blocks, "Add": add, "Data": data, "SkyLight": make([]byte, 2048)}},
	}
	if populated == noFlag {
		delete(level, "TerrainPopulated")
		delete(level, "LightPopulated")
	}
	return marshal(t, map[string]any{"DataVersion": int32(1343), "Level": level})
}

// noFlag asks legacyChunk for a chunk without TerrainPopulated.
const noFlag = -1

func TestDecodeLegacy(t *testing.T) {
	//        y: 0   1  2    3  4   5   6..15
	ids := []int{7, 1, 300, 3, 2, 78, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	meta := []int{0, 5, 0, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	ch, info, err := Decode(legacyChunk(t, 1, ids, meta, 200), DecodeOptions{Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Pos != (geom.Chunk{X: -2, Z: 5}) || info.DataVersion != 1343 || !info.Full {
		t.Fatalf("info %+v", info)
	}
	col := ch.Column(0, 0)
	// The snow layer (78) does not block movement: the top is the grass.
	// Numeric states keep their id and data value (see legacyStateName).
	if col.Top != 4 || col.Ground.String() != "minecraft:grass_block[legacy_data=0,legacy_id=2]" ||
		col.Above[0].String() != "minecraft:snow[layers=3,legacy_data=2,legacy_id=78]" || col.Biome.String() != "minecraft:legacy_biome_200" {
		t.Errorf("column = top %d ground %s above %s biome %s", col.Top, col.Ground, col.Above[0], col.Biome)
	}
	for y, want := range []string{
		"minecraft:bedrock[legacy_data=0,legacy_id=7]", "minecraft:andesite[legacy_data=5,legacy_id=1]",
		"minecraft:legacy_300[legacy_data=0,legacy_id=300]", "minecraft:podzol[legacy_data=2,legacy_id=3]",
		"minecraft:grass_block[legacy_data=0,legacy_id=2]",
	} {
		if got := ch.Blocks.Block(3, y, 9).String(); got != want {
			t.Errorf("block y %d = %s, want %s", y, got, want)
		}
	}
	if info.NoStatus {
		t.Errorf("populated chunk: NoStatus set")
	}
	if _, info, err := Decode(legacyChunk(t, 0, ids, meta, 1), DecodeOptions{}); !errors.Is(err, world.ErrUngenerated) || info.NoStatus || info.Full {
		t.Errorf("unpopulated chunk: info %+v, err %v; want ErrUngenerated", info, err)
	}
	// A chunk recording no population at all (written by a generator
	// outside the game) is read as finished, and says so.
	ch, info, err = Decode(legacyChunk(t, noFlag, ids, meta, 1), DecodeOptions{})
	if err != nil || !info.Full || !info.NoStatus {
		t.Fatalf("chunk without TerrainPopulated: info %+v, err %v; want finished, NoStatus", info, err)
	}
	if col := ch.Column(3, 9); col.Top != 4 {
		t.Errorf("chunk without TerrainPopulated: top %d, want 4", col.Top)
	}
	ch, _, _ = Decode(legacyChunk(t, 1, ids, meta, 4), DecodeOptions{})
	if got := ch.Column(1, 1).Biome.String(); got != "minecraft:forest" {
		t.Errorf("biome 4 = %s, want minecraft:forest", got)
	}
}

// TestDecodeStraddling decodes a 1.15-style chunk (Level compound, values
// straddling longs) with a 17-entry palette (5 bits) and 3-D int biomes.
func TestDecodeStraddling(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var palette []map[string]any
	for i := range 17 {
		palette = append(palette, state(fmt.Sprintf("minecraft:test_%d", i), nil))
	}
	palette[0] = state("minecraft:air", nil)
	blocks := make([]int, 4096)
	heights := make([]int, 256)
	for i := range 256 {
		h := rng.IntN(16) // top at y h (section 0), stone-like test blocks below
		heights[i] = h + 1
		for y := 0; y <= h; y++ {
			blocks[y<<8|i] = 1 + rng.IntN(16)
		}
	}
	biomes := make([]int32, 1024)
	for i := range biomes {
		biomes[i] = int32(rng.IntN(50))
	}
	data := marshal(t, map[string]any{"DataVersion": int32(2230), "Level": map[string]any{
		"xPos": int32(9), "zPos": int32(9), "Status": "full", "Biomes": biomes,
		"Heightmaps": map[string]any{"MOTION_BLOCKING": pack(heights, 9, true)},
		"Sections":   []map[string]any{{"Y": int8(0), "Palette": palette, "BlockStates": pack(blocks, 5, true)}},
	}})
	if n := len(pack(heights, 9, true)); n != 36 {
		t.Fatalf("straddled heightmap of %d longs, want 36", n)
	}
	ch, _, err := Decode(data, DecodeOptions{Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4096 {
		x, y, z := i&15, i>>8, i>>4&15
		if got, want := ch.Blocks.Block(x, y, z).String(), palette[blocks[i]]["Name"]; got != want {
			t.Fatalf("block %d,%d,%d = %s, want %s", x, y, z, got, want)
		}
	}
	for i := range 256 {
		x, z := i&15, i>>4
		col := ch.Column(x, z)
		y := heights[i] - 1
		if int(col.Top) != y || col.Ground.String() != palette[blocks[y<<8|i]]["Name"] {
			t.Fatalf("column %d,%d: top %d %s, want %d", x, z, col.Top, col.Ground, y)
		}
		if got, want := col.Biome, legacyBiome(int(biomes[(y>>2)*16+(z>>2)*4+x>>2])); got != want {
			t.Fatalf("column %d,%d: biome %s, want %s", x, z, got, want)
		}
	}
}

// TestDecodeAllocs pins the screening path: a decoded chunk costs one
// allocation, its world.Chunk.
func TestDecodeAllocs(t *testing.T) {
	if raceBuild {
		t.Skip("under the race detector sync.Pool drops items at random, so allocations are not counted")
	}
	top := func(x, z int) int { return 60 + x }
	data := modernChunk(t, 0, 0, -4, "minecraft:full", heightsOf(-64, top), flatSections(-4, 19, top, nil)...)
	if _, _, err := Decode(data, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { Decode(data, DecodeOptions{}) }); n > 1 {
		t.Errorf("Decode allocates %v times per chunk, want 1", n)
	}
}

func TestDivPer(t *testing.T) {
	for w := 1; w <= 64; w++ {
		per := 64 / w
		for i := range 1 << 16 {
			if q, r := divPer(i, w); q != i/per || r != i%per {
				t.Fatalf("divPer(%d, %d) = %d, %d, want %d, %d", i, w, q, r, i/per, i%per)
			}
		}
	}
}
