package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
)

// DefaultWatchPeriod is how often a Minecraft world's region folder is
// polled for chunks the game rewrote (Options.WatchPeriod).
const DefaultWatchPeriod = time.Second

// Change watching.
//
// A Minecraft server rewrites its region files while the engine runs, so a
// place checked against a chunk can stop being safe. Every Minecraft world
// has a watcher: New takes the region folder's baseline (the first Poll,
// which reports nothing) before any chunk is read, and Run polls it every
// Options.WatchPeriod on a goroutine it owns. For each poll that reports
// changed chunks the watcher, in this order:
//
//  1. bumps the world's epochs (world.Epochs), so the resident store
//     reloads those chunks and every reservation on an old copy reports
//     Stale: no hand-out path of the pipeline gives its place out;
//  2. makes every region of the world forget what its memory holds about
//     them (memory.Table.Forget), so a chunk rejected before its change is
//     screened again;
//  3. drops the cached entries of those chunks from every region's
//     pipeline (pipeline.Pipeline.DropChanged), so the sinks refill at once;
//  4. counts them (WatchStats.ChangedChunks, World.Changes): a reader
//     that sees the count sees the steps above done (the web map keys its
//     tiles' digests by it).
//
// Between a change on disk and the poll that sees it (one period at most,
// plus the poll itself) the old places can still be handed out: polling
// bounds the window, it does not close it.

// changeSource is what a watcher polls: *anvil.World.
type changeSource interface {
	Poll(ctx context.Context) (anvil.Changes, error)
}

var _ changeSource = (*anvil.World)(nil)

// watcher follows the changes of one Minecraft world.
type watcher struct {
	src    changeSource
	epochs *world.Epochs
	period time.Duration

	polls, errors            atomic.Uint64
	chunks, regions, damaged atomic.Uint64
	reported                 atomic.Uint64 // chunks reported by ChunksChanged
	// held is the world's source with the reported chunks held (set
	// once by openMinecraft).
	held *heldSource
	// Per region of the world, by name (fixed once New returns).
	perRegion map[string]*regionWatch
}

// regionWatch counts what the watcher did to one region.
type regionWatch struct {
	forgotten, dropped atomic.Uint64
}

// WatchStats describe the change watcher of a region's Minecraft world
// (see DefaultWatchPeriod). World-wide counts are shared by the world's
// regions; Forgotten and Dropped are the region's own. Stale hot entries
// found at a take are counted by the pipeline (pipeline.Stats.Changed).
type WatchStats struct {
	Period time.Duration `json:"-"`
	// PeriodMs is Period in milliseconds, for JSON.
	PeriodMs float64 `json:"periodMs"`
	Polls    uint64  `json:"polls"`  // polls done since start (the baseline included)
	Errors   uint64  `json:"errors"` // polls that failed (nothing recorded)
	// ChangedChunks and ChangedRegions count the chunks and region files
	// the polls reported changed; Damaged the chunks already unreadable.
	ChangedChunks  uint64 `json:"changedChunks"`
	ChangedRegions uint64 `json:"changedRegions"`
	Damaged        uint64 `json:"damaged"`
	// Reported counts the chunks the game server reported changed
	// (Engine.ChunksChanged); Held how many of them are held now,
	// waiting to be saved.
	Reported uint64 `json:"reported"`
	Held     int    `json:"held"`
	// Forgotten counts the memory cells of the region's changed chunks
	// that held a rejection; Dropped the cached entries (hot and cold)
	// removed from its pipeline because their chunk changed.
	Forgotten uint64 `json:"forgotten"`
	Dropped   uint64 `json:"dropped"`
	// Reader is what the world's region-file reader counted: chunk reads
	// that failed, torn reads retried, chunks known damaged now, warnings
	// held back by the rate limit.
	Reader anvil.Stats `json:"reader"`
}

// watchPeriod resolves Options.WatchPeriod: 0 is the default, negative off.
func (o Options) watchPeriod() time.Duration {
	if o.WatchPeriod == 0 {
		return DefaultWatchPeriod
	}
	return o.WatchPeriod
}

// newWatcher returns the watcher of a world read from src, after its
// baseline poll, or nil when watching is off. A failed baseline is logged
// and counted; the next poll takes it.
func (e *Engine) newWatcher(ctx context.Context, name string, own time.Duration, src changeSource) *watcher {
	period := e.opts.watchPeriod()
	if wp := own; wp != 0 {
		period = wp // the world's own setting wins over the engine's
	}
	if period < 0 {
		return nil
	}
	w := &watcher{src: src, epochs: world.NewEpochs(), period: period, perRegion: map[string]*regionWatch{}}
	w.polls.Add(1)
	if _, err := src.Poll(ctx); err != nil {
		w.errors.Add(1)
		e.log.Warn("engine: watching the region files failed", "world", name, "err", err)
	}
	return w
}

// stats returns the watcher's stats as region sees them; nil for a world
// without a watcher.
func (w *watcher) stats(region string) *WatchStats {
	if w == nil {
		return nil
	}
	st := &WatchStats{
		Period: w.period, PeriodMs: float64(w.period) / float64(time.Millisecond), Polls: w.polls.Load(), Errors: w.errors.Load(),
		ChangedChunks: w.chunks.Load(), ChangedRegions: w.regions.Load(), Damaged: w.damaged.Load(),
		Reported: w.reported.Load(),
	}
	if w.held != nil {
		st.Held = w.held.heldCount()
	}
	if rw := w.perRegion[region]; rw != nil {
		st.Forgotten, st.Dropped = rw.forgotten.Load(), rw.dropped.Load()
	}
	if r, ok := w.src.(interface{ Stats() anvil.Stats }); ok {
		st.Reader = r.Stats()
	}
	return st
}

// watchLoop polls ws every period until ctx ends.
func (e *Engine) watchLoop(ctx context.Context, ws *worldState) {
	tick := time.NewTicker(ws.watch.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			e.pollWorld(ctx, ws)
		}
	}
}

// pollWorld polls one world and applies what changed (see the notes
// above).
func (e *Engine) pollWorld(ctx context.Context, ws *worldState) {
	w := ws.watch
	start := time.Now()
	var poll uint64
	if w.held != nil {
		poll = w.held.pollStarted()
	}
	ch, err := w.src.Poll(ctx)
	w.polls.Add(1)
	if err != nil {
		if ctx.Err() == nil {
			w.errors.Add(1)
			e.log.Warn("engine: polling the region files failed", "world", ws.name, "err", err)
		}
		return
	}
	if len(ch.Chunks) == 0 {
		return
	}
	w.regions.Add(uint64(len(ch.Regions)))
	w.damaged.Add(uint64(len(ch.Damaged)))
	if w.held != nil {
		w.held.saved(poll, ch.Chunks)
	}
	forgotten, dropped := e.applyChanged(ws, ch.Chunks)
	// Counted once their epochs are bumped: a reader that sees the new
	// count (World.Changes) sees the new epochs.
	w.chunks.Add(uint64(len(ch.Chunks)))
	e.log.Info("engine: region files changed",
		"world", ws.name, "chunks", len(ch.Chunks), "regions", len(ch.Regions), "damaged", len(ch.Damaged),
		"forgotten", forgotten, "dropped", dropped, "took", time.Since(start))
}

// applyChanged does what a change of chunks of ws does to the engine (see
// the notes above): it bumps their epochs, and makes every region of the
// world forget them and drop their cached entries. It returns the memory
// cells forgotten and the entries dropped.
func (e *Engine) applyChanged(ws *worldState, chunks []geom.Chunk) (forgotten, dropped int) {
	w := ws.watch
	w.epochs.Bump(chunks...)
	indices := make([]int64, 0, len(chunks))
	for _, name := range e.names {
		r := e.regions[name]
		if r == nil || r.world != ws {
			continue
		}
		indices = indices[:0]
		for _, c := range chunks {
			if i, err := r.mem.ChunkIndex(c); err == nil {
				indices = append(indices, i)
			}
		}
		if len(indices) == 0 {
			continue
		}
		f := r.mem.Forget(indices...)
		if f > 0 {
			// The journal still holds the forgotten rejections: a new
			// snapshot covers them, so that a restart does not bring
			// them back.
			if err := r.saveMemory(); err != nil {
				r.log.Warn("engine: saving memory after a change failed", "path", r.memPath, "err", err)
			}
		}
		d := r.pipe.DropChanged(chunks)
		if rw := w.perRegion[name]; rw != nil {
			rw.forgotten.Add(uint64(f))
			rw.dropped.Add(uint64(d))
		}
		forgotten += f
		dropped += d
	}
	return forgotten, dropped
}
