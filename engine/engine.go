package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/world/anvil"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// Defaults of Options.
const (
	DefaultSaveInterval    = time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// ClaimsFile is the claims database, in the data folder.
	ClaimsFile = "claims.db"
	// MemoryDir is the folder of the memory files, in the data folder.
	MemoryDir = "memory"
)

// ErrUnsupported is in the chain of the error New returns for a
// configuration this first cut cannot run (a Minecraft world, an http
// verifier).
var ErrUnsupported = errors.New("engine: not supported yet")

// Options configure an Engine. The zero value selects every default.
type Options struct {
	// Logger receives the engine's and its parts' log lines. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock tells the time to the pipelines, memory tables, resident
	// stores and claims store. Periods (pulses, saves) are measured with
	// real timers. Default time.Now.
	Clock func() time.Time
	// SaveInterval is how often Run saves each region's memory file
	// besides at shutdown. Default DefaultSaveInterval (1 min).
	SaveInterval time.Duration
	// ShutdownTimeout bounds the orderly shutdown Run performs once its
	// context ends. Default DefaultShutdownTimeout (10 s).
	ShutdownTimeout time.Duration
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
	return o
}

// Engine runs the regions of one configuration (see the package
// documentation).
//
// Make one with New; the zero value is not usable. An Engine is safe for
// concurrent use: Teleport, Complete, Stats and Claims may be called from
// any goroutine while Run runs. Run may be called once; it owns the
// goroutines it starts and stops them before it returns.
type Engine struct {
	opts Options
	log  *slog.Logger
	cfg  *config.Config

	db      *sqlitepersist.DB
	claims  *claims.Store
	policy  *ttl.Policy
	archive *archive.Archive // of the first procedural world; nil if none
	worlds  map[string]*worldState
	regions map[string]*Region
	names   []string // region names, sorted

	stopping chan struct{} // closed when shutdown starts
	stopOnce sync.Once
	shutOnce sync.Once
	shutErr  error
	running  atomic.Bool
	runDone  chan struct{} // closed when Run returns

	nextID atomic.Uint64
	outMu  sync.Mutex
	// outMu protects the following field.
	out map[uint64]*pipeline.Hot // locations handed out, until Complete
}

// worldState is one world's chunk source and resident store.
type worldState struct {
	name     string
	archive  *archive.Archive // procedural worlds only
	source   world.Source
	closer   io.Closer // the region-file reader of a Minecraft world
	resident *world.Resident
}

// New opens what cfg names and builds every world and region (see the
// package documentation). On error everything opened so far is closed.
func New(ctx context.Context, cfg *config.Config, opts Options) (_ *Engine, err error) {
	if cfg == nil {
		return nil, errors.New("engine: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	opts = opts.withDefaults()
	e := &Engine{
		opts:     opts,
		log:      opts.Logger,
		cfg:      cfg,
		worlds:   map[string]*worldState{},
		regions:  map[string]*Region{},
		stopping: make(chan struct{}),
		runDone:  make(chan struct{}),
		out:      map[uint64]*pipeline.Hot{},
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
			defer cancel()
			_ = e.shutdown(cctx)
		}
	}()
	for _, v := range cfg.Verifiers {
		if v.Kind != config.KindClaims {
			return nil, fmt.Errorf("%w: verifier %q of kind %s", ErrUnsupported, v.Name, v.Kind)
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, MemoryDir), 0o755); err != nil {
		return nil, fmt.Errorf("engine: data folder: %w", err)
	}
	if e.policy, err = ttl.LoadFileOrDefault(cfg.TTLPath()); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.claims, err = claims.Open(ctx, cfg.InDataDir(ClaimsFile), claims.Options{Clock: opts.Clock}); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.db, err = sqlitepersist.Open(ctx, cfg.DatabasePath(), sqlitepersist.Options{Logger: e.log}); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	worldNames := make([]string, 0, len(cfg.Worlds))
	for name := range cfg.Worlds {
		worldNames = append(worldNames, name)
	}
	slices.Sort(worldNames)
	for _, name := range worldNames {
		w, err := e.openWorld(ctx, name, cfg.Worlds[name])
		if err != nil {
			return nil, err
		}
		e.worlds[name] = w
	}
	for name := range cfg.Regions {
		e.names = append(e.names, name)
	}
	slices.Sort(e.names)
	for _, name := range e.names {
		r, err := e.openRegion(ctx, name, cfg.Regions[name])
		if err != nil {
			return nil, err
		}
		e.regions[name] = r
	}
	return e, nil
}

// openWorld builds a world's chunk source and resident store: a
// Minecraft save folder read through world/anvil (read-only), or the
// procedural world (procgen -> archive -> procworld).
func (e *Engine) openWorld(ctx context.Context, name string, wc config.World) (*worldState, error) {
	switch wc.Kind {
	case config.KindProcedural:
		return e.openProcedural(ctx, name, wc)
	case config.KindMinecraft:
		opts, err := wc.AnvilOptions()
		if err != nil {
			return nil, fmt.Errorf("engine: world %q: %w", name, err)
		}
		src, err := anvil.Open(wc.Path, opts)
		if err != nil {
			return nil, fmt.Errorf("engine: world %q: %w", name, err)
		}
		w := &worldState{name: name, source: src, closer: src}
		w.resident = world.NewResident(src, world.ResidentOptions{Clock: e.opts.Clock, Logger: e.log.With("world", name)})
		return w, nil
	}
	return nil, fmt.Errorf("%w: world %q of kind %s", ErrUnsupported, name, wc.Kind)
}

// openProcedural builds a procedural world: procgen -> archive -> procworld
// -> resident store. The first procedural world gets the archive store.
func (e *Engine) openProcedural(ctx context.Context, name string, wc config.World) (*worldState, error) {
	gen, err := procgen.New(wc.Procedural.Params())
	if err != nil {
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	aopts := archive.Options{Logger: e.log.With("world", name), Clock: e.opts.Clock}
	var store archive.Store
	switch {
	case e.cfg.Archive.Disabled:
		aopts.StoreError = errors.New("archive disabled in the configuration")
	case e.archive != nil:
		aopts.StoreError = errors.New("the archive store serves another world")
	default:
		s, err := sqlitestore.Open(ctx, e.cfg.ArchivePath(), sqlitestore.Options{Limits: e.cfg.Archive.Limits(), Logger: e.log})
		if err != nil {
			aopts.StoreError = err
		} else {
			store = s
		}
	}
	arch, err := archive.Wrap(gen, store, aopts)
	if err != nil {
		if store != nil {
			_ = store.Close()
		}
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	if store != nil {
		e.archive = arch
	}
	w := &worldState{name: name, archive: arch}
	if w.source, err = procworld.New(arch, procworld.Options{}); err != nil {
		_ = arch.Close(ctx)
		return nil, fmt.Errorf("engine: world %q: %w", name, err)
	}
	w.resident = world.NewResident(w.source, world.ResidentOptions{Clock: e.opts.Clock, Logger: e.log.With("world", name)})
	return w, nil
}

// regionKey is the configuration a region's persisted locations were
// verified under: a change of any of it drops them on the next start.
type regionKey struct {
	World     config.World
	Shape     config.Shape
	Safety    safety.Rules
	Verifiers []string
}

// openRegion builds a region: memory table, checker, verifiers, pipeline,
// and restores its persisted locations.
func (e *Engine) openRegion(ctx context.Context, name string, rc config.Region) (*Region, error) {
	w, ok := e.worlds[rc.World]
	if !ok {
		return nil, fmt.Errorf("engine: region %q: unknown world %q", name, rc.World)
	}
	shape, err := rc.BuildShape()
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	dist, err := rc.BuildDistribution()
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	checker, err := safety.New(rc.Safety)
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	r := &Region{
		e:        e,
		name:     name,
		cfg:      rc,
		world:    w,
		shape:    shape,
		dist:     dist,
		checker:  checker,
		memPath:  filepath.Join(e.cfg.DataDir, MemoryDir, name+".bin"),
		pulsed:   make(chan struct{}),
		log:      e.log.With("region", name),
		verifier: verify.New(verify.Options{}),
	}
	mopts := rc.MemoryOptions()
	mopts.Shape = shape
	mopts.World = rc.World
	mopts.TTL = e.policy.TTL
	mopts.Clock = e.opts.Clock
	r.mem, err = memory.Open(r.memPath, mopts)
	var ce *memory.CorruptError
	switch {
	case errors.As(err, &ce) && r.mem != nil:
		r.log.Warn("engine: memory file corrupt; moved aside, starting empty", "path", r.memPath, "movedTo", ce.MovedTo, "err", err)
	case err != nil:
		return nil, fmt.Errorf("engine: region %q: memory: %w", name, err)
	}
	if e.regionVerified(name) {
		if err := e.claims.Register(r.verifier); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
	}
	keyBytes, err := json.Marshal(regionKey{World: e.cfg.Worlds[rc.World], Shape: rc.Shape, Safety: rc.Safety, Verifiers: r.verifier.Sources()})
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: key: %w", name, err)
	}
	persister, err := e.db.Region(name, pipeline.NewKey(uint64(e.cfg.Worlds[rc.World].Procedural.Seed), keyBytes))
	if err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	popts := rc.PipelineOptions(name)
	popts.Shape = shape
	popts.Memory = r.mem
	popts.Reserver = w.resident
	popts.Screen = r.screen
	popts.Check = r.check
	popts.Verifiers = r.verifier
	popts.Persister = persister
	popts.Clock = e.opts.Clock
	popts.Logger = e.log
	if rc.Sinks.Network.Enabled {
		if popts.Network.Secret, err = rc.Sinks.Network.Secret(); err != nil {
			return nil, fmt.Errorf("engine: region %q: %w", name, err)
		}
	}
	if r.pipe, err = pipeline.New(popts); err != nil {
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	n, err := r.pipe.Restore(ctx)
	if err != nil {
		_ = r.pipe.Close(ctx)
		return nil, fmt.Errorf("engine: region %q: %w", name, err)
	}
	r.restored = n
	r.log.Info("engine: region ready", "world", rc.World, "chunks", shape.Len(), "restored", n)
	return r, nil
}

// regionVerified reports whether the claims store checks region: always
// when no verifier is configured; otherwise when a claims verifier lists
// the region or lists none.
func (e *Engine) regionVerified(region string) bool {
	if len(e.cfg.Verifiers) == 0 {
		return true
	}
	for _, v := range e.cfg.Verifiers {
		if v.Kind == config.KindClaims && (len(v.Regions) == 0 || slices.Contains(v.Regions, region)) {
			return true
		}
	}
	return false
}

// Claims returns the claims store. Claims added to it are in force at once
// for every region it verifies.
func (e *Engine) Claims() *claims.Store { return e.claims }

// Region returns the region of that name, or nil.
func (e *Engine) Region(name string) *Region { return e.regions[name] }

// Regions returns the names of the regions, sorted.
func (e *Engine) Regions() []string { return slices.Clone(e.names) }

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
		wg.Go(func() { r.saveLoop(runCtx, e.opts.SaveInterval) })
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

// stopIntake makes new and waiting teleports fail with ReasonShutdown.
func (e *Engine) stopIntake() { e.stopOnce.Do(func() { close(e.stopping) }) }

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
				if err := r.mem.Save(r.memPath); err != nil {
					errs = append(errs, fmt.Errorf("engine: region %q: save memory: %w", name, err))
				}
			}
		}
		e.outMu.Lock()
		for id, h := range e.out {
			h.Close()
			delete(e.out, id)
		}
		e.outMu.Unlock()
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
			if err := e.db.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: %w", err))
			}
		}
		if e.claims != nil {
			if err := e.claims.Close(); err != nil {
				errs = append(errs, fmt.Errorf("engine: %w", err))
			}
		}
		e.shutErr = errors.Join(errs...)
	})
	return e.shutErr
}

// Stats are a region's counters and gauges.
type Stats struct {
	Region   string              `json:"region"`
	World    string              `json:"world"`
	Restored int                 `json:"restored"` // cold entries restored at start
	Pipeline pipeline.Stats      `json:"pipeline"`
	Memory   memory.Stats        `json:"memory"`
	Resident world.ResidentStats `json:"resident"` // the region's world's store
}

// Stats returns the stats of a region. It fails with an *Error of
// ReasonUnknownRegion for a name not configured.
func (e *Engine) Stats(region string) (Stats, error) {
	r := e.regions[region]
	if r == nil {
		return Stats{}, &Error{Region: region, Reason: ReasonUnknownRegion}
	}
	return Stats{
		Region:   region,
		World:    r.cfg.World,
		Restored: r.restored,
		Pipeline: r.pipe.Stats(),
		Memory:   r.mem.Stats(),
		Resident: r.world.resident.Stats(),
	}, nil
}

// chunkBlock returns the world block of chunk-local column (x, z) of c.
func chunkBlock(c geom.Chunk, x, z int) geom.Block {
	o := c.Origin()
	return geom.Block{X: o.X + int64(x), Z: o.Z + int64(z)}
}
