// Package world is the chunk model safety works on: chunks of 16x16 columns,
// each summarised by what a landing check needs (the top block, the two
// blocks above it, a fluid on top, the biome), interned block and biome
// names, and the Source interface every world (the procedural one in
// world/procworld, Minecraft region files in world/anvil, an embedder's
// own) implements, with the optional cheaper Screener path.
//
// The resident chunk store (Resident) keeps loaded chunks in memory while
// reservations are open on them: Reserve loads a chunk off the caller's
// request path (concurrent reservations of one chunk load it once), Close
// is idempotent, unreserved chunks are evicted least recently used beyond a
// budget, and a watchdog force-closes reservations older than their
// lifespan. It is the only way the pipeline holds chunks, so reservations
// opened always equal reservations closed.
package world
