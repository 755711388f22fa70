package anviltest

import (
	"fmt"

	"github.com/Tnze/go-mc/nbt"
)

// LegacyDataVersion is the data version legacy chunks are written with:
// 1343, Minecraft 1.12.2.
const LegacyDataVersion = 1343

// Population is what a legacy chunk records of its population (the
// decoration pass that finishes a chunk before 1.13).
type Population int

const (
	// Populated writes TerrainPopulated 1, as the game does once the
	// chunk is finished.
	Populated Population = iota
	// NotPopulated writes TerrainPopulated 0: the game generated the
	// terrain and has not decorated it yet.
	NotPopulated
	// NoPopulationFlag writes neither TerrainPopulated nor
	// LightPopulated, as some generators outside the game do.
	NoPopulationFlag
)

// Legacy, set on a Chunk, writes it in the layout saved before 1.13:
// the Level compound, numeric block ids in Sections (Blocks, Data),
// HeightMap and numeric Biomes, with DataVersion LegacyDataVersion. Only
// y 0..255 is written (blocks set elsewhere are an error) and only the
// blocks of legacyIDs (air, stone, grass, dirt, bedrock, water, lava,
// sand, gravel, logs, leaves); properties are dropped.
type Legacy struct {
	// Population is what the chunk records of its population. Default
	// Populated.
	Population Population
}

// legacyIDs are the numeric ids of the blocks a legacy chunk may hold.
var legacyIDs = map[string]byte{
	Air: 0, "minecraft:stone": 1, "minecraft:grass_block": 2, "minecraft:dirt": 3,
	"minecraft:bedrock": 7, "minecraft:water": 9, "minecraft:lava": 11,
	"minecraft:sand": 12, "minecraft:gravel": 13, "minecraft:oak_log": 17,
	"minecraft:oak_leaves": 18,
}

// encodeLegacy returns the chunk's uncompressed NBT in the pre-1.13
// layout described on Legacy.
func (c *Chunk) encodeLegacy() ([]byte, error) {
	var sections []map[string]any
	var heights [256]int32
	for y := c.minY; y < c.MaxY(); y++ {
		for i := range 256 {
			x, z := i&15, i>>4
			name, _, err := ParseState(c.Get(x, y, z))
			if err != nil {
				return nil, err
			}
			if IsAir(name) {
				continue
			}
			if y < 0 || y > 255 {
				return nil, fmt.Errorf("anviltest: legacy chunk %d, %d: %s at y %d, outside 0..255", c.X, c.Z, name, y)
			}
			if _, ok := legacyIDs[name]; !ok {
				return nil, fmt.Errorf("anviltest: legacy chunk %d, %d: %s has no numeric id here", c.X, c.Z, name)
			}
			heights[i] = int32(y + 1)
		}
	}
	for sy := range 16 {
		blocks := make([]byte, 4096)
		solid := false
		for i := range 4096 {
			y := sy<<4 | i>>8
			if y < c.minY || y >= c.MaxY() {
				continue
			}
			name, _, _ := ParseState(c.Get(i&15, y, i>>4&15))
			blocks[i] = legacyIDs[name]
			solid = solid || blocks[i] != 0
		}
		if !solid {
			continue
		}
		sections = append(sections, map[string]any{
			"Y": int8(sy), "Blocks": blocks, "Data": make([]byte, 2048),
			"BlockLight": make([]byte, 2048), "SkyLight": make([]byte, 2048),
		})
	}
	if sections == nil {
		sections = []map[string]any{}
	}
	biomes := make([]byte, 256)
	for i := range biomes {
		biomes[i] = 1 // plains
	}
	level := map[string]any{
		"xPos": int32(c.X), "zPos": int32(c.Z), "LastUpdate": int64(0), "InhabitedTime": int64(0),
		"Biomes": biomes, "HeightMap": heights[:], "Sections": sections,
		"Entities": []map[string]any{}, "TileEntities": []map[string]any{},
	}
	switch c.Legacy.Population {
	case Populated:
		level["TerrainPopulated"], level["LightPopulated"] = int8(1), int8(1)
	case NotPopulated:
		level["TerrainPopulated"], level["LightPopulated"] = int8(0), int8(0)
	case NoPopulationFlag:
	default:
		return nil, fmt.Errorf("anviltest: legacy chunk %d, %d: population %d unknown", c.X, c.Z, c.Legacy.Population)
	}
	b, err := nbt.Marshal(map[string]any{"DataVersion": int32(LegacyDataVersion), "Level": level})
	if err != nil {
		return nil, fmt.Errorf("anviltest: chunk %d, %d: %w", c.X, c.Z, err)
	}
	return b, nil
}
