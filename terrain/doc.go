// Package terrain defines heightfield tiles and the Source interface that
// every terrain producer (the procedural generator, region-file readers, an
// embedder's own) implements, plus the validation every cached tile must
// pass before it is trusted.
//
// A Tile is an immutable value once returned by a Source: callers must not
// modify its slices, and Sources must not modify them after returning.
package terrain
