// Package procworld is the procedural world as a chunk source: New wraps a
// terrain.Source — normally an archive.Archive in front of a
// procgen.Generator, so tiles are generated once and then read from the
// archive — in a World that implements world.Source (Load: column
// summaries and blocks) and world.Screener (Summary: column summaries
// only).
//
// # Tiles
//
// A World reads square tiles of Options.TileSize (T) blocks on a fixed,
// world-aligned grid, at one sample per block (Resolution T, so sample i
// sits on block centre origin+i+0.5, exactly where procgen.Column samples)
// with a border of one sample for the slope of edge columns. Since T is a
// power of two of at least 16, a chunk's 16x16 columns are samples of
// exactly one tile. A small in-process cache (Options.CacheTiles, least
// recently used first, bounded by entries) keeps recent tiles so that the
// chunks of one tile, and Summary followed by Load of one chunk, read the
// archive once; concurrent misses for one tile share one read.
//
// The output does not depend on T: every column is a function of its own
// sample, its four neighbours' elevations (in the tile or its border) and
// its chunk's samples, never of where the tile ends. T sets the cost.
// Measured with BenchmarkSummary (Load costs the same: neither builds
// the columns, which a chunk derives when read, about 50 ns each), per
// chunk, on 2 shared cores, one run (December 2026):
//
//	T     random chunk,     sweep (next      random chunk,    archive
//	      warm archive      chunk)           archive miss     record
//	16        14 µs            16 µs            0.4 ms          2.6 KB
//	32        30 µs             9 µs            1.5 ms          9.7 KB
//	64        87 µs             7 µs            5.8 ms           38 KB
//	128      307 µs             6 µs             24 ms          150 KB
//	256     1251 µs             6 µs            102 ms          594 KB
//
// "Random chunk, warm archive": every chunk on a different tile, read from
// an archive over a memory store; "sweep": chunks in row order, one archive
// read per T*T/256 chunks; "archive miss": the tile is generated (drainage
// cells warm). Making a chunk of a cached tile costs 1.5 µs
// (BenchmarkSummary/cached): the rest of the sweep figure is the tile's
// read, shared by its chunks.
//
// DefaultTileSize is 64. Screening draws chunks at random over a region,
// so the random-chunk columns decide. A warm read at 64 costs about six
// times a tile of 16 (256: 90 times) and a miss generates 16 chunks'
// worth of samples (256: 256 chunks' worth, a tenth of a second for
// a chunk nobody may ask for twice). Smaller tiles read faster but put one
// archive record on every 1 to 4 chunks: the default archive limits
// (65,536 records, 4 GiB) hold about a million chunks at 64 (a 16384-block
// square, 2.5 GB), 262,144 at 32 and 65,536 at 16, so on a large region the
// archive of small tiles keeps missing, and a miss costs ten to a hundred
// times a warm read.
//
// # Columns
//
// The top of a column is floor(elevation), clamped to [MinY, MaxY-1]; its
// ground block, the two blocks above and its biome come from the sample's
// cover:
//
//	ocean, river, lake   water; the top is the water surface (floor of
//	                     it; the bed at least one block lower); biomes
//	                     ocean (deep_ocean from 30 blocks of water), river,
//	                     rtp:lake
//	beach, desert        sand (desert: 0.8% cacti 1 to 3 high, dead bushes)
//	plains               grass_block with short grass (20%) and flowers (3%)
//	forest               grass_block under oak trees: leaves top the
//	                     columns of their canopies, 3 to 6 blocks above the
//	                     ground (about half the forest floor)
//	swamp                grass_block with pools of water one block deep
//	mountains            stone (gravel on cliffs); biome stony_peaks
//	snow                 snow_block with patches of powder_snow; biome
//	                     snowy_plains, snowy_slopes from y 128
//	volcanic             basalt, magma_block next to lava in the chunk;
//	                     biome rtp:volcanic
//	lava                 lava; biome rtp:volcanic
//
// Column.Fluid is set on water and lava tops (world.IsFluid of the ground).
// Ground 3 blocks or more above or below a neighbour's is a cliff: grass,
// sand, snow and stone there give way to bare stone with gravel scree (the
// generator already turns slopes steeper than 0.7 into mountains, so this
// shapes mountain cliffs and carved river banks).
//
// Under the default safety rules water, lava, magma, powder snow, cacti and
// leaves are unsafe and the plants are air-like. Over a 16384-block square
// of the default world (one chunk every 256 blocks, as TestUnsafeShare
// samples a smaller square) 56% of columns are unsafe, 22% of land columns
// (all but ocean, river and lake), and 38% of chunks have no safe column.
//
// Decorations (trees, cacti, plants, pools, powder snow) are pure functions
// of (seed, x, z) built from integer hashing: the seed is the generator's
// (procgen.Params.Seed) and each decoration lives on its own grid of cells
// (a tree per 5x5 cell at most, a pool per 8x8...), so a chunk stamps the
// few cells that can reach it. Chunks are reproducible across runs,
// platforms, tile sizes and load orders.
//
// # Chunks and blocks
//
// A loaded chunk stores no column summaries and no blocks. It keeps its
// tile's grid (shared with the tile cache and the tile's other chunks),
// its place in it and its decorations, a byte a column, and derives a
// column's summary when asked (world.Chunk.Summaries): some 400 bytes a
// chunk where stored summaries and block profiles took 9 KiB, for a
// server that keeps a chunk resident for each of thousands of ready
// places. Deriving a column costs about 50 ns (BenchmarkColumn); a
// landing check reads one or two.
//
// Load's world.BlockReader computes blocks on demand from a profile of at
// most four layers per column under the summary, derived with it: dirt
// under grass, sand and sandstone under sand, water down to a bed of sand,
// gravel, clay or mud, lava over basalt, a canopy over air or an oak trunk
// over grass; then stone, deepslate below y 0 and bedrock at MinY. So
// linear or jump vertical strategies find the ground under a canopy
// without 16x16x384 blocks ever being stored.
package procworld
