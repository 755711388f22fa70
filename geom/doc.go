// Package geom holds the geometry of random selection: typed block, chunk and
// region coordinates, the shapes a region may take (circle, square, rotated
// rectangle, each with an optional hole), the exact spiral bijection between
// the chunks of a shape and the integers [0, N), and the distributions that
// turn a uniform draw into an index.
//
// A Shape numbers its chunks along a spiral outwards from its centre, ring by
// Chebyshev ring, so that nearby indices are nearby chunks and runs of bad
// indices in the memory table stay few. Chunk(i) and Index(c) are exact
// inverses over every index; Beyond and BeyondIndex continue the same spiral
// outside the shape, for the "expand" selection mode (see Expand, ChunkAt and
// IndexOf). The design note in spiral.go explains the ring-clipped spiral.
//
// A Distribution (Flat, Weighted, Normal, optionally wrapped in Expand) maps
// a uniform draw to a rank, which the memory table turns into the index of a
// selectable chunk.
//
// A ShapeSpec is a region's area as a person writes it, in blocks: the one
// description every package shares (the configuration file decodes into
// it, the engine takes it); its Build makes the Shape of chunks.
//
// Shapes accept radii up to MaxRadius and centres within MaxCenter; their
// constructors report every invalid parameter at once. Every Shape is
// immutable after construction and safe for concurrent use; Chunk, Index,
// Beyond and BeyondIndex do not allocate.
package geom
