package anvil

import "strings"

// class is what the reader knows about a block state: enough to rebuild a
// MOTION_BLOCKING heightmap where a chunk has none, and for the reader's own
// landing sanity check (Landings). The engine's safety rules live elsewhere
// and work on names; this is deliberately small.
type class uint8

const (
	// blocking: the block counts for the MOTION_BLOCKING heightmap (it
	// blocks movement or holds a fluid).
	blocking class = 1 << iota
	// fluid: water or lava, or a block standing in water.
	fluid
	// airLike: a player's body can occupy it harmlessly (air, short
	// plants, a thin snow layer).
	airLike
	// hazard: unsafe to stand on or in.
	hazard
)

// nonBlocking lists block names (without namespace) that do not count for
// the MOTION_BLOCKING heightmap: air, plants, thin decorations and portals.
var nonBlocking = setOf(
	"air", "cave_air", "void_air", "light", "structure_void",
	"grass", "short_grass", "tall_grass", "fern", "large_fern", "dead_bush",
	"dandelion", "poppy", "blue_orchid", "allium", "azure_bluet", "red_tulip",
	"orange_tulip", "white_tulip", "pink_tulip", "oxeye_daisy", "cornflower",
	"lily_of_the_valley", "wither_rose", "sunflower", "lilac", "rose_bush",
	"peony", "torchflower", "pink_petals", "pitcher_plant", "brown_mushroom",
	"red_mushroom", "crimson_fungus", "warped_fungus", "crimson_roots",
	"warped_roots", "nether_sprouts", "sugar_cane", "vine", "weeping_vines",
	"weeping_vines_plant", "twisting_vines", "twisting_vines_plant",
	"cave_vines", "cave_vines_plant", "glow_lichen", "hanging_roots",
	"spore_blossom", "small_dripleaf", "big_dripleaf", "big_dripleaf_stem",
	"moss_carpet", "azalea", "flowering_azalea", "torch", "wall_torch",
	"soul_torch", "soul_wall_torch", "redstone_torch", "redstone_wall_torch",
	"redstone_wire", "rail", "powered_rail", "detector_rail", "activator_rail",
	"lever", "tripwire", "tripwire_hook", "snow", "wheat", "carrots",
	"potatoes", "beetroots", "melon_stem", "pumpkin_stem",
	"attached_melon_stem", "attached_pumpkin_stem", "nether_wart",
	"sweet_berry_bush", "cocoa", "lily_pad", "cobweb", "nether_portal",
	"end_portal", "end_gateway", "comparator", "repeater", "flower_pot",
	"ladder", "scaffolding", "end_rod", "chorus_plant", "chorus_flower",
	"fire", "soul_fire", "frogspawn", "torchflower_crop", "pitcher_crop",
	"bamboo_sapling", "mangrove_propagule", "candle",
)

// nonBlockingSuffix lists name endings of non-blocking families.
var nonBlockingSuffix = []string{
	"_sapling", "_button", "_skull", "_head", "_candle", "_coral", "_coral_fan",
	"_coral_wall_fan",
}

// fluids lists names that are or always hold a fluid.
var fluids = setOf("water", "lava", "bubble_column", "seagrass", "tall_seagrass",
	"kelp", "kelp_plant", "flowing_water", "flowing_lava")

// airLikeNames lists what may fill the two blocks above a landing.
var airLikeNames = setOf("air", "cave_air", "void_air", "grass", "short_grass",
	"tall_grass", "fern", "large_fern", "dead_bush", "dandelion", "poppy",
	"blue_orchid", "allium", "azure_bluet", "red_tulip", "orange_tulip",
	"white_tulip", "pink_tulip", "oxeye_daisy", "cornflower",
	"lily_of_the_valley", "sunflower", "lilac", "rose_bush", "peony")

// hazards lists names unsafe to stand on or in (the default unsafe set of
// the design: lava, water, magma, cactus, fire, powder snow, leaves) plus
// their close relatives.
var hazards = setOf("lava", "water", "flowing_water", "flowing_lava",
	"magma_block", "cactus", "fire", "soul_fire", "powder_snow", "campfire",
	"soul_campfire", "sweet_berry_bush", "wither_rose", "pointed_dripstone",
	"cobweb", "bubble_column", "seagrass", "tall_seagrass", "kelp",
	"kelp_plant", "nether_portal", "end_portal", "end_gateway")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// classify classes a canonical block-state name ("minecraft:snow[layers=1]").
// Names outside the minecraft namespace are solid and unknown: blocking and
// nothing else.
func classify(state string) class {
	name, props, _ := strings.Cut(state, "[")
	props = strings.TrimSuffix(props, "]")
	base, ok := strings.CutPrefix(name, "minecraft:")
	if !ok {
		return blocking
	}
	var c class
	waterlogged := hasProp(props, "waterlogged", "true")
	switch {
	case fluids[base] || waterlogged:
		c |= blocking | fluid
	case nonBlocking[base] || hasSuffix(base, nonBlockingSuffix) || strings.HasPrefix(base, "potted_"):
	default:
		c |= blocking
	}
	if hazards[base] || strings.HasSuffix(base, "_leaves") || waterlogged {
		c |= hazard
	}
	if airLikeNames[base] && !waterlogged {
		c |= airLike
	}
	if base == "snow" && (props == "" || hasProp(props, "layers", "1")) {
		c |= airLike
	}
	return c
}

func hasSuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// hasProp reports whether a sorted "k=v,k=v" property list holds key=value.
func hasProp(props, key, value string) bool {
	for props != "" {
		var kv string
		kv, props, _ = strings.Cut(props, ",")
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v == value
		}
	}
	return false
}
