package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// Reported changes.
//
// The change watcher (watch.go) sees a chunk change only once the game has
// saved it, and a game server saves a chunk minutes after a player changed
// it. A server that tells the engine which chunks it changed
// (Engine.ChunksChanged, the HTTP server's POST /v1/worlds/{world}/changes)
// closes that window: the engine does at once what a poll reporting those
// chunks does (epochs bumped, memory forgotten, cached entries dropped),
// and it holds the chunks: until the region files show them saved after the
// report, the world's chunk source answers them as not generated
// (world.ErrUngenerated, a transient rejection that memory never keeps), so
// no screen or reservation reads the copy on disk that the change made
// stale.
//
// A hold ends at the first poll that reports the chunk changed and started
// after another poll that itself started after the report: a save before the
// report that the watcher had not yet seen ends no hold. A chunk the server
// never saves again is released after DefaultChangeHold,
// when its copy on disk is taken as current.

// DefaultChangeHold is how long a chunk reported changed stays held when the
// region files do not show it saved. A vanilla or Paper
// server saves every loaded chunk every five minutes.
const DefaultChangeHold = 10 * time.Minute

// MaxChangedChunks is the most chunks one ChunksChanged call takes.
const MaxChangedChunks = 4096

// ReasonUnknownWorld: no world of that name is configured.
const ReasonUnknownWorld = "unknown-world"

// ReasonNotWatched: ChunksChanged names a world whose changes the engine
// does not follow (a procedural world, or a Minecraft world with watching
// off).
const ReasonNotWatched = "not-watched"

// ChangeReport says what ChunksChanged did.
type ChangeReport struct {
	// Chunks is how many distinct chunks the call named.
	Chunks int `json:"chunks"`
	// Held is how many of them were not held before the call.
	Held int `json:"held"`
	// Forgotten and Dropped are the memory cells that held a rejection
	// and the cached entries removed, over every region of the world.
	Forgotten int `json:"forgotten"`
	Dropped   int `json:"dropped"`
}

// heldSource is a Minecraft world's chunk source with the chunks reported
// changed held (see the notes above). Safe for concurrent use.
type heldSource struct {
	src   world.Source
	clock func() time.Time
	hold  time.Duration

	// polls counts the watcher's polls started (pollStarted).
	polls atomic.Uint64
	// n is len(held), read without the lock on the load path.
	n atomic.Int64

	mu   sync.Mutex // protects held
	held map[geom.Chunk]holdMark
}

// holdMark is one held chunk: the polls started when it was last reported,
// and when the hold lapses without a save.
type holdMark struct {
	poll  uint64
	until time.Time
}

// errHeld is what a held chunk loads as.
var errHeld = fmt.Errorf("%w: changed by the game and not yet saved", world.ErrUngenerated)

func newHeldSource(src world.Source, clock func() time.Time, hold time.Duration) *heldSource {
	if clock == nil {
		clock = time.Now
	}
	if hold <= 0 {
		hold = DefaultChangeHold
	}
	return &heldSource{src: src, clock: clock, hold: hold, held: map[geom.Chunk]holdMark{}}
}

// isHeld reports whether pos is held now; it drops a lapsed hold.
func (h *heldSource) isHeld(pos geom.Chunk) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.held[pos]
	if !ok {
		return false
	}
	if !h.clock().Before(m.until) {
		delete(h.held, pos)
		h.n.Add(-1)
		return false
	}
	return true
}

// Load implements world.Source.
func (h *heldSource) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	if h.isHeld(pos) {
		return nil, &world.PosError{Pos: pos, Err: errHeld}
	}
	return h.src.Load(ctx, pos)
}

// Summary implements world.Screener.
func (h *heldSource) Summary(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	if h.isHeld(pos) {
		return nil, &world.PosError{Pos: pos, Err: errHeld}
	}
	return world.Summary(ctx, h.src, pos)
}

// report holds chunks and returns how many were not held.
func (h *heldSource) report(chunks []geom.Chunk) int {
	until := h.clock().Add(h.hold)
	poll := h.polls.Load()
	h.mu.Lock()
	defer h.mu.Unlock()
	added := 0
	for _, c := range chunks {
		if _, ok := h.held[c]; !ok {
			added++
		}
		h.held[c] = holdMark{poll: poll, until: until}
	}
	h.n.Store(int64(len(h.held)))
	return added
}

// pollStarted is called as a poll starts; it returns the poll's number.
func (h *heldSource) pollStarted() uint64 { return h.polls.Add(1) }

// saved releases the holds that a poll numbered poll, reporting chunks
// changed on disk, ends (see the notes above).
func (h *heldSource) saved(poll uint64, chunks []geom.Chunk) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range chunks {
		if m, ok := h.held[c]; ok && poll >= m.poll+2 {
			delete(h.held, c)
		}
	}
	h.n.Store(int64(len(h.held)))
}

// heldCount returns how many chunks are held (lapsed holds included until
// they are next looked at).
func (h *heldSource) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// ChunksChanged tells the engine that the game changed the given chunks of
// a Minecraft world (placed or broke blocks, poured a fluid) before saving
// them: the engine drops the cached places of those chunks from every
// region of the world, forgets what its memory rejected there, and holds
// the chunks until the region files show them saved (see the notes
// above), so that no place is drawn from a copy on disk the change made
// stale. Chunks may repeat; at most MaxChangedChunks are taken.
//
// The error is an *Error: ReasonUnknownWorld, ReasonNotWatched,
// ReasonInvalid (too many chunks) or ReasonShutdown. It is safe for
// concurrent use and does no I/O but a snapshot of the memory of a region
// that forgot a rejection.
func (e *Engine) ChunksChanged(worldName string, chunks []geom.Chunk) (ChangeReport, error) {
	ws := e.worlds[worldName]
	if ws == nil {
		return ChangeReport{}, &Error{Reason: ReasonUnknownWorld, Err: fmt.Errorf("no world %q", worldName)}
	}
	if e.stopped() {
		return ChangeReport{}, &Error{Reason: ReasonShutdown}
	}
	if ws.watch == nil || ws.watch.held == nil {
		return ChangeReport{}, &Error{Reason: ReasonNotWatched, Err: fmt.Errorf("world %q: changes are not followed", worldName)}
	}
	if len(chunks) > MaxChangedChunks {
		return ChangeReport{}, &Error{Reason: ReasonInvalid, Err: fmt.Errorf("%d chunks: at most %d", len(chunks), MaxChangedChunks)}
	}
	set := make(map[geom.Chunk]struct{}, len(chunks))
	uniq := make([]geom.Chunk, 0, len(chunks))
	for _, c := range chunks {
		if _, ok := set[c]; !ok {
			set[c] = struct{}{}
			uniq = append(uniq, c)
		}
	}
	rep := ChangeReport{Chunks: len(uniq)}
	if len(uniq) == 0 {
		return rep, nil
	}
	// Hold first: a screen or a reload that starts after this line reads
	// nothing of these chunks from disk.
	rep.Held = ws.watch.held.report(uniq)
	rep.Forgotten, rep.Dropped = e.applyChanged(ws, uniq)
	ws.watch.reported.Add(uint64(len(uniq)))
	return rep, nil
}
