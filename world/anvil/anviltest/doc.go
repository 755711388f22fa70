// Package anviltest writes Minecraft Java Edition saves for tests: chunks
// in the 1.18+ layout (top-level data, per-section block and biome
// palettes, values packed without straddling, status minecraft:full and a
// MOTION_BLOCKING heightmap computed from the blocks), region files
// (r.<x>.<z>.mca: the 8 KiB header of locations and timestamps, then
// zlib-compressed payloads on 4 KiB sectors), level.dat, and the folder
// layout of a save (region/, DIM-1/region/, DIM1/region/).
//
// Build a chunk with NewChunk, Set and Fill, then write chunks with
// WriteRegions or a whole save with WriteSave:
//
//	c := anviltest.NewChunk(0, 0, anvil.Overworld)
//	_ = c.Fill(0, -64, 0, 15, 63, 15, "minecraft:stone")
//	_ = c.Set(3, 64, 4, "minecraft:oak_sign[rotation=0,waterlogged=false]")
//	err := anviltest.WriteSave(t.TempDir(), anviltest.Save{Chunks: []*anviltest.Chunk{c}})
//
// The heightmap follows BlocksMotion, which approximates the game's rule
// from the collision shapes of package blockdata (see there). The package
// is for tests: it favours plain code over speed, and it writes whatever
// it is given, including blocks no game version has.
package anviltest
