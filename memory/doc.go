// Package memory is the spatial memory of rejected places: cause-tagged
// run-length intervals over a shape's spiral index, so random selection can
// skip places already known to be bad, and places rejected for dynamic
// reasons (claims, placement spacing) come back on their own.
//
// # Tiers and lifecycle
//
// Every Cause belongs to a tier. Static causes (biome, worldBorder, vert,
// safety, prefilterBiome, prefilterRange) never expire. Dynamic causes
// (safetyExternal, uniquePlacement, ungenerated, unreadable) live for a TTL
// resolved per rejection (see package ttl: verifiers.<source>, then
// causes.<cause>, then the built-in default); a dynamic rejection whose TTL
// resolves to permanent joins the static tier. Transient causes (timeout,
// nullChunk) are counted but never stored.
//
// Ungenerated and unreadable describe the world's data, not the place:
// they are kept so that a chunk not generated yet, or damaged on disk,
// costs one read rather than one per draw, and so that a region whose
// every chunk is rejected is seen to be (Selectable is 0). Their TTLs are
// short (10 minutes and 1 hour by default) for worlds nobody watches; a
// watched Minecraft world forgets (Forget) a chunk as soon as its file
// changes. Their runs are exact: they absorb no gap of the spatial
// resolution and join only touching runs of their own cause, so a good
// chunk between two damaged ones stays selectable.
//
// The cause is one byte of a memory file: a file holding an unreadable
// run (cause 11) is refused as corrupt by versions that predate it.
//
// A dynamic run is active (not selectable) until its expiry, on probation
// (selectable, but remembered) from expiry to expiry+TTL, and forgotten
// after. A dynamic rejection inside a probation run restores the whole run
// at once, so a claim that is still there costs one check, not a rescan.
// The restore refreshes the run's TTL as runs that meet in a rebuild do:
// it keeps the larger of the run's TTL and the rejection's, both as its
// stored TTL and for its new active period (expiry now + that TTL), so a
// long-lived run re-hit by a short-lived verifier keeps its own window.
//
// # The TTL of a run
//
// The probation window needs each run's TTL. The table keeps it per run (4
// bytes), so a verifier with its own TTL gets exactly its own window while
// the process runs. The file format (versions 3 and 4) stores only the
// expiry, so on load the TTL is derived from the cause: after a restart, a
// run attributed to a verifier with a custom TTL gets its cause's window
// for the rest of its probation.
//
// # Files
//
// Save writes format version 4 (see file.go): a CRC-32C over the whole file,
// and the identity of the index space (the shape's description and length,
// the universe size), so a damaged file is refused as corrupt and a file
// written for another shape is refused (ShapeMismatchError) instead of
// marking the wrong chunks. Versions 1 to 3 still load, unchecked.
//
// # Concurrency
//
// Selection (Rand, Select, IsBad) reads an immutable snapshot published
// atomically, with one search per call, no lock and no allocation.
// Rejections (AddBad) queue under a mutex and become visible at the next
// rebuild, which Run performs when enough are pending and periodically, off
// the selection path.
//
// # Layout
//
// Per run the table holds its start, the count of bad cells before it (a
// prefix sum), its cause, expiry and TTL: 29 bytes, plus about one byte of
// search index (see search.go); 30.1 bytes per run in all.
package memory
