// Package world is the chunk model safety works on: chunks of 16x16 columns,
// each summarised by what a landing check needs (the top block, the two
// blocks above it, the biome), interned block and biome names, and the
// Source interface every world (the procedural one, Minecraft region files,
// an embedder's own) implements.
package world
