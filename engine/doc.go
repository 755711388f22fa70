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
// ones (RegionLive, which Reload applies), the verifiers, the handout
// bounds, the terrain archive and the fleet (see Fleet). The engine knows
// nothing of YAML: package config translates an
// rtp.yml into a Spec (config.Config.Spec). A Go program embeds the engine
// by writing a Spec itself (see the example and examples/embed); the zero
// Spec with its Stores set runs one procedural world with one default
// region.
//
// # Stores
//
// The engine links no store of its own: Spec.Stores (see package stores)
// opens where it keeps its state, and a program links only the stores it
// picks. Package stores/sqlite keeps every store in a file of the data
// folder (what an embedder wants: it links SQLite and no other database);
// package stores/fleet adds PostgreSQL and Redis wherever Spec.Fleet and
// Spec.Archive name their URLs (package config sets it, for rtp serve).
// New fails at once, naming both, on a Spec without Stores: the engine
// has no default it could open without linking a driver, and keeping the
// locations, the claims and the network leases in memory only would
// silently lose, at a restart, what unique placement and the network
// tokens rely on.
//
// # Lifecycle
//
// New opens everything a Spec names, with its Stores, in the data folder:
//
//	<data>/archive.db          terrain archive of the first procedural
//	                           world, in name order, and beside it one
//	                           per other procedural world; a failure to
//	                           open one is logged once and that world
//	                           runs without an archive; on a full disk at
//	                           start they give room to the other stores
//	                           (see package stores/sqlite)
//	<data>/ttl.yml             TTL policy (ttl.LoadFileOrDefault)
//	<data>/claims.db           claims store, verifier source "claims"
//	<data>/rtp.db              locations of every region, and the network
//	                           leases
//	<data>/memory/<region>.bin spatial memory of each region
//
// (with stores/fleet and Spec.Fleet.DatabaseURL, the claims and the
// locations live in that PostgreSQL database instead of claims.db and
// rtp.db, and with Spec.Archive.URL the archives in PostgreSQL schemas
// instead of files), and restores each region's persisted locations as cold entries. Every
// region's pipeline, and the SQLite location writer, share one gate
// (Options.ScreenWorkers over Spec.ScreenWorkers: by default GOMAXPROCS-1
// lanes) that admits the refill's processor work, promotions before
// screenings, and paces it while requests come and the sinks hold their
// quotas (see pacer.Gate), so the refill never takes every processor
// from the requests nor holds one for long, and never starves a sink
// while it screens. Run then drives
// every region: one pulse loop per region (Region.Pulse period) calling
// pipeline.Pulse, the
// memory table's rebuild loop, a periodic save of the memory file and the
// unique-placement marker; one sweep that closes the locations handed out
// and never completed (Options.HandoutLifespan); the change watcher of each
// Minecraft world (unless Options.WatchPeriod is negative), which also ends
// the holds on chunks a game server reported changed (ChunksChanged); and, in a
// fleet, the fleet's upkeep (see Fleet). When Run's context ends it shuts
// down in order: intake stops (waiting teleports fail with ReasonShutdown),
// the region loops return, each pipeline closes (its hot reservations
// closed, its locations kept for the next start), each memory file is
// saved, every location handed out is closed, a shared network lease store
// closes (keeping the leases, for the other nodes to redeem), the archives
// flush and close, each resident store closes (closing any reservation
// still open), and the databases close (a fleet node's gives its rows back
// to the fleet). Close does the same shutdown for an Engine that was never
// run. Ready reports whether Run runs, every region has finished its first
// pulse and, in a fleet, the database answers.
//
// # Teleports
//
// Teleport takes a location from, in order of the Request: a network
// token's lease (Token), the login reserve (Sink "login", falling through
// to the general sink when empty), the player's personal queue (when it
// holds a location, or explicitly with Sink "personal"), or the general
// sink (Sink "general", or by default): one call of pipeline.Pipeline.Take,
// which routes the request and, under unique placement, asks the engine to
// admit each entry. On a miss it waits, bounded by its context and
// Request.Wait, for the next entry to land in the sink it waits on (a
// promotion, a transfer or a returning lease), and tries again; a region
// whose scan is paused fails at once with ReasonPaused. It never fails silently: every failure is an
// *Error carrying a Reason. The location carries the biome of its landing
// column, the sink that served it and how long the request took; its
// reservation stays open until Complete (the player arrived), Cancel (the
// player gave up: the location goes back to cold) or the end of its
// lifespan.
//
// The hit path takes no lock but one shard of the handout table and the
// resident store's on Complete, and does not allocate (see
// BenchmarkTeleportHot); its durations feed a lock-free log-bucket
// histogram (Stats.Latency).
//
// GroupTeleport places a group: one location per player, all within the
// region's group radius of their centre (RegionSpec.Sinks.Group), from
// one subspace of the region's group sink trimmed to the group (one call
// of pipeline.Pipeline.TakeGroup). Each place is then a handout of its
// own, completed, cancelled or expired by its ID like a teleport's; under
// unique placement the group is admitted all or none.
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
// # Fleet
//
// Spec.Fleet makes the engine one node of a fleet: several engines,
// usually rtp serve processes behind a load balancer, sharing their state
// (docs/fleet.md is the operator's guide), which Spec.Stores opens
// (package stores/fleet; its stores.Fleet is what the engine drives).
// Each part is optional:
//
//   - FleetSpec.DatabaseURL, a PostgreSQL database holding the locations
//     of every region with their memory journal and spots
//     (pipeline/pgpersist) and the claims (verify/claims/pgclaims);
//   - FleetSpec.LeasesURL, a Redis holding the network leases
//     (lease/redis), so that a token reserved through one node is
//     redeemed through any other;
//   - FleetSpec.Node, the node's name in the database and in the leases
//     it grants. Default: the host name, a dash and six random hex
//     digits, drawn by New, so that a fleet should set it for a restarted
//     node to find, and clean up after, its previous run;
//   - FleetSpec.NodeLease (DefaultNodeLease, 15 s), how long the node's
//     claims on shared rows outlive its last heartbeat.
//
// The terrain archive is shared apart (ArchiveSpec.URL).
//
// With a database, New registers the node, and Run adds the fleet's
// upkeep. Every 2 s each region's pipeline gets its share of the chunks
// among the live nodes serving the region (pipeline.Pipeline.SetShare),
// so that the nodes screen different candidates and together draw from
// the region's distribution as one node would. The rejections and spots
// the other nodes commit reach the region's memory and placements when
// the database's notification arrives (stores.Fleet.Listen), or at the
// next read of the feed, every second; the writer's 100 ms batch delay is
// most of the delay. Every 250 ms, while its cold stage has room, a region
// claims rows no node owns (those of nodes that stopped, or that died,
// returned by a sweep a tenth of a lease after their lease lapsed) and
// adopts them into cold (pipeline.Pipeline.Adopt), drawing no new
// candidates while the pool may hold more (pipeline.Pipeline.HoldDraws).
// Hot marks are checked row by row: an entry whose row another node owns
// is dropped at promotion (pipeline.ErrNotOwned), never served.
//
// The database is pinged
// every second; while it does not answer the node is degraded: Ready
// fails, FleetStats.Degraded is set, the hot entries held are served and
// none is promoted, and one warning is logged, then one line when it
// answers again. A node whose lease was lost (FleetStats.LeaseLost)
// promotes and claims nothing and rejoins at its next heartbeat as a new
// run of its name; its cold entries whose rows another node claimed
// meanwhile are dropped at promotion. At shutdown the node gives its rows
// back to the pool and records a clean stop.
//
// With a lease store, the node that reserved a token keeps its entry while
// the lease lasts and returns it to its pool only once the store confirms
// the release; a network call the store cannot decide fails with
// ReasonLeasesUnavailable. Stats.Fleet (FleetStats) describes the node's
// part in each region.
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
//
// # Watching from beside the engine
//
// The engine knows no tool that shows it (the web map adapts it in
// package webmap/enginemap). OnHandout subscribes a function to every
// location handed out; it runs on the hand-out path and must be fast and
// never block, and costs one atomic load while nobody subscribed. World,
// Region.World, Region.ShapeSpec and Region.Border, with Region.Memory,
// Region.Pipeline and Region.Checker, read the worlds and regions without
// changing them.
package engine
