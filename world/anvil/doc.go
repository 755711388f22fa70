// Package anvil reads Minecraft Java Edition worlds from their region files
// (the Anvil format), read-only, as a world.Source: World.Load returns a
// chunk's column summaries (top block, the two above, biome) and, for a
// dimension with a roof or on request, its full blocks. It never generates
// anything: a missing or unfinished chunk is world.ErrUngenerated.
//
// A chunk is finished when its status says so (full, or the 1.13 names of
// it) or, before 1.13, when TerrainPopulated is 1. A chunk that records
// neither a status nor TerrainPopulated was written whole by a generator
// outside the game (the game writes TerrainPopulated 0 until it decorates
// a chunk): it is read as finished and Info.NoStatus says so.
//
// A dimension is a resource id (Dimension: minecraft:the_nether, a
// datapack's mymod:mining), its region folder found in the layout of 26.1
// (dimensions/<namespace>/<path>/region/) or the older one (region/,
// DIM-1/region/, DIM1/region/). Its type (DimensionType: build height,
// logical height, roof) comes from the save's datapacks, folders or zips,
// else from the game's own types; chunks of a dimension with a roof carry
// its ceiling (world.Chunk.Ceiling), below which every landing must lie.
//
// Every layout the game has written is read: before 1.13 (numeric block
// ids, mapped to names by a table; the light-based HeightMap), 1.13 to 1.17
// (the Level compound; packed values that straddle longs before 1.16 and do
// not after) and 1.18 on (top-level data, negative y, per-section 3-D biome
// palettes). Chunk payloads may be gzip, zlib, uncompressed or LZ4 (lz4-java
// block stream), in the region file or in an external .mcc file. Unknown
// block and biome names are ordinary names, never errors.
//
// # Design
//
// Screening wants a few hundred values out of a chunk of tens of kilobytes,
// so the reader does not build the NBT tree. One pass over the
// decompressed bytes (parse.go) records where the tags it needs sit — data
// version, status, position, MOTION_BLOCKING, sections' palettes and packed
// data, biomes — as offsets into the buffer, and skips everything else by
// length. Only the sections that hold a column's top and the two blocks
// above have their palettes resolved, and a palette entry is resolved by
// looking its raw bytes up in a bounded cache, so a block state seen before
// costs one map lookup and no allocation. Buffers, decompressors and parse
// state are pooled: a screened chunk allocates its world.Chunk and nothing
// else.
//
// Rejected alternatives: decoding into Go values with a general reflective
// NBT library (several times slower, allocates every list and string, and
// such decoders have failed on unknown names and on biome palettes of one
// or two entries); streaming the parse over the decompressor to stop early
// (the tags come in hash order, so the needed ones are rarely all early,
// and every read would cross an io.Reader).
//
// Hostile input: no length read from a file is used to allocate before it
// is checked against the bytes that remain; decompressed chunks are capped
// (Options.MaxChunkBytes); nesting is capped at 512; the name caches and
// the number of names the package adds to the process-wide tables are
// bounded.
package anvil
