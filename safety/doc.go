// Package safety decides whether a column of a chunk is a safe place to
// land a player, and at which y.
//
// A location is safe when the ground block is solid and not unsafe, the
// blocks above it (the headroom, two by default) are air-like, the landing
// y is inside [MinY, MaxY] and the world's build height, the biome is
// allowed, and the column is inside the world border. Shapes and
// verifiers (claims, callbacks) are the caller's business.
//
// # Rules
//
// Rules is the configuration, shaped for YAML; New compiles it into a
// Checker. Every field defaults sensibly from its zero value (see Default):
// the defaults keep players out of lava, water, magma, cactus, fire, powder
// snow, leaves and waterlogged blocks, land on the column's top block, and
// want two air-like blocks of headroom.
//
// Block lists (unsafe, air_like, solid) hold rules in a small grammar:
//
//	minecraft:lava             a block name
//	lava                       the same: the namespace defaults to minecraft
//	*_leaves                   '*' globs over names and namespaces ("*:*")
//	#leaves                    a built-in tag (see Tags): #air #water #lava
//	                           #fluids #fire #leaves #hazards #waterlogged
//	                           #flowers #plants #unsafe #air_like
//	water[level=0]             property predicates, all of which must hold
//	*:*[waterlogged=true]
//	campfire[lit=true|false]   alternatives with '|'
//	#leaves[persistent!=true]  negation with '!='
//
// Biome lists (biomes.allow, biomes.deny) take names, globs and biome tags
// (see BiomeTags: #ocean #river #beach #cave #nether #end #void), without
// properties. Validate reports every bad rule at once, each as a
// *RuleError carrying the list, the index and the byte offset of the
// problem.
//
// Unknown block names are never errors: the rules cannot know every mod's
// blocks. A rule naming a block the game lacks simply never matches. A
// block in world data that no rule matches is solid ground when its
// namespace is known (minecraft, plus KnownNamespaces); otherwise
// UnknownBlocks decides: "solid" (the default) or "unsafe".
//
// # Vertical strategies
//
//   - surface (default): the column summary's top block is the ground;
//     no block data needed. Under a roof (a chunk with
//     world.Chunk.HasCeiling, such as the Nether's) it is the highest
//     floor below the roof, searched down through the block data.
//   - linear: scan one block at a time from a start y, down (default) or
//     up, for the first y with safe ground and headroom.
//   - jump: probe every step blocks and scan only between a probe in free
//     space and one that is not; faster over tall spans, blind to floors
//     and cavities thinner than the step.
//   - fixed: land exactly at y, if it is safe.
//
// Whatever the strategy, a landing in a chunk with a ceiling lies wholly
// below it, feet and headroom (a rejection there is AboveMaxY).
//
// Strategies other than surface read the chunk's block data
// (world.Chunk.Blocks); on a chunk without it they reject with NoBlockData
// (memory.CauseVert).
//
// # Checks
//
// Checker.Check and Checker.Accepts check a column on a resident chunk
// held by a world.Reservation: no I/O, no allocation, and they fail closed
// on a nil or closed reservation. Checker.Screen picks a safe column of a
// chunk from its summaries alone, for the cold stage. Rejections carry a
// Reason that maps to the memory.Cause they are remembered under.
//
// Block and biome rules are evaluated once per interned world.BlockID or
// world.BiomeID and cached in lock-free tables that grow as the world
// interns new names, so a check never touches a string.
package safety
