// Package procgen is rtp's built-in procedural world: a deterministic,
// seamless terrain.Source at Minecraft scale (elevations are block y, the
// world spans y MinY..MaxY, sea level 63 by default) that `rtp serve` runs
// on when no world is given.
//
// A Generator turns Params into tiles (Tile) and single block columns
// (Column). Every sample is a pure function of the Params and the sample's
// world position, so overlapping tiles agree bit for bit on shared
// positions, whatever their origin, resolution or order.
//
// # Terrain
//
// The ground is built from multi-octave gradient (Perlin) noise: a
// domain-warped continental field chooses ocean and land through a coast
// spline, rolling hills ride on it, ridged multifractal mountains rise where
// a low-frequency mask allows, uplands are terraced into benches and cliffs
// where a cliff mask allows, and volcanic cones (at most one per 2048-block
// square, VolcanicFrequency being the chance) carry a lava-filled crater and
// lava channels. Temperature (falling with altitude) and moisture choose the
// covers of dry land: beach, plains, forest, desert, mountains (also any
// slope above 0.7), snow, swamp, volcanic rock and lava.
//
// # Drainage
//
// Rivers and lakes need a view wider than one sample, which threatens
// seamlessness: computed per requested tile they would depend on the tile.
// Instead drainage is computed on fixed, world-aligned drainage cells of
// 1024 x 1024 blocks, on a node grid with one node every 8 blocks that
// extends an apron of 384 blocks beyond the cell, so water from upstream
// neighbours already flows into the cell. A priority flood (lowest first,
// ties by insertion order) fills depressions and gives every node a
// receiver; flow accumulation in reverse flood order, weighted by rainfall
// from moisture, marks rivers, which are carved below their banks with a
// water surface under the bank level; filled depressions deep and large
// enough become flat lakes. A sample reads the cell's carve depth, water
// surface and river/lake weights bilinearly at a slightly warped position
// (so channels meander off the grid's rows and diagonals); within 64 blocks
// of a cell edge it blends the neighbouring cells' fields with a smoothstep
// of the distance to the edge, a formula both sides of the edge share.
// Ground below sea level is ocean.
//
// A Generator keeps the most recently used drainage cells (Options.
// CacheCells, default 48, about 200 KB each); concurrent requests for one
// cell compute it once. Rejected alternatives: per-tile drainage (tiles
// would disagree at seams); one global drainage pass (unbounded); a larger
// apron only (still seams, only rarer, and quadratically more work per
// cell) — the apron plus a blend band keeps cells cheap and seams invisible
// in practice, with each sample still a pure function of position.
//
// # Cross-platform determinism
//
// Archives key tiles by producer version, so the same Params must give the
// same bytes on amd64 and arm64. The Go spec lets a compiler fuse x*y + z
// into one fused multiply-add (arm64 does; amd64 does with GOAMD64=v3),
// which rounds once instead of twice. All sampled arithmetic therefore
// wraps each product that feeds a sum in an explicit conversion,
// float64(x*y) + z, which the spec says must round; TestNoFusedMultiplyAdd
// compiles the package for arm64 and amd64/v3 and fails on any fused
// instruction. The arithmetic uses only +, -, *, /, math.Floor, math.Abs
// and math.Sqrt (all exact or correctly rounded everywhere); no
// math.Sin/Cos/Exp/Pow/Log, whose results may differ by platform. Sample
// positions are computed as one correctly rounded division of an exact
// integer numerator, so the same rational position always yields the same
// float64. The fingerprint test pins two reference tiles to Version.
package procgen
