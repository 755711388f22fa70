// Package engine ties the parts of rtp together: for each configured world
// a chunk source behind the terrain archive and a resident chunk store,
// and for each configured region its shape and distribution, its spatial
// memory, its location pipeline, its safety rules, its verifiers and the
// TTL policy that says how long rejections are remembered. It is the
// service API the HTTP server (package server) is written against.
//
// # Spec
//
// An Engine runs a Spec: plain Go values naming the data folder, the
// worlds (built-in procedural or Minecraft worlds, or any world.Source of
// the embedder's), the regions with their fixed settings and their live
// ones (RegionLive, which Reload applies), the verifiers and the handout
// bounds. The engine knows nothing of YAML: package config translates an
// rtp.yml into a Spec (config.Config.Spec). A Go program embeds the engine
// by writing a Spec itself (see the example and examples/embed); the zero
// Spec runs one procedural world with one default region.
//
// # Lifecycle
//
// New opens everything a Spec names, in the data folder:
//
//	<data>/archive.db          terrain archive (SQLite) of the first
//	                           procedural world, in name order; a failure
//	                           to open it is logged once and that world
//	                           runs without an archive
//	<data>/archive-<world>.db  the archive of every other procedural world
//	                           (beside the configured archive path: its
//	                           name without extension, "-<world>", and its
//	                           extension), since an archive store serves
//	                           one archive at a time
//	<data>/ttl.yml             TTL policy (ttl.LoadFileOrDefault)
//	<data>/claims.db           claims store, verifier source "claims"
//	<data>/rtp.db              locations of every region (sqlitepersist)
//	<data>/memory/<region>.bin spatial memory of each region
//
// and restores each region's persisted locations as cold entries. Every
// region's pipeline shares one screening gate (Options.ScreenWorkers over
// Spec.ScreenWorkers: by default GOMAXPROCS-1), so the
// refill never takes every processor from the requests. Run then drives
// every region: one pulse loop per region (Region.Pulse period)
// calling pipeline.Pulse, the memory table's rebuild loop, a periodic save
// of the memory file and the unique-placement marker; and one sweep that
// closes the locations handed out and never completed
// (Options.HandoutLifespan). When Run's context ends it shuts down in
// order: intake stops (waiting teleports fail with ReasonShutdown), the
// region loops return, each pipeline closes (its hot reservations closed,
// its locations kept for the next start), each memory file is saved, every
// location handed out is closed, the archives flush and close, each
// resident store closes (closing any reservation still open), and the
// databases close. Close does the same shutdown for an Engine that was
// never run. Ready reports when every region has finished its first pulse.
//
// # Teleports
//
// Teleport takes a location from, in order of the Request: a network
// token's lease (Token), the login reserve (Sink "login", falling through
// to the general sink when empty), the player's personal queue (when it
// holds a location, or explicitly with Sink "personal"), a named extra
// sink, or the general sink: one call of pipeline.Pipeline.Take, which
// routes the request and, under unique placement, asks the engine to
// admit each entry. On a miss it waits, bounded by its context, for the
// next entry to land in the sink it waits on (a promotion, a transfer or
// a returning lease), and tries again; a region whose scan is paused fails at once with ReasonPaused. It
// never fails silently: every failure is an *Error carrying a Reason. The
// location carries the biome of its landing column, the sink that served
// it and how long the request took; its reservation stays open until
// Complete (the player arrived), Cancel (the player gave up: the location
// goes back to cold) or the end of its lifespan.
//
// The hit path takes no lock but one shard of the handout table and the
// resident store's on Complete, and does not allocate (see
// BenchmarkTeleportHot); its durations feed a lock-free log-bucket
// histogram (Stats.Latency).
//
// Join and Quit drive the login reserve, OpenQueue and CloseQueue the
// personal queues, and Reserve, Redeem and Release the network leases.
//
// # Verifiers
//
// The claims store verifies every region when no verifier is configured,
// and otherwise the regions its claims verifiers list. Each http verifier
// (verify/httpverify) is registered as an async verifier, under its
// configured name, on each region it lists; the sinks of such a region
// declare pipeline.Criteria.Extrinsic, so they take transfers only by
// provenance. Rejections are remembered as safetyExternal attributed to
// the verifier's name (its TTL: ttl.yml verifiers.<name>).
//
// # Unique placement
//
// With RegionLive.UniqueRadius positive (default 2 blocks), no spot is
// handed out twice while its mark lasts (TTL causes.uniquePlacement), and
// none closer than the radius to another. Spots are kept column by column
// (placement.go: 256 bits per chunk that holds one), checked and recorded
// in one step when an entry is taken from a sink (the pipeline's admission
// hook), skipped by screening, and journaled with the location writes so
// that a crash loses none. A radius that leaves a whole chunk without a
// free column also marks that chunk in memory, off the teleport path; past
// 64 blocks spacing is kept chunk by chunk (every chunk whose centre lies
// within the radius). Locations cached in a marked area, or too close to a
// spot handed out since they were cached, are closed when taken instead of
// handed out (Stats.Unique.Dropped). Leases already reserved for a network
// token are handed out regardless, since they were promised, and their
// spot is recorded. A cancelled location's spot is released and the
// location given back to cold.
//
// # Scan control and reload
//
// ScanPause stops a region's pulses (teleports are still served from what
// is ready), ScanResume restarts them, ScanReset empties the region's
// memory (an empty memory file loaded into its table) and its pipeline,
// and ExportMemory writes the memory's debug JSON. Reload applies a new
// Spec's live settings (the TTL policy, each region's RegionLive: sink
// capacities, login player cap, pulse period, budget, unique-placement
// radius; which regions the claims store verifies) and refuses, applying
// nothing, one that changes anything else (ReasonRestartNeeded, with a
// *RestartError naming each changed field).
package engine
