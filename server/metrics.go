package server

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/world"
)

// httpMetrics are the metrics of the HTTP layer (see the package
// documentation for the names).
type httpMetrics struct {
	requests *prometheus.CounterVec   // route, code
	duration *prometheus.HistogramVec // route
	inFlight prometheus.Gauge
	panics   prometheus.Counter
}

// durationBuckets span a hot teleport (tens of microseconds) to a teleport
// that waited the longest a request may ask for.
var durationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rtp_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rtp_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: durationBuckets,
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rtp_http_requests_in_flight",
			Help: "HTTP requests being answered.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rtp_http_panics_total",
			Help: "Panics recovered while answering HTTP requests (answered 500).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight, m.panics} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	return m, nil
}

// routeMetrics are the metrics of one route, curried at start so a request
// looks up only its status code.
type routeMetrics struct {
	requests *prometheus.CounterVec
	duration prometheus.Observer
}

func (m *httpMetrics) route(label string) routeMetrics {
	return routeMetrics{
		requests: m.requests.MustCurryWith(prometheus.Labels{"route": label}),
		duration: m.duration.WithLabelValues(label),
	}
}

// statusLabels are the labels of the common status codes, made once.
var statusLabels = func() map[int]string {
	m := map[int]string{}
	for _, c := range []int{200, 201, 204, 400, 401, 404, 405, 409, 410, 413, 500, 503} {
		m[c] = strconv.Itoa(c)
	}
	return m
}()

func (rm routeMetrics) observe(code int, d time.Duration) {
	l, ok := statusLabels[code]
	if !ok {
		l = strconv.Itoa(code)
	}
	rm.requests.WithLabelValues(l).Inc()
	rm.duration.Observe(d.Seconds())
}

// engineCollector reads the engine's Stats of every region at scrape time.
// The resident store's metrics are per world (regions of one world share
// its store), reported once per world.
type engineCollector struct {
	e      Engine
	claims ClaimStore
	log    *slog.Logger
}

func newEngineCollector(e Engine, claims ClaimStore, log *slog.Logger) *engineCollector {
	return &engineCollector{e: e, claims: claims, log: log}
}

// metricDesc is one metric of the engine collector.
type metricDesc struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func newDesc(name, help string, typ prometheus.ValueType, labels ...string) metricDesc {
	return metricDesc{prometheus.NewDesc(name, help, labels, nil), typ}
}

var (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
	// histogram marks a metricDesc collected with NewConstHistogram (see
	// collectLatency), which takes no value type of its own.
	histogram = prometheus.UntypedValue

	mRegionInfo   = newDesc("rtp_region_info", "A region and its world (always 1).", gauge, "region", "world")
	mPaused       = newDesc("rtp_region_paused", "1 while the region's scan is paused.", gauge, "region")
	mExhausted    = newDesc("rtp_region_exhausted", "1 while the region has no safe place left (teleports answer region-exhausted).", gauge, "region")
	mRestored     = newDesc("rtp_region_restored_locations", "Cold locations restored from the database at start.", gauge, "region")
	mTeleports    = newDesc("rtp_teleports_total", "Teleports served.", counter, "region")
	mLatency      = newDesc("rtp_teleport_latency_seconds", "Teleport latency since start.", histogram, "region")
	mLatencyMax   = newDesc("rtp_teleport_latency_max_seconds", "Longest teleport since start.", gauge, "region")
	mSinkFill     = newDesc("rtp_sink_fill", "Locations ready in a hot sink.", gauge, "region", "sink", "kind")
	mSinkCap      = newDesc("rtp_sink_capacity", "Capacity of a hot sink.", gauge, "region", "sink", "kind")
	mSinkQuota    = newDesc("rtp_sink_quota", "Quota the allocator grants a hot sink.", gauge, "region", "sink", "kind")
	mSinkLeased   = newDesc("rtp_sink_leased", "Locations of a network sink held by tokens.", gauge, "region", "sink", "kind")
	mSinkDemand   = newDesc("rtp_sink_demand_per_second", "Requests per second a hot sink sees (EWMA).", gauge, "region", "sink", "kind")
	mSinkPending  = newDesc("rtp_sink_pending_promotions", "Promotions in flight for a hot sink.", gauge, "region", "sink", "kind")
	mSinkHits     = newDesc("rtp_sink_hits_total", "Requests a hot sink served.", counter, "region", "sink", "kind")
	mSinkMisses   = newDesc("rtp_sink_misses_total", "Requests that found a hot sink empty.", counter, "region", "sink", "kind")
	mSinkPromos   = newDesc("rtp_sink_promotions_total", "Locations promoted into a hot sink.", counter, "region", "sink", "kind")
	mSinkStale    = newDesc("rtp_sink_stale_total", "Entries of a hot sink found with a closed reservation.", counter, "region", "sink", "kind")
	mGroupPlaces  = newDesc("rtp_group_places", "Places held by the subspaces ready in a group sink.", gauge, "region", "sink")
	mGroupSize    = newDesc("rtp_group_size", "Places per subspace of a group sink (its largest group).", gauge, "region", "sink")
	mGroupRadius  = newDesc("rtp_group_radius_blocks", "Radius of a group sink's groups, in blocks.", gauge, "region", "sink")
	mGroups       = newDesc("rtp_group_teleports_total", "Groups a group sink placed.", counter, "region", "sink")
	mGroupPlayers = newDesc("rtp_group_players_total", "Places of the groups a group sink placed.", counter, "region", "sink")
	mGroupTrimmed = newDesc("rtp_group_trimmed_places_total", "Places released when a subspace served a smaller group.", counter, "region", "sink")
	mGroupNoRoom  = newDesc("rtp_group_no_room_total", "Promotions that found too few safe columns near the place for a subspace.", counter, "region", "sink")
	mQueueFill    = newDesc("rtp_queue_fill", "Entries in a stage queue (backlog, cold).", gauge, "region", "queue")
	mQueueCap     = newDesc("rtp_queue_capacity", "Capacity of a stage queue (backlog, cold).", gauge, "region", "queue")
	mScreening    = newDesc("rtp_pipeline_screenings_in_flight", "Screenings running.", gauge, "region")
	mPromoting    = newDesc("rtp_pipeline_promotions_in_flight", "Promotions running.", gauge, "region")
	mScreened     = newDesc("rtp_pipeline_screened_total", "Candidates that passed screening into cold.", counter, "region")
	mPromotions   = newDesc("rtp_pipeline_promotions_total", "Promotions into hot sinks.", counter, "region")
	mTransfers    = newDesc("rtp_pipeline_transfers_total", "Hot entries moved between sinks.", counter, "region")
	mDemotions    = newDesc("rtp_pipeline_demotions_total", "Hot entries demoted to cold.", counter, "region")
	mMisses       = newDesc("rtp_pipeline_misses_total", "Requests that found their sink empty.", counter, "region")
	mLoginExh     = newDesc("rtp_pipeline_login_exhaustion_total", "Misses of the login reserve.", counter, "region")
	mScreenRej    = newDesc("rtp_pipeline_screen_rejections_total", "Candidates rejected at screening, by reason.", counter, "region", "reason")
	mPromoRej     = newDesc("rtp_pipeline_promotion_rejections_total", "Locations rejected at promotion, by reason.", counter, "region", "reason")
	mMemErrors    = newDesc("rtp_pipeline_memory_errors_total", "Rejections the spatial memory could not record.", counter, "region")
	mForeign      = newDesc("rtp_pipeline_reservations_foreign_closed_total", "Pipeline reservations found closed by someone else (the store's watchdog or shutdown).", counter, "region")
	mMemCells     = newDesc("rtp_memory_cells", "Cells (chunks) of the region's spatial memory.", gauge, "region")
	mMemBad       = newDesc("rtp_memory_bad_cells", "Cells known bad (in active runs; not selectable).", gauge, "region")
	mMemProbation = newDesc("rtp_memory_probation_cells", "Cells on probation (selectable, remembered).", gauge, "region")
	mMemBadFrac   = newDesc("rtp_memory_bad_fraction", "Share of the cells known bad.", gauge, "region")
	mMemCoverage  = newDesc("rtp_memory_coverage", "Share of the cells memory knows of (bad or on probation).", gauge, "region")
	mMemActive    = newDesc("rtp_memory_active_runs", "Active runs of bad cells.", gauge, "region")
	mMemProbRuns  = newDesc("rtp_memory_probation_runs", "Runs on probation.", gauge, "region")
	mMemByCause   = newDesc("rtp_memory_bad_cells_by_cause", "Cells known bad, by cause.", gauge, "region", "cause")
	mMemRejects   = newDesc("rtp_memory_rejections_total", "Rejections recorded in memory since it was loaded, by cause and verifier source.", counter, "region", "cause", "source")
	mMemBytes     = newDesc("rtp_memory_resident_bytes", "Memory held by the region's runs.", gauge, "region")
	mMemRebuilds  = newDesc("rtp_memory_rebuilds_total", "Rebuilds of the region's memory table.", counter, "region")
	mResOpened    = newDesc("rtp_resident_reservations_opened_total", "Chunk reservations handed out by a world's resident store.", counter, "world")
	mResClosed    = newDesc("rtp_resident_reservations_closed_total", "Chunk reservations closed, by any path.", counter, "world")
	mResForced    = newDesc("rtp_resident_reservations_forced_total", "Chunk reservations the watchdog closed past their lifespan.", counter, "world")
	mResOpen      = newDesc("rtp_resident_reservations_open", "Chunk reservations open now.", gauge, "world")
	mResHits      = newDesc("rtp_resident_hits_total", "Reservations served by a resident chunk.", counter, "world")
	mResMisses    = newDesc("rtp_resident_misses_total", "Reservations that waited for a chunk load.", counter, "world")
	mResLoads     = newDesc("rtp_resident_loads_total", "Chunk loads finished.", counter, "world")
	mResLoadErrs  = newDesc("rtp_resident_load_errors_total", "Chunk loads that failed.", counter, "world")
	mResEvictions = newDesc("rtp_resident_evictions_total", "Unreserved chunks evicted for the memory budget.", counter, "world")
	mResChunks    = newDesc("rtp_resident_chunks", "Chunks in memory.", gauge, "world")
	mResReserved  = newDesc("rtp_resident_reserved_chunks", "Chunks in memory held by a reservation.", gauge, "world")
	mResBytes     = newDesc("rtp_resident_bytes", "Estimated memory of the resident chunks.", gauge, "world")
	mResLoading   = newDesc("rtp_resident_loads_in_flight", "Chunk loads running.", gauge, "world")
	mClaims       = newDesc("rtp_claims", "Claims in force.", gauge)
	mUnknownNames = newDesc("rtp_safety_unknown_blocks", "Block names the collision data does not know (never landed on).", gauge, "region")
	mUnknownRej   = newDesc("rtp_safety_unknown_block_rejections_total", "Columns screened out because their ground block was unknown.", counter, "region")
	mUniqueDrops  = newDesc("rtp_unique_dropped_total", "Cached locations closed when taken, too close to a place handed out since.", counter, "region")
	mReserveFails = newDesc("rtp_pipeline_reservation_failures_total", "Promotions that could not reserve their chunk, by kind (timeout, ungenerated, outside, unreadable).", counter, "region", "kind")
	mHandOpen     = newDesc("rtp_handouts_open", "Locations handed out and not yet completed, cancelled or expired.", gauge, "region")
	mHandDone     = newDesc("rtp_handouts_completed_total", "Handouts closed by Complete.", counter, "region")
	mHandCancel   = newDesc("rtp_handouts_cancelled_total", "Handouts closed by Cancel.", counter, "region")
	mHandExpired  = newDesc("rtp_handouts_expired_total", "Handouts closed at the end of their lifespan.", counter, "region")
	mHandReplaced = newDesc("rtp_handouts_replaced_total", "Handouts closed because their player requested a new one.", counter, "region")
	mHandRefused  = newDesc("rtp_handouts_refused_total", "Teleports refused because the open-handout cap was reached.", counter, "region")
	mUnclean      = newDesc("rtp_region_unclean_start", "1 when the region started after a crash (the previous run did not shut down in order).", gauge, "region")
	mDiscarded    = newDesc("rtp_region_discarded_locations", "Cached locations dropped at start because they were hot when the previous run was killed.", gauge, "region")
	mWorldDamaged = newDesc("rtp_world_damaged_chunks", "Chunks of a Minecraft world whose data cannot be read now.", gauge, "world")
	mWorldReadErr = newDesc("rtp_world_read_errors_total", "Chunk reads of a Minecraft world that failed after their retries.", counter, "world")
	mWorldTorn    = newDesc("rtp_world_torn_retries_total", "Chunk reads retried because the data looked cut short or garbled (a write in progress).", counter, "world")
	mWorldChanged = newDesc("rtp_world_changed_chunks_total", "Chunks the region-file watcher saw change on disk.", counter, "world")
	mUniqueChunks = newDesc("rtp_unique_spot_chunks", "Chunks holding spots handed out whose marks have not expired.", gauge, "region")
	mLocPending   = newDesc("rtp_location_writes_pending", "Writes to the locations database waiting for their commit.", gauge)
	mLocWritten   = newDesc("rtp_location_writes_total", "Writes to the locations database committed.", counter)
	mLocCoalesced = newDesc("rtp_location_writes_coalesced_total", "Writes that cancelled out before their commit (an add and the removal that undid it).", counter)
	mLocDropped   = newDesc("rtp_location_writes_dropped_total", "Writes lost: past the writer's queue bound, or still failing at shutdown.", counter)
	mLocFailures  = newDesc("rtp_location_write_failures_total", "Commits to the locations database that failed (their writes are kept and retried).", counter)
	mLocRetries   = newDesc("rtp_location_write_retries_total", "Commits of a batch that had failed before.", counter)
	mLocFailing   = newDesc("rtp_location_writes_failing", "1 while the last commit to the locations database failed.", gauge)
	mArchHits     = newDesc("rtp_archive_hits_total", "Terrain tiles read from a procedural world's archive.", counter, "world")
	mArchGens     = newDesc("rtp_archive_generations_total", "Terrain tiles generated because the archive did not hold them (or held them invalid).", counter, "world")
	mArchInvalid  = newDesc("rtp_archive_invalid_total", "Archived tiles that failed their checks, deleted and generated again.", counter, "world")
	mArchReadErr  = newDesc("rtp_archive_read_errors_total", "Archive reads that failed (each cost a generation).", counter, "world")
	mArchWriteErr = newDesc("rtp_archive_write_errors_total", "Archive writes that failed.", counter, "world")
	mArchDropped  = newDesc("rtp_archive_writes_dropped_total", "Generated tiles not archived because the archive's write queue was full.", counter, "world")
	mArchPending  = newDesc("rtp_archive_writes_pending", "Generated tiles waiting for the archive's writer.", gauge, "world")
	mRefillLanes  = newDesc("rtp_refill_lanes", "Units of refill work (screenings, promotions, location writes) run at once; 0: unbounded.", gauge)
	mRefillRests  = newDesc("rtp_refill_rests_total", "Rests the refill's lanes took while requests came (pacing).", counter)
	mRefillRested = newDesc("rtp_refill_rested_seconds_total", "Time the refill's lanes rested while requests came (pacing).", counter)

	allDescs = []metricDesc{
		mRegionInfo, mPaused, mExhausted, mRestored, mTeleports, mLatency, mLatencyMax,
		mSinkFill, mSinkCap, mSinkQuota, mSinkLeased, mSinkDemand, mSinkPending, mSinkHits, mSinkMisses, mSinkPromos, mSinkStale,
		mGroupPlaces, mGroupSize, mGroupRadius, mGroups, mGroupPlayers, mGroupTrimmed, mGroupNoRoom,
		mQueueFill, mQueueCap, mScreening, mPromoting, mScreened, mPromotions, mTransfers, mDemotions, mMisses, mLoginExh,
		mScreenRej, mPromoRej, mMemErrors, mForeign,
		mMemCells, mMemBad, mMemProbation, mMemBadFrac, mMemCoverage, mMemActive, mMemProbRuns, mMemByCause, mMemRejects, mMemBytes, mMemRebuilds,
		mResOpened, mResClosed, mResForced, mResOpen, mResHits, mResMisses, mResLoads, mResLoadErrs, mResEvictions, mResChunks, mResReserved, mResBytes, mResLoading,
		mArchHits, mArchGens, mArchInvalid, mArchReadErr, mArchWriteErr, mArchDropped, mArchPending,
		mClaims, mUnknownNames, mUnknownRej, mUniqueDrops, mUniqueChunks, mRefillLanes, mRefillRests, mRefillRested,
		mLocPending, mLocWritten, mLocCoalesced, mLocDropped, mLocFailures, mLocRetries, mLocFailing,
		mReserveFails, mHandOpen, mHandDone, mHandCancel, mHandExpired, mHandReplaced, mHandRefused, mUnclean, mDiscarded, mWorldDamaged, mWorldReadErr, mWorldTorn, mWorldChanged,
	}
)

// Describe sends the descriptions of every engine metric.
func (ec *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d.desc
	}
}

// Collect reads the Stats of every region. A region whose Stats fail is
// left out of the scrape and logged.
func (ec *engineCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(d metricDesc, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d.desc, d.typ, v, labels...)
		if err != nil { // a label that is not valid UTF-8
			ec.log.Debug("server: metric left out", "err", err)
			return
		}
		ch <- m
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	worlds := map[string]world.ResidentStats{}
	watched := map[string]*engine.WatchStats{}
	for _, region := range ec.e.Regions() {
		st, err := ec.e.Stats(region)
		if err != nil {
			ec.log.Warn("server: stats of a region for the metrics", "region", region, "err", err)
			continue
		}
		worlds[st.World] = st.Resident
		if w := st.Watch; w != nil {
			watched[st.World] = w
		}
		for kind, n := range st.Pipeline.ReservationFailures {
			emit(mReserveFails, float64(n), region, kind)
		}
		emit(mRegionInfo, 1, region, st.World)
		emit(mPaused, b2f(st.Paused), region)
		emit(mExhausted, b2f(st.Exhaustion.Exhausted), region)
		emit(mRestored, float64(st.Restored), region)
		emit(mHandOpen, float64(st.Handouts.Open), region)
		emit(mHandDone, float64(st.Handouts.Completed), region)
		emit(mHandCancel, float64(st.Handouts.Cancelled), region)
		emit(mHandExpired, float64(st.Handouts.Expired), region)
		emit(mHandReplaced, float64(st.Handouts.Replaced), region)
		emit(mHandRefused, float64(st.Handouts.Refused), region)
		emit(mUnclean, b2f(st.Recovery.Unclean), region)
		emit(mDiscarded, float64(st.Recovery.Discarded), region)
		emit(mUnknownNames, float64(st.UnknownBlocks.Names), region)
		emit(mUnknownRej, float64(st.UnknownBlocks.Rejections), region)
		emit(mUniqueDrops, float64(st.Unique.Dropped), region)
		emit(mUniqueChunks, float64(st.Unique.SpotChunks), region)
		collectLatency(ch, ec.log, emit, region, st.Latency)

		p := st.Pipeline
		for _, s := range p.Sinks {
			l := []string{region, s.Name, s.Kind}
			emit(mSinkFill, float64(s.Fill), l...)
			emit(mSinkCap, float64(s.Capacity), l...)
			emit(mSinkQuota, float64(s.Quota), l...)
			emit(mSinkLeased, float64(s.Leased), l...)
			emit(mSinkDemand, s.Demand, l...)
			emit(mSinkPending, float64(s.Pending), l...)
			emit(mSinkHits, float64(s.Hits), l...)
			emit(mSinkMisses, float64(s.Misses), l...)
			emit(mSinkPromos, float64(s.Promotions), l...)
			emit(mSinkStale, float64(s.Stale), l...)
			if g := s.Group; g != nil {
				emit(mGroupPlaces, float64(g.Places), region, s.Name)
				emit(mGroupSize, float64(g.Size), region, s.Name)
				emit(mGroupRadius, float64(g.Radius), region, s.Name)
				emit(mGroups, float64(g.Groups), region, s.Name)
				emit(mGroupPlayers, float64(g.Players), region, s.Name)
				emit(mGroupTrimmed, float64(g.Trimmed), region, s.Name)
				emit(mGroupNoRoom, float64(g.NoRoom), region, s.Name)
			}
		}
		for _, q := range []struct {
			name      string
			fill, cap int
		}{{"backlog", p.Backlog.Fill, p.Backlog.Capacity}, {"cold", p.Cold.Fill, p.Cold.Capacity}} {
			emit(mQueueFill, float64(q.fill), region, q.name)
			emit(mQueueCap, float64(q.cap), region, q.name)
		}
		emit(mScreening, float64(p.Screening), region)
		emit(mPromoting, float64(p.Promoting), region)
		emit(mScreened, float64(p.Screened), region)
		emit(mPromotions, float64(p.Promotions), region)
		emit(mTransfers, float64(p.Transfers), region)
		emit(mDemotions, float64(p.Demotions), region)
		emit(mMisses, float64(p.Misses), region)
		emit(mLoginExh, float64(p.LoginExhaustion), region)
		for reason, n := range p.ScreenRejections {
			emit(mScreenRej, float64(n), region, reason)
		}
		for reason, n := range p.PromotionRejections {
			emit(mPromoRej, float64(n), region, reason)
		}
		emit(mMemErrors, float64(p.MemoryErrors), region)
		emit(mForeign, float64(p.Reservations.ForeignClosed), region)

		m := st.Memory
		emit(mMemCells, float64(m.Len), region)
		emit(mMemBad, float64(m.BadCount), region)
		emit(mMemProbation, float64(m.Probation), region)
		emit(mMemBadFrac, m.BadFraction, region)
		emit(mMemCoverage, m.Coverage, region)
		emit(mMemActive, float64(m.ActiveRuns), region)
		emit(mMemProbRuns, float64(m.ProbationRuns), region)
		for cause, n := range m.ByCause {
			emit(mMemByCause, float64(n), region, cause)
		}
		for key, n := range m.Rejections {
			cause, source := splitRejectionKey(key)
			emit(mMemRejects, float64(n), region, cause, source)
		}
		emit(mMemBytes, float64(m.ResidentBytes), region)
		emit(mMemRebuilds, float64(m.Rebuilds), region)
	}
	for w, ws := range watched {
		emit(mWorldDamaged, float64(ws.Reader.DamagedChunks), w)
		emit(mWorldReadErr, float64(ws.Reader.ReadErrors), w)
		emit(mWorldTorn, float64(ws.Reader.TornRetries), w)
		emit(mWorldChanged, float64(ws.ChangedChunks), w)
	}
	for w, r := range worlds {
		emit(mResOpened, float64(r.Opened), w)
		emit(mResClosed, float64(r.Closed), w)
		emit(mResForced, float64(r.Forced), w)
		emit(mResOpen, float64(r.Open), w)
		emit(mResHits, float64(r.Hits), w)
		emit(mResMisses, float64(r.Misses), w)
		emit(mResLoads, float64(r.Loads), w)
		emit(mResLoadErrs, float64(r.LoadErrors), w)
		emit(mResEvictions, float64(r.Evictions), w)
		emit(mResChunks, float64(r.Resident), w)
		emit(mResReserved, float64(r.Reserved), w)
		emit(mResBytes, float64(r.Bytes), w)
		emit(mResLoading, float64(r.Loading), w)
	}
	for w, a := range ec.e.Archives() {
		emit(mArchHits, float64(a.Hits), w)
		emit(mArchGens, float64(a.Generations), w)
		emit(mArchInvalid, float64(a.Invalid), w)
		emit(mArchReadErr, float64(a.ReadErrors), w)
		emit(mArchWriteErr, float64(a.WriteErrors), w)
		emit(mArchDropped, float64(a.DroppedWrites), w)
		emit(mArchPending, float64(a.PendingWrites), w)
	}
	if cs, ok := ec.claims.(interface{ Len() int }); ok {
		emit(mClaims, float64(cs.Len()))
	}
	lw := ec.e.Locations()
	emit(mLocPending, float64(lw.Pending))
	emit(mLocWritten, float64(lw.Written))
	emit(mLocCoalesced, float64(lw.Coalesced))
	emit(mLocDropped, float64(lw.Dropped))
	emit(mLocFailures, float64(lw.Failures))
	emit(mLocRetries, float64(lw.Retries))
	emit(mLocFailing, b2f(lw.Failing))
	rf := ec.e.Refill()
	emit(mRefillLanes, float64(rf.Lanes))
	emit(mRefillRests, float64(rf.Rests))
	emit(mRefillRested, rf.Rested.Seconds())
}

// collectLatency exports a region's teleport latency: the count, the
// distribution as a Prometheus histogram whose buckets are the engine's
// exact ones (engine.LatencyBound), and the maximum. `rtp stats` reads its
// quantiles from the same engine histogram.
func collectLatency(ch chan<- prometheus.Metric, log *slog.Logger, emit func(metricDesc, float64, ...string), region string, l engine.Latency) {
	emit(mTeleports, float64(l.Count), region)
	buckets := make(map[float64]uint64, engine.LatencyBuckets)
	for i, n := range l.Buckets {
		buckets[engine.LatencyBound(i).Seconds()] = n
	}
	m, err := prometheus.NewConstHistogram(mLatency.desc, l.Count, l.Sum.Seconds(), buckets, region)
	if err != nil { // a label that is not valid UTF-8
		log.Debug("server: metric left out", "err", err)
	} else {
		ch <- m
	}
	emit(mLatencyMax, l.Max.Seconds(), region)
}

// splitRejectionKey splits a memory rejection key "cause[source]" (or
// "cause") into cause and source.
func splitRejectionKey(key string) (cause, source string) {
	if i := strings.IndexByte(key, '['); i >= 0 && strings.HasSuffix(key, "]") {
		return key[:i], key[i+1 : len(key)-1]
	}
	return key, ""
}
