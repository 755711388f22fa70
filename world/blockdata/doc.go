// Package blockdata knows the collision shape of every Minecraft block
// state, per game version from 1.8 to the newest release the pinned data
// set covers, reduced to what a landing check asks: can a player stand on
// the block, walk through it, or suffocate inside it.
//
// The tables are generated (tables_gen.go; DATA.md names the data set,
// its licence and the versions each table covers) from the collision
// shapes and block states of the minecraft-data package. Each table
// answers both kinds of block a world can hold: modern block states
// ("minecraft:oak_slab[type=bottom,waterlogged=false]") and pre-1.13
// numeric ids with their metadata. A table of 1.8 to 1.12 answers block
// states from the oldest 1.13+ data; a 1.13+ table answers numeric ids
// from the newest pre-1.13 (1.12) data.
//
// The data is decoded the first time a table is used, not at init.
// Everything here is immutable and safe for concurrent use.
package blockdata

//go:generate go run ./internal/gen -out tables_gen.go -notice DATA.md
