// Package geom holds the geometry of random selection: typed block, chunk and
// region coordinates, the shapes a region may take (circle, square, rotated
// rectangle, each with an optional hole), the exact spiral bijection between
// the chunks of a shape and the integers [0, N), and the distributions that
// turn a uniform draw into an index.
//
// Every Shape is immutable after construction and safe for concurrent use.
package geom
