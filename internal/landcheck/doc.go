// Package landcheck judges landing places on Minecraft saves for tests,
// independently of the engine: it reads the raw block states straight from
// the region files with go-mc (not with world/anvil's decoder), in every
// layout (1.18+ top-level palettes, 1.13 to 1.17 palettes inside Level,
// numeric ids before 1.13), and judges them with the collision shapes of
// world/blockdata and its own short lists of hazards and fluids, sharing no
// code with package safety.
//
// A landing is (x, y, z) with y the block the feet occupy: the ground is
// y-1, the head y+1. Check returns one *Failure per problem.
//
// Where the dimension's region files lie and whether it has a roof are
// the save's facts, not a judgement: those come from world/anvil (its
// Dimension ids and ResolveDimensionType), so that a test checks the
// engine against the same dimension type the save defines.
//
// The package serves tests on saves they trust: go-mc's reflective NBT
// decoder allocates what a file claims, so it is no reader for hostile
// files.
package landcheck
