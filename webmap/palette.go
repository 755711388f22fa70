package webmap

import (
	"image/color"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/world"
)

// Colour tables.
//
// Block and biome colours are decided once per interned ID, from the name,
// and kept in copy-on-write slices indexed by ID, so a pixel costs a slice
// index. The tables are process-wide: IDs are process-wide too.

// unknownColor is the colour of a block or biome no rule names.
var unknownColor = color.RGBA{128, 128, 128, 255}

// Colours shared by both renderers.
var (
	waterColor = color.RGBA{52, 98, 196, 255}
	lavaColor  = color.RGBA{214, 96, 18, 255}
)

// blockRule maps a block family to a colour: a name matches when it equals
// Name, or contains it when Contains is set.
type blockRule struct {
	name     string
	contains bool
	c        color.RGBA
}

// blockRules are tried in order on the block name without namespace or
// properties; the first match wins, so specific names come before the
// families that contain them.
var blockRules = []blockRule{
	{"water", false, waterColor},
	{"bubble_column", false, waterColor},
	{"seagrass", true, color.RGBA{48, 110, 150, 255}},
	{"kelp", true, color.RGBA{48, 110, 150, 255}},
	{"lava", false, lavaColor},
	{"magma_block", false, color.RGBA{150, 60, 20, 255}},
	{"grass_block", false, color.RGBA{106, 156, 62, 255}},
	{"short_grass", false, color.RGBA{96, 150, 56, 255}},
	{"tall_grass", false, color.RGBA{96, 150, 56, 255}},
	{"fern", true, color.RGBA{88, 140, 52, 255}},
	{"moss", true, color.RGBA{92, 114, 46, 255}},
	{"lily_pad", false, color.RGBA{32, 128, 48, 255}},
	{"mangrove_leaves", false, color.RGBA{80, 120, 30, 255}},
	{"cherry_leaves", false, color.RGBA{230, 170, 200, 255}},
	{"birch_leaves", false, color.RGBA{110, 150, 70, 255}},
	{"spruce_leaves", false, color.RGBA{60, 96, 60, 255}},
	{"leaves", true, color.RGBA{58, 118, 40, 255}},
	{"powder_snow", false, color.RGBA{248, 250, 252, 255}},
	{"snow", true, color.RGBA{242, 246, 250, 255}},
	{"ice", true, color.RGBA{158, 188, 248, 255}},
	{"red_sandstone", false, color.RGBA{186, 100, 40, 255}},
	{"red_sand", false, color.RGBA{190, 102, 42, 255}},
	{"sandstone", true, color.RGBA{216, 203, 155, 255}},
	{"soul_sand", false, color.RGBA{84, 64, 50, 255}},
	{"soul_soil", false, color.RGBA{84, 64, 50, 255}},
	{"sand", true, color.RGBA{220, 208, 160, 255}},
	{"gravel", false, color.RGBA{136, 128, 126, 255}},
	{"clay", false, color.RGBA{160, 166, 180, 255}},
	{"mud", true, color.RGBA{60, 58, 62, 255}},
	{"podzol", false, color.RGBA{108, 76, 40, 255}},
	{"mycelium", false, color.RGBA{112, 98, 112, 255}},
	{"dirt_path", false, color.RGBA{150, 124, 66, 255}},
	{"farmland", false, color.RGBA{118, 80, 46, 255}},
	{"dirt", true, color.RGBA{134, 96, 66, 255}},
	{"terracotta", true, color.RGBA{152, 94, 68, 255}},
	{"crimson_nylium", false, color.RGBA{130, 30, 30, 255}},
	{"warped_nylium", false, color.RGBA{40, 114, 104, 255}},
	{"netherrack", false, color.RGBA{112, 52, 52, 255}},
	{"nether", true, color.RGBA{96, 40, 44, 255}},
	{"basalt", true, color.RGBA{74, 74, 80, 255}},
	{"blackstone", true, color.RGBA{44, 40, 46, 255}},
	{"end_stone", true, color.RGBA{220, 222, 160, 255}},
	{"obsidian", true, color.RGBA{22, 18, 32, 255}},
	{"bedrock", false, color.RGBA{86, 86, 86, 255}},
	{"deepslate", true, color.RGBA{80, 80, 86, 255}},
	{"calcite", false, color.RGBA{222, 224, 220, 255}},
	{"tuff", true, color.RGBA{108, 110, 102, 255}},
	{"andesite", true, color.RGBA{136, 136, 138, 255}},
	{"diorite", true, color.RGBA{188, 188, 190, 255}},
	{"granite", true, color.RGBA{150, 104, 86, 255}},
	{"cobblestone", true, color.RGBA{118, 118, 118, 255}},
	{"stone", true, color.RGBA{122, 122, 124, 255}},
	{"cactus", false, color.RGBA{86, 126, 40, 255}},
	{"pumpkin", false, color.RGBA{196, 118, 24, 255}},
	{"melon", false, color.RGBA{110, 146, 30, 255}},
	{"_log", true, color.RGBA{104, 82, 50, 255}},
	{"_wood", true, color.RGBA{104, 82, 50, 255}},
	{"planks", true, color.RGBA{162, 130, 78, 255}},
	{"bush", true, color.RGBA{120, 100, 60, 255}},
}

// BlockColor returns the map colour of a block state name ("minecraft:
// grass_block[snowy=false]"): by family, grey for names no rule knows.
func BlockColor(state string) color.RGBA {
	name, _, _ := strings.Cut(state, "[")
	if _, rest, ok := strings.Cut(name, ":"); ok {
		name = rest
	}
	for _, r := range blockRules {
		if name == r.name || (r.contains && strings.Contains(name, r.name)) {
			return r.c
		}
	}
	return unknownColor
}

// biomeRules colour the procedural relief by biome: the first rule whose
// text the biome name (without namespace) contains wins.
var biomeRules = []struct {
	sub string
	c   color.RGBA
}{
	{"deep_ocean", color.RGBA{30, 66, 150, 255}},
	{"ocean", waterColor},
	{"river", color.RGBA{64, 118, 210, 255}},
	{"beach", color.RGBA{226, 214, 164, 255}},
	{"desert", color.RGBA{222, 200, 140, 255}},
	{"snowy", color.RGBA{236, 240, 246, 255}},
	{"frozen", color.RGBA{220, 230, 244, 255}},
	{"peaks", color.RGBA{150, 146, 140, 255}},
	{"slopes", color.RGBA{200, 204, 210, 255}},
	{"swamp", color.RGBA{92, 110, 60, 255}},
	{"forest", color.RGBA{64, 120, 52, 255}},
	{"taiga", color.RGBA{70, 110, 70, 255}},
	{"jungle", color.RGBA{50, 130, 30, 255}},
	{"savanna", color.RGBA{160, 160, 80, 255}},
	{"badlands", color.RGBA{180, 100, 50, 255}},
	{"plains", color.RGBA{120, 168, 72, 255}},
	{"meadow", color.RGBA{120, 168, 72, 255}},
}

// BiomeColor returns the relief colour of a biome name; ok is false when
// no rule knows it (the renderer then uses the ground block's colour).
func BiomeColor(name string) (c color.RGBA, ok bool) {
	if _, rest, found := strings.Cut(name, ":"); found {
		name = rest
	}
	for _, r := range biomeRules {
		if strings.Contains(name, r.sub) {
			return r.c, true
		}
	}
	return color.RGBA{}, false
}

// idTable caches a colour per interned ID, copy-on-write: reads take no
// lock. The zero value is usable.
type idTable struct {
	mu sync.Mutex // serialises growth
	t  atomic.Pointer[[]rgbEntry]
}

// rgbEntry is one cached colour; set false when not computed yet.
type rgbEntry struct {
	c   color.RGBA
	ok  bool // the rule matched (biomes)
	set bool
}

// get returns the entry of id, computing it with f(id) once.
func (t *idTable) get(id uint32, f func(uint32) (color.RGBA, bool)) rgbEntry {
	if p := t.t.Load(); p != nil && int(id) < len(*p) && (*p)[id].set {
		return (*p)[id]
	}
	c, ok := f(id)
	e := rgbEntry{c: c, ok: ok, set: true}
	if id >= 1<<20 {
		return e // never grow the table without bound
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur []rgbEntry
	if p := t.t.Load(); p != nil {
		cur = *p
	}
	n := make([]rgbEntry, max(len(cur), int(id)+1))
	copy(n, cur)
	n[id] = e
	t.t.Store(&n)
	return e
}

var blockColors, biomeColors idTable

// blockColorOf returns the colour of an interned block state.
func blockColorOf(b world.BlockID) color.RGBA {
	return blockColors.get(uint32(b), func(id uint32) (color.RGBA, bool) {
		return BlockColor(world.BlockID(id).String()), true
	}).c
}

// biomeColorOf returns the relief colour of an interned biome.
func biomeColorOf(b world.BiomeID) (color.RGBA, bool) {
	e := biomeColors.get(uint32(b), func(id uint32) (color.RGBA, bool) {
		return BiomeColor(world.BiomeID(id).String())
	})
	return e.c, e.ok
}
