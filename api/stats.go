package api

import "time"

// Stats is the answer of GET /v1/regions/{region}/stats: a snapshot of one
// region's state and counters. Counters count since the server started;
// gauges are the value at the snapshot. Counters are read one by one, so
// under load the snapshot is not atomic.
//
// Maps and lists are never null on the wire: an empty one is {} or [].
type Stats struct {
	Region string `json:"region"`
	World  string `json:"world"`
	// Paused reports whether the region's scan is paused.
	Paused bool `json:"paused"`
	// Restored is the number of cold locations restored at start.
	Restored int `json:"restored"`
	// Latency summarizes the durations of the teleports served (misses
	// and failures excluded).
	Latency Latency `json:"latency"`
	// Served counts the locations handed out, by the name of the sink
	// that served them.
	Served map[string]uint64 `json:"served"`
	// Pipeline are the location pipeline's queues, sinks and counters.
	Pipeline PipelineStats `json:"pipeline"`
	// Memory summarizes the region's spatial memory of rejected places.
	Memory MemoryStats `json:"memory"`
	// Resident is the resident chunk store of the region's world.
	Resident Resident `json:"resident"`
	// Unique is what unique placement did.
	Unique UniqueStats `json:"unique"`
	// UnknownBlocks counts the block names the collision data does not
	// know, which are never landed on.
	UnknownBlocks UnknownBlocksStats `json:"unknownBlocks"`
	// Watch is what the change watcher of a Minecraft world saw; nil (the
	// key absent) for other worlds or with watching off.
	Watch *WatchStats `json:"watch,omitempty"`
	// Fleet is the node's part in a fleet; nil (the key absent) when the
	// server runs alone.
	Fleet *FleetStats `json:"fleet,omitempty"`
	// Recovery is what the region found of the previous run at start.
	Recovery RecoveryStats `json:"recovery"`
	// Handouts count the locations handed out and how they closed.
	Handouts HandoutStats `json:"handouts"`
	// Exhaustion tells whether the region has no safe place left.
	Exhaustion ExhaustionStats `json:"exhaustion"`
}

// ExhaustionStats tell whether a region is exhausted: its memory holds
// every place as rejected and nothing is cached, so teleports are answered
// 503 region-exhausted at once. It ends by itself when memory has places
// again (rejections expired, or the world's chunks changed).
type ExhaustionStats struct {
	// Exhausted reports whether the region has no safe place left.
	Exhausted bool `json:"exhausted"`
	// Since is when it became exhausted; nil (the key absent) when it is
	// not.
	Since *time.Time `json:"since,omitempty"`
	// ByCause is memory's rejected cells by cause when the region became
	// exhausted; empty when it is not.
	ByCause map[string]int64 `json:"byCause"`
	// Times counts the times the region became exhausted since start.
	Times uint64 `json:"times"`
}

// SinkFill is the fill and capacity of a queue or sink at one instant.
type SinkFill struct {
	Name     string `json:"name"`
	Fill     int    `json:"fill"`
	Capacity int    `json:"capacity"`
}

// SinkStats describe one hot sink (general, login, network, personal,
// or a partition of the group sink).
type SinkStats struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Fill     int    `json:"fill"`
	Capacity int    `json:"capacity"`
	Quota    int    `json:"quota"`
	// Leased is the number of entries held by network tokens (network
	// sink; 0 for the others).
	Leased int `json:"leased"`
	// DemandPerSecond is the sink's request rate (an exponentially
	// weighted moving average), in requests per second.
	DemandPerSecond float64 `json:"demandPerSecond"`
	// Pending is the number of promotions in flight to the sink.
	Pending int    `json:"pending"`
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`
	// Stale counts entries found with a closed reservation; Changed those
	// disposed because their chunk changed at the source.
	Stale      uint64 `json:"stale"`
	Changed    uint64 `json:"changed"`
	Promotions uint64 `json:"promotions"`
	// Mismatched counts promotions the sink's criteria refused.
	Mismatched   uint64 `json:"mismatched"`
	TransfersIn  uint64 `json:"transfersIn"`
	TransfersOut uint64 `json:"transfersOut"`
	Demotions    uint64 `json:"demotions"`
	Trims        uint64 `json:"trims"`
	// Group describes a partition of the group sink (kind "group"),
	// whose fill, capacity and quota count subspaces; absent for the
	// other sinks.
	Group *GroupSinkStats `json:"group,omitempty"`
}

// GroupSinkStats describe one partition of a region's group sink: its
// profile and what it served.
type GroupSinkStats struct {
	// Size and Radius are the profile: subspaces of Size places, every
	// place within Radius blocks of their centre.
	Size   int `json:"size"`
	Radius int `json:"radius"`
	// Places is the number of places the subspaces ready hold.
	Places int `json:"places"`
	// Groups counts the groups served, Players their places.
	Groups  uint64 `json:"groups"`
	Players uint64 `json:"players"`
	// Trimmed counts the places released when a subspace served a smaller
	// group than its size.
	Trimmed uint64 `json:"trimmed"`
	// NoRoom counts the chunks found with too few safe columns near the
	// place screened for a subspace; Backoff is how many refill rounds the
	// partition still skips after such misses.
	NoRoom  uint64 `json:"noRoom"`
	Backoff int    `json:"backoff"`
}

// MissRecord is one miss: a request that found its sink empty, with the
// fill of every sink at that instant.
type MissRecord struct {
	Time  time.Time  `json:"time"`
	Sink  string     `json:"sink"`
	Fills []SinkFill `json:"fills"`
}

// ReservationCloseStats count how the chunk reservations the pipeline held
// were closed.
type ReservationCloseStats struct {
	// Released counts reservations released through a hot entry.
	Released uint64 `json:"released"`
	// ForeignClosed counts reservations found already closed (by the
	// store's watchdog or shutdown) when the pipeline released them.
	ForeignClosed uint64 `json:"foreignClosed"`
	// DoubleReleases counts second releases of one entry; a correct
	// pipeline does none.
	DoubleReleases uint64 `json:"doubleReleases"`
}

// PipelineStats are the location pipeline's queues (backlog, cold), hot
// sinks and counters.
type PipelineStats struct {
	Backlog SinkFill    `json:"backlog"`
	Cold    SinkFill    `json:"cold"`
	Sinks   []SinkStats `json:"sinks"`
	// Screening and Promoting are the screenings and promotions in flight.
	Screening int `json:"screening"`
	Promoting int `json:"promoting"`
	// Screened counts the candidates that reached the cold queue.
	Screened   uint64 `json:"screened"`
	Promotions uint64 `json:"promotions"`
	Transfers  uint64 `json:"transfers"`
	Demotions  uint64 `json:"demotions"`
	Trims      uint64 `json:"trims"`
	Mismatched uint64 `json:"mismatched"`
	// ScreenRejections and PromotionRejections count rejections by reason
	// name.
	ScreenRejections    map[string]uint64 `json:"screenRejections"`
	PromotionRejections map[string]uint64 `json:"promotionRejections"`
	// ReservationFailures counts the promotions that could not reserve
	// their chunk, by kind: "timeout", "ungenerated", "outside",
	// "unreadable". LastReservationError is the text of the latest
	// "unreadable" failure, or "".
	ReservationFailures  map[string]uint64 `json:"reservationFailures"`
	LastReservationError string            `json:"lastReservationError"`
	// LoginExhaustion counts misses of the login reserve.
	LoginExhaustion uint64 `json:"loginExhaustion"`
	// Misses counts every miss; RecentMisses holds the last ones, oldest
	// first.
	Misses       uint64       `json:"misses"`
	RecentMisses []MissRecord `json:"recentMisses"`
	// RowAdds and RowRemoves count the rows written to and removed from
	// the locations database.
	RowAdds      uint64                `json:"rowAdds"`
	RowRemoves   uint64                `json:"rowRemoves"`
	Reservations ReservationCloseStats `json:"reservations"`
	MemoryErrors uint64                `json:"memoryErrors"`
	// Held is the number of chunks with a location in the pipeline now;
	// Duplicates counts draws skipped because their chunk had one already.
	Held       int    `json:"held"`
	Duplicates uint64 `json:"duplicates"`
	// KnownBad counts cold locations dropped at promotion because memory
	// had meanwhile marked their chunk bad.
	KnownBad uint64 `json:"knownBad"`
	// ChangedCold counts cold locations dropped because their chunk
	// changed; Changed is that plus every sink's Changed.
	ChangedCold uint64 `json:"changedCold"`
	Changed     uint64 `json:"changed"`
	// CallbackPanics counts panics of the promotion callback.
	CallbackPanics uint64 `json:"callbackPanics"`
}

// MemoryStats summarize the spatial memory of a region: the cells (chunks
// of the region's spiral) known bad or on probation.
type MemoryStats struct {
	World string `json:"world"`
	// Len is the number of cells of the region.
	Len int64 `json:"len"`
	// BadCount is the number of cells known bad (not selectable);
	// BadFraction is BadCount / Len.
	BadCount    int64   `json:"badCount"`
	BadFraction float64 `json:"badFraction"`
	// Probation is the number of cells on probation (selectable).
	Probation int64 `json:"probation"`
	// Coverage is the share of the cells memory knows of:
	// (BadCount + Probation) / Len.
	Coverage      float64 `json:"coverage"`
	ActiveRuns    int     `json:"activeRuns"`
	ProbationRuns int     `json:"probationRuns"`
	StaticRuns    int     `json:"staticRuns"`
	// TopCause is the cause with the most bad cells ("" when none);
	// TopCauseShare its share of BadCount.
	TopCause      string  `json:"topCause"`
	TopCauseShare float64 `json:"topCauseShare"`
	// ByCause is the number of bad cells per cause.
	ByCause map[string]int64 `json:"byCause"`
	// Rejections counts the rejections recorded, by "cause[source]" (or
	// "cause" when there is no source).
	Rejections map[string]int64 `json:"rejections"`
	// Pending is the number of rejections waiting for a rebuild.
	Pending  int   `json:"pending"`
	Restored int64 `json:"restored"`
	Ignored  int64 `json:"ignored"`
	Rebuilds int64 `json:"rebuilds"`
	// LastRebuild is when memory was last rebuilt; nil (the key absent)
	// before the first rebuild.
	LastRebuild *time.Time `json:"lastRebuild,omitempty"`
	// ResidentBytes is the memory the runs hold, in bytes.
	ResidentBytes int64 `json:"residentBytes"`
}

// UniqueStats count the work of unique placement.
type UniqueStats struct {
	// RadiusBlocks is the radius kept free round each place handed out,
	// in blocks; 0 when unique placement is off.
	RadiusBlocks int64 `json:"radiusBlocks"`
	// Marked counts the places whose area was marked; Chunks the chunks
	// marked for them; Lost the places not marked because the queue of
	// marks was full.
	Marked uint64 `json:"marked"`
	Chunks uint64 `json:"chunks"`
	Lost   uint64 `json:"lost"`
	// Dropped counts cached locations closed instead of handed out
	// because they were too close to a place handed out.
	Dropped uint64 `json:"dropped"`
	// SpotChunks is the number of chunks holding unexpired spots.
	SpotChunks int `json:"spotChunks"`
}

// UnknownBlocksStats count the block names the collision data does not
// know.
type UnknownBlocksStats struct {
	// Names is the number of distinct unknown block states seen.
	Names int64 `json:"names"`
	// Rejections counts the columns screened out because their ground was
	// unknown.
	Rejections uint64 `json:"rejections"`
}

// WatchStats describe the change watcher of a Minecraft world. World-wide
// counts are shared by the world's regions; Forgotten and Dropped are the
// region's own.
type WatchStats struct {
	// PeriodMs is the time between polls, in milliseconds.
	PeriodMs float64 `json:"periodMs"`
	// Polls counts the polls done (the baseline included); Errors those
	// that failed.
	Polls  uint64 `json:"polls"`
	Errors uint64 `json:"errors"`
	// ChangedChunks and ChangedRegions count the chunks and region files
	// the polls reported changed; Damaged the chunks already unreadable.
	ChangedChunks  uint64 `json:"changedChunks"`
	ChangedRegions uint64 `json:"changedRegions"`
	Damaged        uint64 `json:"damaged"`
	// Forgotten counts the memory cells of changed chunks that held a
	// rejection; Dropped the cached entries removed because their chunk
	// changed.
	Forgotten uint64 `json:"forgotten"`
	Dropped   uint64 `json:"dropped"`
	// Reported counts the chunks a game server reported changed (POST
	// /v1/worlds/{world}/changes); Held how many of them wait to be saved.
	Reported uint64 `json:"reported"`
	Held     int    `json:"held"`
	// Reader is what the world's region-file reader counted.
	Reader ReaderStats `json:"reader"`
}

// ReaderStats are the counters of a Minecraft world's region-file reader.
type ReaderStats struct {
	// ReadErrors counts chunk reads that failed after their retries;
	// TornRetries the extra reads of chunks whose data was corrupt or cut
	// short; DamagedChunks the chunks known damaged now.
	ReadErrors    uint64 `json:"readErrors"`
	TornRetries   uint64 `json:"tornRetries"`
	DamagedChunks int    `json:"damagedChunks"`
	// Polls counts the reader's change polls; ChangedChunks the chunks
	// they reported.
	Polls         uint64 `json:"polls"`
	ChangedChunks uint64 `json:"changedChunks"`
	// WarningsSuppressed counts damaged-chunk warnings held back by the
	// rate limit.
	WarningsSuppressed uint64 `json:"warningsSuppressed"`
}

// RecoveryStats tell what a region found of the previous run at start.
type RecoveryStats struct {
	// Unclean reports that the previous run did not shut down in order.
	Unclean bool `json:"unclean"`
	// Discarded counts the cached locations dropped because they were hot
	// when the previous run was killed.
	Discarded int `json:"discarded"`
	// Replayed counts the journaled rejections replayed into memory;
	// Spots the spots handed out reloaded for unique placement.
	Replayed int `json:"replayed"`
	Spots    int `json:"spots"`
	// LostDatabase, when present, warns that the locations database was
	// new or empty at start while the files beside it show that the data
	// directory served before: the places handed out earlier are
	// forgotten. It names the files.
	LostDatabase string `json:"lostDatabase,omitempty"`
}

// HandoutStats count the locations handed out and how their reservations
// ended.
type HandoutStats struct {
	// Open is the number handed out and not closed yet.
	Open      int64  `json:"open"`
	Completed uint64 `json:"completed"`
	Cancelled uint64 `json:"cancelled"`
	Expired   uint64 `json:"expired"`
	// Replaced counts the handouts closed because their player took a
	// new one; Refused the teleports refused with too-many-open.
	Replaced uint64 `json:"replaced"`
	Refused  uint64 `json:"refused"`
}

// FleetStats describe the node serving a region as one node of a fleet.
type FleetStats struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Degraded: the database does not answer, or writes to it fail; the
	// node serves the hot entries it holds and promotes none.
	Degraded bool `json:"degraded"`
	// LeaseLost: the node's lease lapsed; it rejoins at its next
	// heartbeat.
	LeaseLost bool `json:"leaseLost"`
	// LeaseUntil is until when the node's claims are surely its own.
	LeaseUntil time.Time `json:"leaseUntil"`
	// Listening: the journal feed's notifications arrive (otherwise the
	// feed is polled every second).
	Listening bool `json:"listening"`
	// Share and Nodes: the node screens share Share (from 0) of Nodes.
	Share int `json:"share"`
	Nodes int `json:"nodes"`
	// FeedMarks and FeedSpots count the rejections and placement spots
	// learnt from other nodes; FeedReads and FeedErrors the feed's reads.
	FeedMarks  uint64 `json:"feedMarks"`
	FeedSpots  uint64 `json:"feedSpots"`
	FeedReads  uint64 `json:"feedReads"`
	FeedErrors uint64 `json:"feedErrors"`
	// Adopted counts the locations claimed from the shared pool (rows of
	// nodes that stopped or died); ClaimErrors the claims that failed.
	Adopted     uint64 `json:"adopted"`
	ClaimErrors uint64 `json:"claimErrors"`
	// Foreign counts the entries dropped at promotion because another
	// node owned their row (never served twice).
	Foreign uint64 `json:"foreign"`
	// Pending counts the writes waiting for the database; Failing reports
	// that the last commit failed, LastError why.
	Pending   int    `json:"pending"`
	Failing   bool   `json:"failing"`
	LastError string `json:"lastError,omitempty"`
}
