// Package pipeline is the location cache of one region: backlog -> cold ->
// hot, the hot sinks that branch off the cold stage, the allocator that
// balances them on every pulse, and the persistence of verified locations.
//
// # Stages
//
//	memory -> Backlog        candidates (a spiral index and its chunk) drawn
//	                         through Options.Distribution; no I/O
//	Backlog -> Cold          screening (ScreenFunc): surface summaries only,
//	                         no reservation; a rejection is remembered with
//	                         memory.AddBad(index, cause, "")
//	Cold -> Hot sink         promotion: memory consulted (a chunk marked bad
//	                         since its screening is dropped, unreserved),
//	                         Reserve the chunk, the full check on the
//	                         resident chunk (CheckFunc), the verifiers
//	                         (verify.Registry), then an offer to the sink;
//	                         rejections are remembered with the cause (and
//	                         the verifier's source for safetyExternal)
//	Hot -> Cold              demotion: silent poll, close the reservation,
//	                         offer the bare location to cold
//
// Every edge is a stage.Transition, so every rejection carries a reason, and
// an error or a panic becomes stage.ReasonError, is logged at warning level
// and disposes the entry through its stage.
//
// # Draws
//
// Each candidate is a spiral index drawn from the region's memory table:
// uniformly among the selectable indices (memory.Table.Rand) by default, or
// at the rank Options.Distribution picks among them (memory.Table.Pick), so
// geom.Weighted and geom.Normal favour the centre or a ring. geom.Expand
// caps the ranks at the shape's Len: when the table's universe is larger
// than the shape, bad indices near the centre push the draw past the
// shape's edge (geom.ChunkAt maps those indices to chunks beyond it). The
// table's universe is fixed when it is made, so the expansion reaches at
// most Len - Shape.Len() indices out; past that the choice shrinks as it
// does without Expand.
//
// Memory remembers bad places only, so a good chunk can be drawn again
// while a location of it is still in the pipeline. The double-delivery
// guard holds the spiral index of every location in the pipeline, from the
// draw to the hand-out (or disposal): a draw of a held index, or a
// restored row of one, is skipped before any I/O and counted in
// Stats.Duplicates. No two locations of one chunk are ever ready at once,
// and none costs a second screening or reservation.
//
// # Sinks
//
// Hot sinks all hold *Hot entries (a Location with its open
// *world.Reservation):
//
//	general   Sink        capacity Options.General.Capacity (activeChunkCap, 10)
//	login     LoginSink   capacity playerCap - online; burst fill at start
//	network   NetworkSink token-leased (HMAC tokens); externally leased
//	personal  PersonalSink keyed by player; externally leased
//	group     GroupSink   keyed by profile (Size places within Radius):
//	                      entries are *Subspace, Size hot places each
//
// TakeGroup serves a group request from the group sink (see Group
// placements, below): the subspace of the smallest profile that
// holds the group, trimmed to it, the remainder disposed once.
//
// Take serves a request in one call: it picks the sink (the player's
// personal queue first, the login reserve with the general sink behind
// it, a network lease by token), waits on a miss for
// the next entry to land there, fails at once when the caller's Paused
// flag is set, and lets the caller's Admitter refuse an entry (unique
// placement), closing it.
//
// The hot stages' OnDispose closes the reservation and does nothing else:
// it is the only place a reservation held by a stage is closed. Demotion
// closes the reservation of an entry it has taken out of its stage, and a
// caller that took an entry (Take, Redeem) closes it with Hot.Close once the
// player has moved. Every close goes through one guarded release, and
// Stats.Reservations counts releases of reservations that were already
// closed (which a correct pipeline never does).
//
// # Transfers
//
// eligible implements the transfer-eligibility test: rule 0 (neither
// sink externally leased, source footprint >= destination footprint), then
// rule 1 (same cold source by identity and a destination that narrows
// nothing) or rule 2 (no extrinsic verifier on the destination and the
// destination's Accepts on the entry). Accepts is a recheck against the chunk
// the entry's own reservation holds: no chunk I/O, no verifier, and it fails
// closed on a nil or closed reservation. A transfer moves the entry and its
// reservation with PollSilent/OfferSilent in O(1): no reservation is opened
// or closed and no row is written. Between the group sink's partitions,
// rule 0 is subsumption (a subspace of Size N may serve a partition of
// Size k <= N); the transfer trims the subspace to k places and disposes
// the remainder through the source's stage, which closes its
// reservations, once.
//
// # Allocator
//
// Pulse does bounded work: it updates each sink's demand (an EWMA of
// requests per second), sets each sink's quota (the demand over
// Options.DemandHorizon, clamped between the sink's floor and capacity),
// expires network leases, transfers entries from sinks over quota to
// eligible sinks under quota, trims sinks whose capacity went down, starts
// promotions for sinks under quota (at most Budget.PromotionsPerPulse a
// pulse and Budget.MaxPromotions in flight), draws candidates and starts
// screenings. An entry is never moved or evicted for rebalancing before it
// has been in its sink for Options.MinResidence (60 s): a quota change is
// applied by gating promotions, and rebalancing never closes a reservation.
//
// # Scheduling
//
// The rule: a sink below its quota with places in cold is served first.
// Promotions take precedence over screening, drawing and every kind of
// pacing, and pacing applies only while every sink holds its quota. In
// detail:
//
//   - A sink falls short between pulses (a request takes an entry, a
//     promotion fails, a place lands in cold while the sink waits for
//     one): the promotions it lacks start at once, on the goroutine that
//     made it short (kick), bounded by Budget.MaxPromotions in flight but
//     not by the pulse or Budget.PromotionsPerPulse, which bound only the
//     pulse's own round (a quota that rose, a reload). A network lease
//     taken leaves its pool to the next pulse or kick.
//   - A promotion promises its turn of Options.Gate when it starts
//     (pacer.Gate.Promise). While any promotion is promised or waits for a turn,
//     the gate admits no screening, and a lane given back goes to urgent
//     work first (promotions, and the location writer's transactions,
//     which carry the hot marks a promoted entry waits for): a promotion
//     waits at most for the units already running, never for queued
//     screenings. TestPromotionsGoFirst pins it.
//   - Pacing (pacer.Gate: Pacing) applies only while requests come and every
//     pipeline holding the gate reports each sink at its quota, counting
//     its promotions in flight, with cold holding the next refill: the
//     smaller of the quotas' sum and a second of the sinks' demand. A sink
//     short of that, or a thinner cold, turns pacing off for all the work,
//     promotions included.
//   - While a sink lacks more places than cold holds, the refill waits on
//     screening and the requests on the refill: the gate then admits as
//     many screenings again on surge lanes (pacer.Gate: Surge).
//   - The group sink comes last: its promotions start only once every
//     single-target sink has all it needs, count in neither pacing nor
//     surge (a world with little room for groups never keeps the gate
//     busy), and back off, up to 256 rounds, after chunks that had no
//     room for a subspace.
//
// Screenings and promotions run on worker goroutines the Pipeline owns
// and reuses; Settle waits for them and Close stops them. A promoted
// entry waiting for its hot mark holds no goroutine: the Persister's
// commit delivers it (see Persister.MarkHot), and Settle and Close wait
// for that too. Options.Gate, shared by pipelines
// and the persister's writer, admits their processor work a few units at
// a time, so a process that also answers requests keeps a processor for
// them (see pacer.Gate). Options.OnPromote tells of every entry that lands in a
// sink (promotion, transfer, a network lease coming back), outside every
// lock, so a request waiting on an empty sink can retry at once rather
// than at the next pulse.
//
// # Group placements
//
// A group teleport places k players at once: k distinct safe columns
// within the group radius of their centre. The group sink caches
// maximal subspaces: for each shape profile (Profile: Size places within
// Radius blocks), subspaces of exactly Size places, and serves any group
// of k <= Size players from one of them (superset caching): the subspace
// is trimmed to k places and the rest of it, the remainder, is disposed
// through the sink's stage (OnDispose closes its reservations), once.
//
// A subspace grows from a cold location, its anchor, whose chunk the
// promotion reserves: the columns of that chunk within Radius/2 blocks of
// a centre point (the anchor's column, moved inwards so that the disk
// lies in the chunk when it can) are checked on the resident chunk with
// the region's full check (Options.Check, or the group criteria's), the
// verifiers are asked about the safe ones, and Size of them become the
// places, each holding its own reservation of the chunk (a place handed
// out is completed or cancelled on its own). The anchor's row stands for
// the subspace in the locations table and its spiral index in the
// double-delivery guard, so no single location of that chunk is cached
// beside it.
//
// Every place lies within Radius/2 of the centre point, so the centroid of
// any subset of them does too, and every place of the subset lies within
// Radius of that centroid: a subspace trimmed to any k places still fits
// its profile, and trimming never fails for a request of k <= Size.
//
// Design note. Rejected alternatives: places spread over the chunks
// around the anchor (several chunks reserved per subspace, a guard entry
// for each, and the guard's one-location-per-chunk rule broken by
// design); places within Radius of the anchor with the fit checked only
// for the whole set (a trimmed subset can then fall outside the radius
// of its own centroid: k-1 places at one edge and one at the other); and
// a search over subsets at hand-out time (work on the request path that
// the Radius/2 construction makes unnecessary).
//
// The group sink is keyed by profile (stage.Keyed): one partition per
// profile, each its own hot sink for budgeting and transfers. Unlike a
// personal bucket, a profile pins its entries to no holder, so the
// partitions are not externally leased, and the allocator moves
// subspaces between them: rule 0 of the transfer-eligibility test is
// subsumption (the source's Size, its chunkCostPerEntry, at least the
// destination's), which authorizes only the size comparison; the
// destination's Accepts must still certify the subspace (rule 2: some
// Size places of it fit the destination's radius and pass its check on
// the resident chunk). The transfer trims the subspace to the
// destination's Size and disposes the remainder through the source's
// stage, once.
//
// # Persistence
//
// The cold and hot stages' OnAdd and OnRemove write the locations table
// through a Persister: a row for each location from its ingress into cold
// until it leaves the pipeline (taken by a player, or disposed). Internal
// movement (promotion, demotion, transfer, lease, recycling after a
// transient failure) is silent and writes nothing. Shutdown (Close) is not a
// terminal removal: the process unloads its entries but the locations are
// still valid, so Close detaches the Persister before closing the stages,
// and on the next start Restore brings every row back as a cold entry. Clear
// is terminal and deletes the rows. Rows carry a Key derived from the
// region's seed and configuration (NewKey); the Persister drops rows of
// another key on Load, so a changed configuration never restores locations
// verified under the old one.
//
// # Statistics
//
// Stats returns fill, capacity, quota and demand per sink, promotions,
// rejections by reason, transfers, login-reserve exhaustion and, for the
// most recent misses, the fill and capacity of every sink at the instant of
// the miss: the joint state needed to decide between pooling and per-sink
// reservation. Held and Duplicates show the double-delivery guard, KnownBad
// the cold locations dropped without a chunk load because memory marked
// their chunk after they were screened.
//
// # Chunk loads
//
// A delivered location costs the load of its chunk, once: screening reads
// summaries through the terrain archive and reserves nothing, the guard
// keeps a second location of a chunk from being screened or reserved, and
// a location memory has meanwhile marked bad (unique placement, a
// rejection restored from probation) is dropped before its reservation.
// What remains above one load per location is a promotion rejected on the
// resident chunk: by the full check where it disagrees with the screen,
// or by a verifier, which runs after the check. Each such rejection is
// remembered, so a claimed chunk costs one load the first time it is
// drawn and none after; the ratio falls as memory meets the claims.
// TestChunkLoadsPerLocation and BenchmarkPipelineThroughput measure it on
// the procedural world.
package pipeline
