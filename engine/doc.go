// Package engine ties the parts of rtp together: for each configured world
// a chunk source behind the terrain archive and a resident chunk store,
// and for each configured region its shape and distribution, its spatial
// memory, its location pipeline, its safety rules, its verifiers and the
// TTL policy that says how long rejections are remembered.
//
// # Lifecycle
//
// New opens everything a configuration names, in the data folder:
//
//	<data>/archive.db          terrain archive (SQLite); a failure to open it
//	                           is logged once and the archive is disabled
//	<data>/ttl.yml             TTL policy (ttl.LoadFileOrDefault)
//	<data>/claims.db           claims store, verifier source "claims"
//	<data>/rtp.db              locations of every region (sqlitepersist)
//	<data>/memory/<region>.bin spatial memory of each region
//
// and restores each region's persisted locations as cold entries. Run then
// drives every region: one pulse loop per region (Region.Pulse period)
// calling pipeline.Pulse, the memory table's rebuild loop, and a periodic
// save of the memory file. When Run's context ends it shuts down in order:
// intake stops (waiting teleports fail with ReasonShutdown), the region
// loops return, each pipeline closes (its hot reservations closed, its
// locations kept for the next start), each memory file is saved, the
// archive flushes and closes, each resident store closes (closing any
// reservation still open), and the databases close. Close does the same
// shutdown for an Engine that was never run.
//
// # Teleports
//
// Teleport takes a location from a region's general hot sink (or a named
// extra sink). On a miss it waits, bounded by its context, for the next
// pulse of the region and tries again. It never fails silently: every
// failure is an *Error carrying a Reason. The location's reservation stays
// open until Complete is called with its ID (or the engine shuts down).
//
// # Limits of this first cut
//
// Minecraft worlds and http verifiers are refused with a "not supported
// yet" error. One archive store serves the first procedural world (in name
// order); other procedural worlds run without one, as an archive store
// belongs to one archive at a time. Only the general sink and extra sinks
// serve teleports; the login, network, personal and group sinks are not
// wired.
package engine
