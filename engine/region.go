package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// markQueue bounds the places waiting for their unique-placement marks.
const markQueue = 1024

// Region is one configured region: its shape and distribution, memory,
// safety checker, verifiers and pipeline, on its world. Regions are made by
// New; the zero value is not usable. A Region is safe for concurrent use.
type Region struct {
	e        *Engine
	name     string
	spec     RegionSpec // resolved, as given to New; Reload changes the live fields below
	world    *worldState
	shape    geom.Shape
	dist     geom.Distribution
	checker  *safety.Checker
	verifier *verify.Registry
	mem      *memory.Table
	memPath  string
	// memExisted reports that the memory file held data before this start.
	memExisted bool
	pipe       *pipeline.Pipeline
	restored   int
	log        *slog.Logger
	leaseTTL   time.Duration

	// Live settings, changed by Reload and ScanPause/ScanResume.
	period atomic.Int64 // pulse period, in nanoseconds
	unique atomic.Int64 // unique-placement radius, in blocks; 0 off
	paused atomic.Bool

	// loopMu is held by every pulse; ScanReset holds it to keep pulses
	// out while it empties the region.
	loopMu     sync.Mutex
	firstPulse chan struct{} // closed after the first pulse
	firstOnce  sync.Once

	// Set by initSinks before the pipeline runs, read-only afterwards.
	served map[string]*atomic.Uint64 // by sink name: locations handed out
	names  struct{ login, network, personal string }

	exhaust exhaustion // set after each pulse (checkExhausted)
	latency histogram
	saveMu  sync.Mutex  // serializes saveMemory (the save loop, the watcher, shutdown)
	placed  *placements // the spots handed out (unique placement)
	// journal keeps the memory's rejections and the spots between saves
	// (nil without one); set by recoverJournal before the region runs.
	journal  pipeline.Journal
	recovery RecoveryStats   // set at start, read-only afterwards
	fleet    *regionFleet    // nil unless the engine is a fleet node
	marks    chan geom.Block // places whose area awaits its marks
	ctr      struct {
		open                 atomic.Int64
		completed, cancelled atomic.Uint64
		expired              atomic.Uint64
		marked, markedChunks atomic.Uint64
		marksLost, dropped   atomic.Uint64
	}
}

// Name returns the region's name.
func (r *Region) Name() string { return r.name }

// Shape returns the region's shape, in chunks.
func (r *Region) Shape() geom.Shape { return r.shape }

// Distribution returns the region's distribution: the pipeline draws its
// candidates through it.
func (r *Region) Distribution() geom.Distribution { return r.dist }

// Checker returns the region's safety checker.
func (r *Region) Checker() *safety.Checker { return r.checker }

// Pipeline returns the region's pipeline.
func (r *Region) Pipeline() *pipeline.Pipeline { return r.pipe }

// Memory returns the region's spatial memory.
func (r *Region) Memory() *memory.Table { return r.mem }

// MemoryPath returns the path of the region's memory file.
func (r *Region) MemoryPath() string { return r.memPath }

// Pulse returns the period of the region's pulses (Reload may change it).
func (r *Region) Pulse() time.Duration { return time.Duration(r.period.Load()) }

// Verifiers returns the region's verifier registry.
func (r *Region) Verifiers() *verify.Registry { return r.verifier }

// initSinks records the names of the pipeline's sinks and makes a
// counter for each. It runs before the pipeline does any work, so
// the maps are read without a lock afterwards.
func (r *Region) initSinks(o pipeline.Options) {
	r.served = map[string]*atomic.Uint64{}
	add := func(name string) { r.served[name] = new(atomic.Uint64) }
	add(r.pipe.General().Name())
	if l := r.pipe.Login(); l != nil {
		r.names.login = l.Name()
		add(l.Name())
	}
	if n := r.pipe.Network(); n != nil {
		r.names.network = n.Name()
		add(n.Name())
	}
	if p := r.pipe.Personal(); p != nil {
		r.names.personal = p.Name()
		add(p.Name())
	}
	for _, g := range r.pipe.Groups() {
		add(g.Name())
	}
}

// wakeAll wakes every waiting request of the region, so that each looks
// at the region's state again (paused).
func (r *Region) wakeAll() { r.pipe.Wake() }

// screen is the pipeline's ScreenFunc: the safety screen on the chunk's
// surface summary, read through the archive, without a reservation.
func (r *Region) screen(ctx context.Context, c geom.Chunk) (pipeline.Screened, error) {
	ch, err := world.Summary(ctx, r.world.source, c)
	switch {
	case errors.Is(err, world.ErrUngenerated):
		// Memory keeps it: on a watched Minecraft world until the
		// watcher sees the game write the chunk (see worldttl.go),
		// elsewhere for causes.ungenerated.
		return pipeline.Screened{Cause: memory.CauseUngenerated, Detail: "not generated"}, nil
	case errors.Is(err, world.ErrUnreadable):
		// Damaged on disk: reading it again fails again until its file
		// changes, which the watcher reports (memory then forgets it).
		return pipeline.Screened{Cause: memory.CauseUnreadable, Detail: "unreadable"}, nil
	case errors.Is(err, world.ErrOutside):
		return pipeline.Screened{Cause: memory.CauseWorldBorder, Detail: "outside the world"}, nil
	case err != nil:
		return pipeline.Screened{}, fmt.Errorf("engine: summary of %v: %w", c, err)
	}
	var skip func(x, z int) bool
	if radius := r.unique.Load(); radius > 0 {
		ex := r.placed.excluded(c, radius, r.markSince(r.e.opts.Clock()))
		if ex != [4]uint64{} {
			skip = func(x, z int) bool {
				i := z*world.ChunkSize + x
				return ex[i>>6]&(1<<(i&63)) != 0
			}
		}
	}
	x, z, y, cause, ok := r.checker.ScreenExcept(ch, nil, skip)
	if !ok {
		return pipeline.Screened{Cause: cause}, nil
	}
	return pipeline.Screened{OK: true, Block: chunkBlock(c, x, z), Y: y}, nil
}

// check is the pipeline's CheckFunc: the full safety check of the column
// on the reserved chunk. The verifiers run after it, in the pipeline.
// Unique placement is not its business: a promotion drops a location whose
// chunk memory holds as rejected before reserving it, and admit refuses,
// at the hand-out, a place in a marked chunk or too close to a spot handed
// out since. (Refusing here with CauseUniquePlacement recorded a 30-day
// rejection over chunks memory held bad for another cause, and such a
// rejection inside a run on probation restores the whole run.)
func (r *Region) check(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
	result, ok := r.checker.Accepts(res, b)
	if !ok {
		return 0, result.Cause(), false
	}
	return result.Y, 0, true
}

// pulseLoop pulses the pipeline every period (which Reload may change)
// until ctx ends. A paused region only keeps time (pipeline.Housekeep):
// nothing is screened, promoted or moved, but network leases still end.
func (r *Region) pulseLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		var err error
		if r.paused.Load() {
			err = r.pipe.Housekeep(ctx)
		} else {
			r.loopMu.Lock()
			err = r.pipe.Pulse(ctx)
			if err == nil {
				r.checkExhausted(r.e.opts.Clock())
			}
			r.loopMu.Unlock()
		}
		r.firstOnce.Do(func() { close(r.firstPulse) })
		switch {
		case errors.Is(err, pipeline.ErrClosed) || ctx.Err() != nil:
			return
		case err != nil:
			r.log.Warn("engine: pulse failed", "err", err)
		}
		timer.Reset(time.Duration(r.period.Load()))
	}
}

// saveLoop saves the memory file every interval (Options.SaveInterval)
// until ctx ends (the final save is the shutdown's); each save trims the
// journal of the marks it covers.
func (r *Region) saveLoop(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := r.saveMemory(); err != nil {
				r.log.Warn("engine: saving memory failed", "path", r.memPath, "err", err)
			}
		}
	}
}

// queueMark asks for the area around b to be marked, without blocking:
// when the queue is full the place is counted as lost.
func (r *Region) queueMark(b geom.Block) {
	select {
	case r.marks <- b:
	default:
		r.ctr.marksLost.Add(1)
	}
}

// markLoop marks the areas of the places queued until ctx ends, then
// marks those still queued. After each batch it rebuilds the memory
// table, so that the marks count at once (IsBad, draws).
func (r *Region) markLoop(ctx context.Context) {
	sweep := time.NewTicker(spotSweep)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			r.drainMarks()
			return
		case b := <-r.marks:
			r.markArea(b)
			r.drainMarks()
			r.mem.Rebuild()
		case <-sweep.C:
			r.placed.sweep(r.markSince(r.e.opts.Clock()))
		}
	}
}

// spotSweep is how often the spots whose marks expired are forgotten.
const spotSweep = time.Minute

// marksChunks reports whether a unique-placement radius can leave a chunk
// without a column, so that a hand-out must mark chunks in memory (see
// markArea): a chunk's farthest column from any of its columns is at
// most 8 blocks away on each axis.
func marksChunks(radius int64) bool { return radius*radius > 2*8*8 }

// drainMarks marks the areas of every place queued, without waiting.
func (r *Region) drainMarks() {
	for {
		select {
		case b := <-r.marks:
			r.markArea(b)
		default:
			return
		}
	}
}

// markArea records as rejected, with memory.CauseUniquePlacement, the
// chunks of the region's shape that the unique-placement radius around b
// leaves no column of: those entirely within the radius. Past
// maxColumnRadius, where spots are spaced chunk by chunk, every chunk
// whose centre lies within the radius is marked, and b's own chunk.
func (r *Region) markArea(b geom.Block) {
	radius := r.unique.Load()
	if radius <= 0 {
		return
	}
	r.ctr.marked.Add(1)
	own := b.Chunk()
	lo := geom.Block{X: b.X - radius, Z: b.Z - radius}.Chunk()
	hi := geom.Block{X: b.X + radius, Z: b.Z + radius}.Chunk()
	r2 := radius * radius
	within := func(x, z int64) bool { dx, dz := x-b.X, z-b.Z; return dx*dx+dz*dz < r2 }
	for cz := lo.Z; cz <= hi.Z; cz++ {
		for cx := lo.X; cx <= hi.X; cx++ {
			c := geom.Chunk{X: cx, Z: cz}
			if radius > maxColumnRadius {
				if m := c.Center(); c != own && !within(m.X, m.Z) {
					continue
				}
			} else {
				o := c.Origin()
				const e = world.ChunkSize - 1
				if !within(o.X, o.Z) || !within(o.X+e, o.Z) || !within(o.X, o.Z+e) || !within(o.X+e, o.Z+e) {
					continue
				}
			}
			if !r.shape.Contains(c) {
				continue
			}
			if err := r.mem.AddBadChunk(c, memory.CauseUniquePlacement, ""); err != nil {
				r.log.Warn("engine: unique placement mark failed", "chunk", c, "err", err)
				continue
			}
			r.ctr.markedChunks.Add(1)
		}
	}
}
