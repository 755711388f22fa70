package anvil

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rtpengine/rtp/world"
)

// Numeric block ids (worlds saved before 1.13). The table names each id the
// way the 1.13 flattening names its default state; a few ids depend on the
// metadata nibble where the variant matters for landing checks (stone and
// dirt kinds, sand colour, leaf and plant kinds, snow depth). Ids without a
// name become "minecraft:legacy_<id>": unknown, never an error.
var legacyNames = map[int]string{
	0: "air", 1: "stone", 2: "grass_block", 3: "dirt", 4: "cobblestone",
	5: "oak_planks", 6: "oak_sapling", 7: "bedrock", 8: "water", 9: "water",
	10: "lava", 11: "lava", 12: "sand", 13: "gravel", 14: "gold_ore",
	15: "iron_ore", 16: "coal_ore", 17: "oak_log", 18: "oak_leaves",
	19: "sponge", 20: "glass", 21: "lapis_ore", 22: "lapis_block",
	23: "dispenser", 24: "sandstone", 25: "note_block", 26: "red_bed",
	27: "powered_rail", 28: "detector_rail", 29: "sticky_piston", 30: "cobweb",
	31: "grass", 32: "dead_bush", 33: "piston", 34: "piston_head",
	35: "white_wool", 36: "moving_piston", 37: "dandelion", 38: "poppy",
	39: "brown_mushroom", 40: "red_mushroom", 41: "gold_block",
	42: "iron_block", 43: "smooth_stone", 44: "stone_slab", 45: "bricks",
	46: "tnt", 47: "bookshelf", 48: "mossy_cobblestone", 49: "obsidian",
	50: "torch", 51: "fire", 52: "spawner", 53: "oak_stairs", 54: "chest",
	55: "redstone_wire", 56: "diamond_ore", 57: "diamond_block",
	58: "crafting_table", 59: "wheat", 60: "farmland", 61: "furnace",
	62: "furnace", 63: "oak_sign", 64: "oak_door", 65: "ladder", 66: "rail",
	67: "cobblestone_stairs", 68: "oak_wall_sign", 69: "lever",
	70: "stone_pressure_plate", 71: "iron_door", 72: "oak_pressure_plate",
	73: "redstone_ore", 74: "redstone_ore", 75: "redstone_torch",
	76: "redstone_torch", 77: "stone_button", 78: "snow", 79: "ice",
	80: "snow_block", 81: "cactus", 82: "clay", 83: "sugar_cane",
	84: "jukebox", 85: "oak_fence", 86: "carved_pumpkin", 87: "netherrack",
	88: "soul_sand", 89: "glowstone", 90: "nether_portal",
	91: "jack_o_lantern", 92: "cake", 93: "repeater", 94: "repeater",
	95: "white_stained_glass", 96: "oak_trapdoor", 97: "infested_stone",
	98: "stone_bricks", 99: "brown_mushroom_block", 100: "red_mushroom_block",
	101: "iron_bars", 102: "glass_pane", 103: "melon", 104: "pumpkin_stem",
	105: "melon_stem", 106: "vine", 107: "oak_fence_gate",
	108: "brick_stairs", 109: "stone_brick_stairs", 110: "mycelium",
	111: "lily_pad", 112: "nether_bricks", 113: "nether_brick_fence",
	114: "nether_brick_stairs", 115: "nether_wart", 116: "enchanting_table",
	117: "brewing_stand", 118: "cauldron", 119: "end_portal",
	120: "end_portal_frame", 121: "end_stone", 122: "dragon_egg",
	123: "redstone_lamp", 124: "redstone_lamp", 125: "oak_slab",
	126: "oak_slab", 127: "cocoa", 128: "sandstone_stairs",
	129: "emerald_ore", 130: "ender_chest", 131: "tripwire_hook",
	132: "tripwire", 133: "emerald_block", 134: "spruce_stairs",
	135: "birch_stairs", 136: "jungle_stairs", 137: "command_block",
	138: "beacon", 139: "cobblestone_wall", 140: "flower_pot",
	141: "carrots", 142: "potatoes", 143: "oak_button",
	144: "skeleton_skull", 145: "anvil", 146: "trapped_chest",
	147: "light_weighted_pressure_plate", 148: "heavy_weighted_pressure_plate",
	149: "comparator", 150: "comparator", 151: "daylight_detector",
	152: "redstone_block", 153: "nether_quartz_ore", 154: "hopper",
	155: "quartz_block", 156: "quartz_stairs", 157: "activator_rail",
	158: "dropper", 159: "white_terracotta", 160: "white_stained_glass_pane",
	161: "acacia_leaves", 162: "acacia_log", 163: "acacia_stairs",
	164: "dark_oak_stairs", 165: "slime_block", 166: "barrier",
	167: "iron_trapdoor", 168: "prismarine", 169: "sea_lantern",
	170: "hay_block", 171: "white_carpet", 172: "terracotta",
	173: "coal_block", 174: "packed_ice", 175: "sunflower",
	176: "white_banner", 177: "white_wall_banner", 178: "daylight_detector",
	179: "red_sandstone", 180: "red_sandstone_stairs",
	181: "smooth_red_sandstone", 182: "red_sandstone_slab",
	183: "spruce_fence_gate", 184: "birch_fence_gate",
	185: "jungle_fence_gate", 186: "dark_oak_fence_gate",
	187: "acacia_fence_gate", 188: "spruce_fence", 189: "birch_fence",
	190: "jungle_fence", 191: "dark_oak_fence", 192: "acacia_fence",
	193: "spruce_door", 194: "birch_door", 195: "jungle_door",
	196: "acacia_door", 197: "dark_oak_door", 198: "end_rod",
	199: "chorus_plant", 200: "chorus_flower", 201: "purpur_block",
	202: "purpur_pillar", 203: "purpur_stairs", 204: "purpur_slab",
	205: "purpur_slab", 206: "end_stone_bricks", 207: "beetroots",
	208: "grass_path", 209: "end_gateway", 210: "repeating_command_block",
	211: "chain_command_block", 212: "frosted_ice", 213: "magma_block",
	214: "nether_wart_block", 215: "red_nether_bricks", 216: "bone_block",
	217: "structure_void", 218: "observer", 219: "white_shulker_box",
	251: "white_concrete", 252: "white_concrete_powder",
	255: "structure_block",
}

// legacyVariants names metadata variants: id -> meta -> name.
var legacyVariants = map[int][]string{
	1:   {"stone", "granite", "polished_granite", "diorite", "polished_diorite", "andesite", "polished_andesite"},
	3:   {"dirt", "coarse_dirt", "podzol"},
	12:  {"sand", "red_sand"},
	17:  {"oak_log", "spruce_log", "birch_log", "jungle_log"},
	18:  {"oak_leaves", "spruce_leaves", "birch_leaves", "jungle_leaves"},
	31:  {"dead_bush", "grass", "fern"},
	38:  {"poppy", "blue_orchid", "allium", "azure_bluet", "red_tulip", "orange_tulip", "white_tulip", "pink_tulip", "oxeye_daisy"},
	161: {"acacia_leaves", "dark_oak_leaves"},
	162: {"acacia_log", "dark_oak_log"},
	175: {"sunflower", "lilac", "tall_grass", "large_fern", "rose_bush", "peony"},
}

// legacyVariantMask selects the metadata bits that pick a variant (the
// others hold orientation, decay or growth).
var legacyVariantMask = map[int]int{1: 15, 3: 15, 12: 15, 17: 3, 18: 3, 31: 15, 38: 15, 161: 1, 162: 1, 175: 7}

// legacyStateName names numeric block id (0..4095) with metadata meta: the
// flattened name (legacyBaseName), so that rules written for 1.13 and later
// apply, with the numeric state in two properties, legacy_data and
// legacy_id, so that the collision data of the version that saved the
// chunk is looked up by the exact state ("minecraft:stone_slab[legacy_data=8,legacy_id=44]"
// is an upper slab; see blockdata.Table.State).
func legacyStateName(id, meta int) string {
	name := legacyBaseName(id, meta)
	tail := "legacy_data=" + strconv.Itoa(meta) + ",legacy_id=" + strconv.Itoa(id) + "]"
	if base, ok := strings.CutSuffix(name, "]"); ok {
		return base + "," + tail
	}
	return name + "[" + tail
}

// legacyBaseName is the 1.13 name of numeric block id with metadata meta.
func legacyBaseName(id, meta int) string {
	if id == 78 { // snow layer: depth is in the metadata
		return "minecraft:snow[layers=" + strconv.Itoa(meta&7+1) + "]"
	}
	if vs, ok := legacyVariants[id]; ok {
		if m := meta & legacyVariantMask[id]; m < len(vs) {
			return "minecraft:" + vs[m]
		}
		if id == 175 { // upper half of a double plant
			return "minecraft:tall_grass"
		}
	}
	if n, ok := legacyNames[id]; ok {
		return "minecraft:" + n
	}
	return "minecraft:legacy_" + strconv.Itoa(id)
}

// legacyStates caches resolved numeric states, keyed id<<4|meta; each entry
// is 1<<63 | class<<32 | BlockID once resolved, 0 before.
var legacyStates [1 << 16]atomic.Uint64

func legacyState(id, meta int) stateInfo {
	k := (id&0xfff)<<4 | meta&15
	if v := legacyStates[k].Load(); v != 0 {
		return stateInfo{id: world.BlockID(uint32(v)), class: class(v >> 32)}
	}
	name := legacyStateName(id&0xfff, meta&15)
	s := stateInfo{id: internBlock(name), class: classify(name)}
	legacyStates[k].Store(1<<63 | uint64(s.class)<<32 | uint64(s.id))
	return s
}

// Numeric biome ids (before 1.18: a byte per column before 1.13, ints after)
// named as the game renames them when it upgrades a world to 1.18, so one
// biome list fits every version. Ids without a name become
// "minecraft:legacy_biome_<id>".
var legacyBiomeNames = map[int]string{
	0: "ocean", 1: "plains", 2: "desert", 3: "windswept_hills", 4: "forest",
	5: "taiga", 6: "swamp", 7: "river", 8: "nether_wastes", 9: "the_end",
	10: "frozen_ocean", 11: "frozen_river", 12: "snowy_plains",
	13: "snowy_plains", 14: "mushroom_fields", 15: "mushroom_fields",
	16: "beach", 17: "desert", 18: "forest", 19: "taiga",
	20: "windswept_hills", 21: "jungle", 22: "jungle", 23: "sparse_jungle",
	24: "deep_ocean", 25: "stony_shore", 26: "snowy_beach",
	27: "birch_forest", 28: "birch_forest", 29: "dark_forest",
	30: "snowy_taiga", 31: "snowy_taiga", 32: "old_growth_pine_taiga",
	33: "old_growth_pine_taiga", 34: "windswept_forest", 35: "savanna",
	36: "savanna_plateau", 37: "badlands", 38: "wooded_badlands",
	39: "badlands", 40: "small_end_islands", 41: "end_midlands",
	42: "end_highlands", 43: "end_barrens", 44: "warm_ocean",
	45: "lukewarm_ocean", 46: "cold_ocean", 47: "warm_ocean",
	48: "deep_lukewarm_ocean", 49: "deep_cold_ocean", 50: "deep_frozen_ocean",
	127: "the_void", 129: "sunflower_plains", 130: "desert",
	131: "windswept_gravelly_hills", 132: "flower_forest", 133: "taiga",
	134: "swamp", 140: "ice_spikes", 149: "jungle", 151: "sparse_jungle",
	155: "old_growth_birch_forest", 156: "old_growth_birch_forest",
	157: "dark_forest", 158: "snowy_taiga", 160: "old_growth_spruce_taiga",
	161: "old_growth_spruce_taiga", 162: "windswept_gravelly_hills",
	163: "windswept_savanna", 164: "windswept_savanna",
	165: "eroded_badlands", 166: "wooded_badlands", 167: "badlands",
	168: "bamboo_jungle", 169: "bamboo_jungle", 170: "soul_sand_valley",
	171: "crimson_forest", 172: "warped_forest", 173: "basalt_deltas",
	174: "dripstone_caves", 175: "lush_caves",
}

// legacyBiomeIDs caches resolved numeric biomes 0..255: 1<<32 | BiomeID.
var legacyBiomeIDs [256]atomic.Uint64

func legacyBiome(id int) world.BiomeID {
	if id >= 0 && id < len(legacyBiomeIDs) {
		if v := legacyBiomeIDs[id].Load(); v != 0 {
			return world.BiomeID(uint32(v))
		}
	}
	name := "minecraft:legacy_biome_" + strconv.Itoa(id)
	if n, ok := legacyBiomeNames[id]; ok {
		name = "minecraft:" + n
	}
	b := internBiome(name)
	if id >= 0 && id < len(legacyBiomeIDs) {
		legacyBiomeIDs[id].Store(1<<32 | uint64(b))
	}
	return b
}
