package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/world/anvil"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/httpverify"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// Defaults of Options.
const (
	DefaultSaveInterval    = time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultHandoutLifespan is how long a location handed out stays
	// reserved when neither Complete nor Cancel is called for it.
	DefaultHandoutLifespan = 5 * time.Minute
	// ClaimsFile is the claims database, in the data folder.
	ClaimsFile = "claims.db"
	// MemoryDir is the folder of the memory files, in the data folder.
	MemoryDir = "memory"
	// MaxPlayerLen is the longest player name accepted, in characters
	// (runes), as the HTTP server counts them.
	MaxPlayerLen = 64
)

// Options configure an Engine. The zero value selects every default.
type Options struct {
	// Logger receives the engine's and its parts' log lines. Default
	// slog.Default().
	Logger *slog.Logger
	// Software names the program's version, recorded for fleet status
	// (Spec.Fleet). Default "".
	Software string
	// Clock tells the time to the pipelines, memory tables, resident
	// stores and claims store, and dates the locations handed out (for
	// HandoutLifespan) and the network leases. Periods (pulses, saves,
	// sweeps) are measured with real timers, and so are the durations of
	// teleports (Location.Waited, Stats.Latency). Default time.Now.
	Clock func() time.Time
	// SaveInterval is how often Run saves each region's memory file
	// besides at shutdown. Between saves the rejections and spots are
	// journaled in the locations database (see RecoveryStats), so it
	// bounds the journal's length, not what a crash loses. Default
	// DefaultSaveInterval (1 min).
	SaveInterval time.Duration
	// ShutdownTimeout bounds the orderly shutdown Run performs once its
	// context ends. Default DefaultShutdownTimeout (10 s).
	ShutdownTimeout time.Duration
	// HandoutLifespan is how long a location handed out (by Teleport or
	// Redeem) keeps its reservation when neither Complete nor Cancel is
	// called: Run closes it once that long has passed on Clock, checking
	// every HandoutLifespan/10 (at least every second, at most every
	// 10 ms). Default DefaultHandoutLifespan (5 min).
	HandoutLifespan time.Duration
	// ScreenWorkers is the number of lanes of the gate that admits and
	// paces the refill's processor work (screenings, promotions' loads
	// and checks, the SQLite location writer's transactions) across every
	// region (see pacer.Gate). Default 0: Spec.ScreenWorkers,
	// whose 0 is one fewer than GOMAXPROCS, at least 1, so
	// that a processor is always free to answer requests while the caches
	// fill; negative: no gate, so no pacing and no bound but each
	// region's MaxScreens and MaxPromotions, and every pulse draws its
	// full budget (pipeline.Options.DrawEagerly), for a process that
	// answers no requests, such as rtp pregen.
	ScreenWorkers int
	// WatchPeriod is how often Run polls each Minecraft world's region
	// files for chunks the game rewrote, dropping the cached places of
	// those chunks (see DefaultWatchPeriod). Default 0:
	// DefaultWatchPeriod (1 s); negative: no watching (cached places are
	// never checked for changes on disk).
	WatchPeriod time.Duration
	// ArchiveAll makes the terrain archives of the procedural worlds keep
	// every tile generated: a tile whose write finds the archive's queue
	// full waits for room instead of being dropped
	// (archive.Options.WaitForRoom). For a process whose point is to warm
	// the archive, such as rtp pregen: screening on every processor
	// generates tiles faster than one writer stores them, and each tile
	// dropped is generated again by the server that was meant to read it.
	// A server leaves it off, so that no screening waits on the disk.
	ArchiveAll bool
	// Handouts bound the locations handed out and not yet closed (see
	// HandoutLimits). Default: one per player (a new request replaces
	// the old one), DefaultMaxOpen (4096) in all.
	Handouts HandoutLimits
}

// refillGate returns the gate for Options.ScreenWorkers (opt) over
// Spec.ScreenWorkers (cfg).
func refillGate(opt, cfg int) *pacer.Gate {
	n := opt
	if n == 0 {
		n = cfg
	}
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = runtime.GOMAXPROCS(0) - 1
	}
	var pc pacer.Pacing
	if v, err := time.ParseDuration(os.Getenv("RTP_EXP_QUANTUM")); err == nil {
		pc.Quantum = v
	}
	if v, err := time.ParseDuration(os.Getenv("RTP_EXP_REST")); err == nil {
		pc.Rest = v
	}
	return pacer.NewWithPacing(n, pc)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.SaveInterval <= 0 {
		o.SaveInterval = DefaultSaveInterval
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.HandoutLifespan <= 0 {
		o.HandoutLifespan = DefaultHandoutLifespan
	}
	return o
}

// sweepInterval is how often Run closes the handouts past their lifespan.
func (o Options) sweepInterval() time.Duration {
	return min(max(o.HandoutLifespan/10, 10*time.Millisecond), time.Second)
}

// Engine runs the regions of one Spec (see the package
// documentation).
//
// Make one with New; the zero value is not usable. An Engine is safe for
// concurrent use: every method may be called from any goroutine while Run
// runs. Run may be called once; it owns the goroutines it starts and stops
// them before it returns.
type Engine struct {
	opts Options
	log  *slog.Logger

	// db is the locations database and claims store; archives the terrain
	// archives of the procedural worlds (nil when disabled). Both are
	// Spec.Stores'; set by New, read-only afterwards.
	db       stores.Database
	archives stores.Archives
	fleet    *fleet // nil unless db is a fleet's (stores.Database.Fleet)
	// leases is the network lease store: the one a fleet shares, or a
	// single node's in its locations database (nil: each network sink
	// keeps its leases in a lease/local store in memory, the pipeline's
	// default); leasesCloser closes it (nil: nothing to close).
	leases       lease.Store
	leasesCloser io.Closer
	node         string                     // this node's name in the leases it grants
	claims       *claims.Store              // db's
	policy       atomic.Pointer[ttl.Policy] // swapped by Reload
	http         []*httpverify.Verifier
	worlds       map[string]*worldState
	regions      map[string]*Region
	names        []string // region names, sorted

	stopping chan struct{} // closed when shutdown starts
	stopOnce sync.Once
	shutOnce sync.Once
	shutErr  error
	running  atomic.Bool
	runDone  chan struct{} // closed when Run returns

	gate *pacer.Gate // shared by every region's pipeline
	out  handouts    // locations handed out, until Complete, Cancel or their lifespan

	hooks hooks // called for every location handed out (OnHandout)

	reloadMu sync.Mutex
	// reloadMu protects the following field (New writes it before the
	// Engine is shared): the spec in force, resolved.
	spec Spec
}

// worldState is one world's chunk source and resident store.
type worldState struct {
	name     string
	archive  *archive.Archive // procedural worlds only
	source   world.Source
	closer   io.Closer // the region-file reader of a Minecraft world
	resident *world.Resident
	watch    *watcher // Minecraft worlds, unless Options.WatchPeriod < 0
}

// New opens what spec names and builds every world and region (see the
// package documentation). On error everything opened so far is closed.
func New(ctx context.Context, spec Spec, opts Options) (_ *Engine, err error) {
	spec, err = spec.resolve()
	if err != nil {
		return nil, err
	}
	if spec.Stores == nil {
		return nil, errNoStores
	}
	// The spec's handout bounds apply where the embedder set none.
	if opts.HandoutLifespan == 0 {
		opts.HandoutLifespan = spec.HandoutLifespan
	}
	if opts.Handouts == (HandoutLimits{}) {
		opts.Handouts = spec.Handouts
	}
	opts = opts.withDefaults()
	e := &Engine{
		opts:     opts,
		log:      opts.Logger,
		spec:     spec,
		worlds:   map[string]*worldState{},
		regions:  map[string]*Region{},
		stopping: make(chan struct{}),
		gate:     refillGate(opts.ScreenWorkers, spec.ScreenWorkers),
		runDone:  make(chan struct{}),
	}
	e.out.init()
	e.out.setLimits(opts.Handouts)
	e.out.lifespan = opts.HandoutLifespan
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
			defer cancel()
			_ = e.shutdown(cctx)
		}
	}()
	if err := os.MkdirAll(filepath.Join(spec.DataDir, MemoryDir), 0o755); err != nil {
		return nil, fmt.Errorf("engine: data folder: %w", err)
	}
	policy, err := loadPolicy(spec)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.policy.Store(policy)
	if err := e.openStores(ctx, spec); err != nil {
		return nil, err
	}
	for _, v := range spec.Verifiers {
		if v.Kind != VerifierHTTP {
			continue
		}
		hv, err := httpverify.New(v.Name, v.URL, httpverify.Options{Timeout: v.Timeout})
		if err != nil {
			return nil, fmt.Errorf("engine: verifier %q: %w", v.Name, err)
		}
		e.http = append(e.http, hv)
	}
	worldNames := make([]string, 0, len(spec.Worlds))
	for name := range spec.Worlds {
		worldNames = append(worldNames, name)
	}
	slices.Sort(worldNames)
	for _, name := range worldNames {
		ws := spec.Worlds[name]
		var w *worldState
		switch ws.kind() {
		case "procedural":
			w, err = e.openProcedural(ctx, name, *ws.Procedural)
		case "minecraft":
			w, err = e.openMinecraft(ctx, name, *ws.Minecraft)
		default:
			w = e.openSource(name, ws.Source)
		}
		if err != nil {
			return nil, err
		}
		e.worlds[name] = w
	}
	for name := range spec.Regions {
		e.names = append(e.names, name)
	}
	slices.Sort(e.names)
	for _, name := range e.names {
		r, err := e.openRegion(ctx, name, spec.Regions[name])
		if err != nil {
			return nil, err
		}
		e.regions[name] = r
	}
	return e, nil
}

// loadPolicy returns the TTL policy of a resolved spec.
func loadPolicy(spec Spec) (*ttl.Policy, error) {
	if spec.TTL != nil {
		return spec.TTL, nil
	}
	return ttl.LoadFileOrDefault(spec.TTLPath)
}

// openSource wraps an embedder's world in a resident store.
func (e *Engine) openSource(name string, src world.Source) *worldState {
	w := &worldState{name: name, source: src}
	w.resident = world.NewResident(src, e.residentOptions(name))
	return w
}

// residentOptions are the options of world name's resident store. Its
// only reservers are promotions, which wait for their chunk anyway: they
// load it themselves (LoadOnCaller), which spares a loader goroutine and
// a wake-up for every place handed out.
func (e *Engine) residentOptions(name string) world.ResidentOptions {
	return world.ResidentOptions{Clock: e.opts.Clock, Logger: e.log.With("world", name), LoadOnCaller: true}
}

// openMinecraft builds a Minecraft world: its save folder read through
// world/anvil (read-only), behind a resident store.
func (e *Engine) openMinecraft(ctx context.Context, name string, mc MinecraftWorld) (*worldState, error) {
	src, err := anvil.Open(mc.Path, anvil.Options{Dimension: mc.Dimension, RegionDir: mc.RegionDir})
	if err != nil {
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	w := &worldState{name: name, source: src, closer: src, watch: e.newWatcher(ctx, name, mc.WatchPeriod, src)}
	ropts := e.residentOptions(name)
	if w.watch != nil {
		ropts.Epochs = w.watch.epochs
		// Chunks the game reports changed are held until saved
		// (changes.go): every reader goes through the hold.
		w.watch.held = newHeldSource(src, e.opts.Clock, DefaultChangeHold)
		w.source = w.watch.held
	}
	w.resident = world.NewResident(w.source, ropts)
	return w, nil
}

// openProcedural builds a procedural world: procgen -> archive (its store
// opened by e.archives) -> procworld -> resident store. A store that
// fails to open is logged once by the archive, which then runs without
// one.
func (e *Engine) openProcedural(ctx context.Context, name string, pw ProceduralWorld) (*worldState, error) {
	gen, err := procgen.NewWithOptions(pw.Params, procgen.Options{CacheCells: e.drainageCells(name)})
	if err != nil {
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	aopts := archive.Options{Logger: e.log.With("world", name), Clock: e.opts.Clock, WaitForRoom: e.opts.ArchiveAll}
	var store archive.Store
	if e.archives == nil {
		aopts.StoreError = errors.New("archive disabled in the configuration")
	} else if store, err = e.archives.Open(ctx, name); err != nil {
		aopts.StoreError = err
		store = nil
	}
	arch, err := archive.Wrap(gen, store, aopts)
	if err != nil {
		if store != nil {
			_ = store.Close()
		}
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	w := &worldState{name: name, archive: arch}
	if w.source, err = procworld.New(arch, procworld.Options{CacheTiles: pw.TileCache, TileSize: e.tileSize(name)}); err != nil {
		_ = arch.Close(ctx)
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	w.resident = world.NewResident(w.source, e.residentOptions(name))
	return w, nil
}

// worldShapes returns the shapes of the regions on the world named world
// (a shape that does not build is left out: its region reports it when it
// opens).
func (e *Engine) worldShapes(world string) []geom.Shape {
	var out []geom.Shape
	for _, rs := range e.spec.Regions {
		if rs.World != world {
			continue
		}
		sh := rs.Geom
		if sh == nil {
			var err error
			if sh, err = rs.Shape.Build(); err != nil {
				continue
			}
		}
		out = append(out, sh)
	}
	return out
}

// maxDrainageCells bounds the drainage cells a procedural world keeps in
// memory, about 200 KB each (procgen.DefaultCacheCells): 100 MB.
const maxDrainageCells = 512

// drainageCells returns how many drainage cells the generator of the
// procedural world named world should keep: enough for every cell its
// regions' areas touch, so that screening random chunks of them computes
// each cell once instead of evicting and computing it again (a cell is
// some 40 ms of work, a tile within a cached one a few). At least
// procgen.DefaultCacheCells, at most maxDrainageCells.
func (e *Engine) drainageCells(world string) int {
	const cell = 1024.0 // procgen's drainage cell, in blocks
	total := 0.0
	for _, sh := range e.worldShapes(world) {
		// The cells a shape of this area touches: its area in cells, a
		// band of cells along its edge, and the corners.
		area := float64(sh.Len()) * geom.ChunkSize * geom.ChunkSize
		total += area/(cell*cell) + 4*math.Sqrt(area)/cell + 4
	}
	return int(min(max(total, procgen.DefaultCacheCells), maxDrainageCells))
}

// tileSize returns the terrain tile edge the procedural world named world
// reads through its archive, from procworld.MinTileSize up to
// procworld.DefaultTileSize:
//   - when the world's tile cache can hold every tile of its regions at
//     some size, the smallest such size: refill then reads each tile from
//     the archive once and never again (an operator who sized the cache
//     to the regions, as the load-test configuration does, keeps that
//     promise; with tiles too small for the cache every promotion would
//     read the archive, half a millisecond each, in the latency tail);
//   - otherwise the smallest size whose tiles fit the archive's entries.
//     A screening of a chunk never in the archive generates its whole
//     tile, so smaller tiles make a fresh server's screening cheaper (per
//     tile generated, 16 blocks: one chunk, 64: sixteen, measured 1.9 ms
//     at 32 against 7.2 ms at 64), and a warm read too; but a region with
//     more tiles than the archive holds keeps missing it, and a miss costs
//     far more than a larger read.
func (e *Engine) tileSize(world string) int {
	var chunks int64
	for _, sh := range e.worldShapes(world) {
		chunks += sh.Len()
	}
	tiles := func(t int) int64 {
		perTile := int64(t/geom.ChunkSize) * int64(t/geom.ChunkSize)
		return (chunks + perTile - 1) / perTile
	}
	entries := e.spec.Archive.Limits.WithDefaults().MaxEntries
	if ws, ok := e.spec.Worlds[world]; ok && ws.Procedural != nil {
		cache := int64(ws.Procedural.TileCache)
		for t := procworld.MinTileSize; t <= procworld.DefaultTileSize; t *= 2 {
			if n := tiles(t); n <= cache && n <= entries {
				return t
			}
		}
	}
	for t := procworld.MinTileSize; t < procworld.DefaultTileSize; t *= 2 {
		if tiles(t) <= entries {
			return t
		}
	}
	return procworld.DefaultTileSize
}

// regionKey is what a region's persisted locations were verified under: a
// change of any of it drops them on the next start. Its JSON form keeps
// the field names of the keys written before Spec existed (the shape's
// are geom.ShapeSpec's, in its order), so that an upgrade keeps the
// locations of an unchanged configuration; tests pin it.
type regionKey struct {
	World     worldKey
	Shape     any // the geom.ShapeSpec, or the String of a Geom shape
	Safety    safety.Rules
	Verifiers []string
}

// worldKey is the identity of a world's content.
type worldKey struct {
	Kind       string
	Procedural procgen.Params
	Path       string
	Dimension  string
	RegionDir  string
	Key        string `json:",omitempty"` // an embedder's world
}

// keyOf returns the identity of a resolved world.
func keyOf(w WorldSpec) worldKey {
	switch w.kind() {
	case "procedural":
		return worldKey{Kind: "procedural", Procedural: w.Procedural.Params, Dimension: anvil.Overworld.String()}
	case "minecraft":
		m := w.Minecraft
		return worldKey{Kind: "minecraft", Procedural: procgen.DefaultParams(), Path: m.Path, Dimension: m.Dimension.String(), RegionDir: m.RegionDir}
	}
	return worldKey{Kind: "source", Key: w.Key}
}

// shapeKeyOf returns the identity of a resolved region's shape.
func shapeKeyOf(r RegionSpec) any {
	if r.Geom != nil {
		return r.Geom.String()
	}
	return r.Shape
}

// regionKeyJSON returns the persisted identity of a resolved region on the
// world of key wk whose verifiers are sources.
func regionKeyJSON(wk worldKey, rs RegionSpec, sources []string) ([]byte, error) {
	return json.Marshal(regionKey{World: wk, Shape: shapeKeyOf(rs), Safety: rs.Safety, Verifiers: sources})
}

// ttl is the memory tables' TTL function: the policy in force, which
// Reload swaps.
func (e *Engine) ttl(c memory.Cause, source string) time.Duration {
	return e.policy.Load().TTL(c, source)
}

// openRegion builds a region: memory table, checker, verifiers, pipeline,
// and restores its persisted locations.
func (e *Engine) openRegion(ctx context.Context, name string, rs RegionSpec) (*Region, error) {
	w, ok := e.worlds[rs.World]
	if !ok {
		return nil, fmt.Errorf("engine: region %q: unknown world %q", name, rs.World)
	}
	shape := rs.Geom
	if shape == nil {
		var err error
		if shape, err = rs.Shape.Build(); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
	}
	dist := rs.Distribution
	checker, err := safety.NewWithOptions(rs.Safety, safety.Options{Logger: e.log.With("region", name)})
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	https := e.httpVerifiers(e.spec.Verifiers, name)
	timeout := verify.DefaultTimeout
	for _, v := range e.spec.Verifiers {
		if v.Kind == VerifierHTTP && listsRegion(v, name) {
			timeout = max(timeout, v.Timeout)
		}
	}
	r := &Region{
		e:          e,
		name:       name,
		spec:       rs,
		world:      w,
		shape:      shape,
		dist:       dist,
		checker:    checker,
		memPath:    filepath.Join(e.spec.DataDir, MemoryDir, name+".bin"),
		log:        e.log.With("region", name),
		verifier:   verify.New(verify.Options{Timeout: timeout}),
		leaseTTL:   rs.Sinks.Network.Lease,
		firstPulse: make(chan struct{}),
		marks:      make(chan geom.Block, markQueue),
		placed:     newPlacements(),
	}
	if w.watch != nil {
		w.watch.perRegion[name] = &regionWatch{}
	}
	r.period.Store(int64(rs.Live.Pulse))
	r.unique.Store(rs.Live.uniqueRadius())
	mopts := rs.memoryOptions()
	mopts.Shape = shape
	if _, ok := dist.(geom.Expand); ok {
		// Room past the edge for as many chunks as the shape holds.
		mopts.Len = geom.ExpandedUniverse(shape, shape.Len())
	}
	mopts.World = rs.World
	mopts.TTL = e.ttl
	if w.watch != nil {
		mopts.TTL = e.watchedTTL // see worldttl.go
	}
	mopts.Clock = e.opts.Clock
	mopts.OnRecord = r.record
	r.placed.onClaim = r.claimed
	if fi, err := os.Stat(r.memPath); err == nil && fi.Size() > 0 {
		r.memExisted = true
	}
	r.mem, err = memory.Open(r.memPath, mopts)
	var ce *memory.CorruptError
	var se *memory.ShapeMismatchError
	switch {
	case errors.As(err, &ce) && r.mem != nil:
		r.log.Warn("engine: memory file corrupt; moved aside, starting empty", "path", r.memPath, "movedTo", ce.MovedTo, "err", err)
	case errors.As(err, &se) && r.mem != nil:
		// Never apply runs to other chunks than they were learnt on.
		r.log.Warn("engine: memory file built for another shape; moved aside, starting empty", "path", r.memPath, "movedTo", se.MovedTo, "err", err)
	case err != nil:
		return nil, fmt.Errorf("engine: region %q: memory: %w", name, err)
	}
	if w.watch != nil {
		if n := forgetWorldData(r.mem); n > 0 {
			r.log.Info("engine: chunks remembered as ungenerated or unreadable will be read again: the game may have written them while the engine was stopped", "cells", n)
		}
	}
	if claimsVerify(e.spec.Verifiers, name) {
		if err := e.claims.Register(r.verifier); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
	}
	for _, hv := range https {
		if err := hv.Register(r.verifier); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
	}
	wk := keyOf(e.spec.Worlds[rs.World])
	keyBytes, err := regionKeyJSON(wk, rs, r.verifier.Sources())
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: key: %w", name, err)
	}
	persister, err := e.db.Region(name, pipeline.NewKey(uint64(wk.Procedural.Seed), keyBytes))
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	if e.fleet != nil {
		if err := e.fleet.joinRegion(ctx, r, persister); err != nil {
			return nil, err
		}
	}
	popts := rs.pipelineOptions(name)
	popts.Shape = shape
	popts.Distribution = dist
	popts.Memory = r.mem
	popts.Reserver = w.resident
	popts.Screen = r.screen
	popts.Check = r.check
	popts.Verifiers = r.verifier
	popts.Persister = persister
	popts.Clock = e.opts.Clock
	popts.Logger = e.log
	popts.Gate = e.gate
	// Without a gate the process answers no requests (ScreenWorkers
	// negative): nothing is spared by drawing less in a crowded region.
	popts.DrawEagerly = e.gate == nil
	if len(https) > 0 {
		// An out-of-process verifier decides these sinks' entries: they
		// take transfers by provenance only.
		popts.General.Criteria.Extrinsic = true
		popts.Login.Criteria.Extrinsic = true
		popts.Network.Criteria.Extrinsic = true
		popts.Personal.Criteria.Extrinsic = true
		popts.Group.Criteria.Extrinsic = true
	}
	popts.Group.Exclude = r.groupExclude
	if rs.Sinks.Network.Enabled {
		if popts.Network.Secret, err = e.networkSecret(rs.Sinks.Network); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
		// Without a store of the engine's (a fleet node on PostgreSQL
		// without Redis), the pipeline keeps the leases in memory.
		popts.Network.Leases, popts.Network.Node = e.leases, e.node
	}
	if r.pipe, err = pipeline.New(popts); err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	r.initSinks(popts)
	if err := r.recoverJournal(ctx, persister); err != nil {
		_ = r.pipe.Close(ctx)
		return nil, err
	}
	e.checkLostDatabase(r)
	n, err := r.pipe.Restore(ctx)
	if err != nil {
		_ = r.pipe.Close(ctx)
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	r.restored = n
	r.log.Info("engine: region ready", "world", rs.World, "chunks", shape.Len(), "restored", n)
	return r, nil
}

// listsRegion reports whether verifier v checks region: it lists it, or
// lists none.
func listsRegion(v VerifierSpec, region string) bool {
	return len(v.Regions) == 0 || slices.Contains(v.Regions, region)
}

// claimsVerify reports whether the claims store checks region under vs:
// always when no verifier is configured; otherwise when a claims verifier
// lists the region or lists none.
func claimsVerify(vs []VerifierSpec, region string) bool {
	if len(vs) == 0 {
		return true
	}
	for _, v := range vs {
		if v.Kind == VerifierClaims && listsRegion(v, region) {
			return true
		}
	}
	return false
}

// httpVerifiers returns the http verifiers of vs that check region, in
// their order (e.http holds them in that order).
func (e *Engine) httpVerifiers(vs []VerifierSpec, region string) []*httpverify.Verifier {
	var out []*httpverify.Verifier
	i := 0
	for _, v := range vs {
		if v.Kind != VerifierHTTP {
			continue
		}
		if listsRegion(v, region) {
			out = append(out, e.http[i])
		}
		i++
	}
	return out
}

// Claims returns the claims store. Claims added to it are in force at once
// for every region it verifies.
func (e *Engine) Claims() *claims.Store { return e.claims }

// Region returns the region of that name, or nil.
func (e *Engine) Region(name string) *Region { return e.regions[name] }

// Regions returns the names of the regions, sorted.
func (e *Engine) Regions() []string { return slices.Clone(e.names) }

// RefillStats describe the gate every region's refill work goes through
// (see pacer.Gate): how many units it admits at once and how its lanes
// rested while requests came.
type RefillStats struct {
	// Lanes is how many units of refill work run at once; 0 when the
	// refill is not bounded (Options.ScreenWorkers negative).
	Lanes int
	// Rests counts the rests the lanes took, Rested their total length.
	Rests  uint64
	Rested time.Duration
}

// LocationWrites are the counters of the writer that keeps the locations
// database (the SQLite file, or a fleet's PostgreSQL database): every
// write ends up Written, Coalesced (an add and the removal that undid it
// before either was committed) or Dropped (past the writer's queue bound,
// or lost at Close), or is still Pending. Failures counts the commits that
// failed, Retries the commits of a batch that had failed before; Failing
// reports that the last commit failed (its writes wait for a retry), and
// LastError is the error of the last failed commit ("" if none). The
// fields are stores.Writes', in its order, so that one converts to the
// other (a field added to one and not the other stops that compiling).
type LocationWrites struct {
	Pending   int
	Written   uint64
	Coalesced uint64
	Dropped   uint64
	Failures  uint64
	Retries   uint64
	Failing   bool
	LastError string
}

// Locations returns the counters of the locations database's writer; the
// zero LocationWrites before the database is open.
func (e *Engine) Locations() LocationWrites {
	if e.db == nil {
		return LocationWrites{}
	}
	return LocationWrites(e.db.Writes())
}

// Archives returns the counters of the procedural worlds' terrain
// archives (archive.Archive.Counters: the store's entries are not read),
// by world name; a world without an archive is not listed.
func (e *Engine) Archives() map[string]archive.Stats {
	out := make(map[string]archive.Stats)
	for name, w := range e.worlds {
		if w.archive != nil {
			out[name] = w.archive.Counters()
		}
	}
	return out
}

// Quiet reports whether no region was asked for a place (a teleport, a
// reservation, a group) within d: background work that is not the
// refill's, such as a map rendering ahead, waits for it so that it never
// competes with requests. An engine without a refill gate (ScreenWorkers
// negative) does not track requests and is always quiet.
func (e *Engine) Quiet(d time.Duration) bool { return e.gate.Quiet(d) }

// Refill returns the counters of the engine's refill gate.
func (e *Engine) Refill() RefillStats {
	st := e.gate.Stats()
	return RefillStats{Lanes: e.gate.Size(), Rests: st.Rests, Rested: st.Rested}
}

// Run drives every region until ctx ends, then shuts the engine down in
// order (see the package documentation) and returns the shutdown's error,
// if any. It returns an error at once if called twice or after Close.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("engine: Run called twice")
	}
	defer close(e.runDone)
	select {
	case <-e.stopping:
		return errors.New("engine: closed")
	default:
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range e.names {
		r := e.regions[name]
		wg.Go(func() { r.pulseLoop(runCtx) })
		wg.Go(func() { _ = r.mem.Run(runCtx) })
		interval := e.opts.SaveInterval
		if r.spec.Memory.SaveInterval > 0 {
			interval = r.spec.Memory.SaveInterval // the region's own setting wins
		}
		wg.Go(func() { r.saveLoop(runCtx, interval) })
		wg.Go(func() { r.markLoop(runCtx) })
	}
	wg.Go(func() { e.sweepLoop(runCtx) })
	if e.fleet != nil {
		regions := make([]*Region, 0, len(e.names))
		for _, name := range e.names {
			regions = append(regions, e.regions[name])
		}
		wg.Go(func() { e.fleet.run(runCtx, regions) })
	}
	for _, w := range e.worlds {
		if w.watch != nil {
			wg.Go(func() { e.watchLoop(runCtx, w) })
		}
	}
	select {
	case <-ctx.Done():
	case <-e.stopping: // Close called meanwhile
	}
	e.stopIntake()
	cancel()
	wg.Wait()
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.ShutdownTimeout)
	defer scancel()
	return e.shutdown(sctx)
}

// sweepLoop closes the handouts past their lifespan until ctx ends.
func (e *Engine) sweepLoop(ctx context.Context) {
	tick := time.NewTicker(e.opts.sweepInterval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			e.out.expire(e.opts.Clock().Add(-e.opts.HandoutLifespan))
		}
	}
}

// Close shuts the engine down (see Run); an Engine that runs stops its
// Run. It is idempotent and returns the shutdown's error.
func (e *Engine) Close(ctx context.Context) error {
	e.stopIntake()
	if e.running.Load() {
		// Run performs the shutdown once its loops have stopped.
		select {
		case <-e.runDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return e.shutdown(ctx)
}

// stopIntake makes new and waiting calls fail with ReasonShutdown.
func (e *Engine) stopIntake() { e.stopOnce.Do(func() { close(e.stopping) }) }

// stopped reports whether shutdown has started.
func (e *Engine) stopped() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// shutdown closes everything once, in order; later calls return the first
// call's error.
func (e *Engine) shutdown(ctx context.Context) error {
	e.shutOnce.Do(func() {
		e.stopIntake()
		var errs []error
		for _, name := range e.names {
			r := e.regions[name]
			if r == nil {
				continue
			}
			if r.pipe != nil {
				if err := r.pipe.Close(ctx); err != nil {
					errs = append(errs, fmt.Errorf("engine: region %q: %w", name, err))
				}
			}
			if r.mem != nil {
				r.drainMarks()
				if err := r.saveMemory(); err != nil {
					errs = append(errs, fmt.Errorf("engine: region %q: save memory: %w", name, err))
				}
			}
		}
		e.out.closeAll()
		if e.leasesCloser != nil {
			// After the pipelines: their leases stay in the store, for
			// the other nodes to redeem.
			if err := e.leasesCloser.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: lease store: %w", err))
			}
		}
		for _, hv := range e.http {
			hv.Close()
		}
		for _, w := range e.worlds {
			if w.archive != nil {
				if err := w.archive.Flush(ctx); err != nil {
					errs = append(errs, fmt.Errorf("engine: world %q: archive flush: %w", w.name, err))
				}
				if err := w.archive.Close(ctx); err != nil {
					errs = append(errs, fmt.Errorf("engine: world %q: %w", w.name, err))
				}
			}
			if w.resident != nil {
				if err := w.resident.Shutdown(ctx); err != nil {
					errs = append(errs, fmt.Errorf("engine: world %q: resident store: %w", w.name, err))
				}
			}
			if w.closer != nil {
				if err := w.closer.Close(); err != nil {
					errs = append(errs, fmt.Errorf("engine: world %q: %w", w.name, err))
				}
			}
		}
		if e.db != nil {
			// The locations, then the claims.
			if err := e.db.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: %w", err))
			}
		}
		e.shutErr = errors.Join(errs...)
	})
	return e.shutErr
}

// Stats are a region's counters and gauges.
type Stats struct {
	Region string `json:"region"`
	World  string `json:"world"`
	// Paused reports whether the region's scan is paused (ScanPause).
	Paused   bool `json:"paused"`
	Restored int  `json:"restored"` // cold entries restored at start
	// Recovery tells what the region found of the previous run at start.
	Recovery RecoveryStats `json:"recovery"`
	// Latency summarizes the durations of the region's teleports served
	// since start (Location.Waited), misses and failures excluded.
	Latency Latency `json:"latency"`
	// Served counts the locations handed out, by the name of the sink
	// that served them.
	Served   map[string]uint64 `json:"served"`
	Handouts HandoutStats      `json:"handouts"`
	Unique   UniqueStats       `json:"unique"`
	// UnknownBlocks counts the block names the collision data does not
	// know, which are never landed on.
	UnknownBlocks safety.UnknownStats `json:"unknownBlocks"`
	Pipeline      pipeline.Stats      `json:"pipeline"`
	Memory        memory.Stats        `json:"memory"`
	Resident      world.ResidentStats `json:"resident"` // the region's world's store
	// Watch describes the change watcher of a Minecraft world; nil for
	// other worlds or with watching off.
	Watch *WatchStats `json:"watch,omitempty"`
	// Fleet describes the node's part in a fleet; nil when the engine
	// runs alone.
	Fleet *FleetStats `json:"fleet,omitempty"`
	// Exhaustion tells whether the region has no safe place left.
	Exhaustion ExhaustionStats `json:"exhaustion"`
}

// HandoutStats count the locations handed out by a region and how their
// reservations ended.
type HandoutStats struct {
	Open      int64  `json:"open"`      // handed out, not yet closed
	Completed uint64 `json:"completed"` // closed by Complete
	Cancelled uint64 `json:"cancelled"` // closed by Cancel
	Expired   uint64 `json:"expired"`   // closed by their lifespan
	// Replaced counts the handouts closed because their player took a
	// new one (HandoutLimits.PerPlayer); Refused the teleports refused
	// with ReasonTooManyOpen (HandoutLimits.Total).
	Replaced uint64 `json:"replaced"`
	Refused  uint64 `json:"refused"`
}

// UniqueStats count the work of unique placement (see
// RegionLive.UniqueRadius).
type UniqueStats struct {
	Radius int64 `json:"radius"` // in blocks; 0 when off
	// Marked counts the places whose area was marked; Chunks the chunks
	// marked for them.
	Marked uint64 `json:"marked"`
	Chunks uint64 `json:"chunks"`
	// Lost counts places not marked because the queue of marks was full.
	Lost uint64 `json:"lost"`
	// Dropped counts cached locations found inside a marked area, or too
	// close to a place handed out since they were cached, when taken, and
	// closed instead of handed out.
	Dropped uint64 `json:"dropped"`
	// SpotChunks is the number of chunks holding spots handed out whose
	// marks have not expired.
	SpotChunks int `json:"spotChunks"`
}

// Stats returns the stats of a region. It fails with an *Error of
// ReasonUnknownRegion for a name not configured.
func (e *Engine) Stats(region string) (Stats, error) {
	r := e.regions[region]
	if r == nil {
		return Stats{}, &Error{Region: region, Reason: ReasonUnknownRegion}
	}
	served := make(map[string]uint64, len(r.served))
	for name, c := range r.served {
		served[name] = c.Load()
	}
	pst := r.pipe.Stats()
	return Stats{
		Region:   region,
		World:    r.spec.World,
		Paused:   r.paused.Load(),
		Restored: r.restored,
		Recovery: r.recovery,
		Latency:  r.latency.Latency(),
		Served:   served,
		Handouts: HandoutStats{
			Open:      r.ctr.open.Load(),
			Completed: r.ctr.completed.Load(),
			Cancelled: r.ctr.cancelled.Load(),
			Expired:   r.ctr.expired.Load(),
			Replaced:  e.out.replacedCount(r),
			Refused:   e.out.refusedCount(r),
		},
		Unique: UniqueStats{
			Radius:     r.unique.Load(),
			Marked:     r.ctr.marked.Load(),
			Chunks:     r.ctr.markedChunks.Load(),
			Lost:       r.ctr.marksLost.Load(),
			Dropped:    r.ctr.dropped.Load(),
			SpotChunks: r.placed.len(),
		},
		UnknownBlocks: r.checker.Unknown(),
		Pipeline:      pst,
		Memory:        r.mem.Stats(),
		Resident:      r.world.resident.Stats(),
		Watch:         r.world.watch.stats(region),
		Fleet:         r.fleetStats(pst),
		Exhaustion:    r.exhaustionStats(),
	}, nil
}

// chunkBlock returns the world block of chunk-local column (x, z) of c.
func chunkBlock(c geom.Chunk, x, z int) geom.Block {
	o := c.Origin()
	return geom.Block{X: o.X + int64(x), Z: o.Z + int64(z)}
}
