package safety

import (
	"maps"
	"slices"
)

// blockTags is the built-in table of block tags. Members are rules of the
// same grammar and may name other tags. Names without a namespace are in
// minecraft.
var blockTags = map[string][]string{
	// Blocks a player can neither stand on nor be hurt by.
	"air": {"air", "cave_air", "void_air"},
	// Water and what only grows in it.
	"water":  {"water", "flowing_water", "bubble_column", "kelp", "kelp_plant", "seagrass", "tall_seagrass"},
	"lava":   {"lava", "flowing_lava"},
	"fluids": {"#water", "#lava"},
	// Blocks that burn whoever stands in or on them. Every campfire
	// counts, lit or not: an unlit one is a spark away from burning.
	"fire":    {"fire", "soul_fire", "campfire", "soul_campfire"},
	"portals": {"nether_portal", "end_portal", "end_gateway"},
	"leaves":  {"*_leaves"},
	// Any waterlogged block, in any namespace.
	"waterlogged": {"*:*[waterlogged=true]"},
	// Blocks that hurt, trap, move or drop a player: never ground and
	// never where the feet or head go, whatever the rules say (see
	// Rules.Unsafe).
	"hazards": {
		"#fluids", "#fire", "#portals", "#waterlogged",
		"magma_block", "cactus", "powder_snow", "sweet_berry_bush", "wither_rose",
		"pointed_dripstone", "cobweb",
	},
	// Flowers a player can stand in.
	"flowers": {
		"dandelion", "poppy", "blue_orchid", "allium", "azure_bluet", "*_tulip", "oxeye_daisy",
		"cornflower", "lily_of_the_valley", "torchflower", "pink_petals",
		"sunflower", "lilac", "rose_bush", "peony",
	},
	// Vegetation without collision that a player can stand in.
	"plants": {
		"short_grass", "grass", "tall_grass", "fern", "large_fern", "dead_bush", "*_sapling",
		"brown_mushroom", "red_mushroom", "vine", "glow_lichen", "#flowers",
	},
	// The default unsafe set (Rules.Unsafe when unset): the hazards, and
	// blocks a player could stand on but should not land on by default.
	"unsafe": {"#hazards", "#leaves", "barrier"},
	// Names that are free space for the rules' air_like list. Collision
	// data already makes these free space; the tag is for lists of
	// blocks the data does not know (mods).
	"air_like": {"#air", "#plants", "light"},
}

// biomeTags is the built-in table of biome tags.
var biomeTags = map[string][]string{
	"ocean":  {"*ocean"},
	"river":  {"river", "frozen_river"},
	"beach":  {"beach", "snowy_beach", "stony_shore"},
	"cave":   {"dripstone_caves", "lush_caves", "deep_dark"},
	"nether": {"nether_wastes", "soul_sand_valley", "crimson_forest", "warped_forest", "basalt_deltas"},
	"end":    {"the_end", "end_highlands", "end_midlands", "small_end_islands", "end_barrens"},
	"void":   {"the_void"},
}

// Tags returns the built-in block tags and their members (rules of the
// same grammar), for documentation and diagnostics. The caller owns the
// returned map.
func Tags() map[string][]string { return cloneTags(blockTags) }

// BiomeTags returns the built-in biome tags and their members.
func BiomeTags() map[string][]string { return cloneTags(biomeTags) }

func cloneTags(t map[string][]string) map[string][]string {
	out := maps.Clone(t)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}
