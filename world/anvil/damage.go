package anvil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// retryPauses are the pauses before the second and third read of a chunk
// whose first read failed on corrupt or cut-short data: the game may have
// been writing it.
var retryPauses = [...]time.Duration{5 * time.Millisecond, 20 * time.Millisecond}

// restWindow: a region file whose last modification is older than this
// when a read of it has failed is at rest, so the read cannot have met the
// game writing it, and it is not retried (the pauses would cost every
// damaged chunk 25 ms for nothing). It matches the watcher's racyWindow.
const restWindow = racyWindow

// Damage warnings: at most warnBurst in a warnWindow, reasons cut to
// maxReason bytes.
const (
	warnBurst  = 10
	warnWindow = time.Minute
	maxReason  = 120
)

// Stats are a World's counters since Open, a plain value.
type Stats struct {
	// ReadErrors counts chunk reads that failed (after their retries) with
	// an error other than world.ErrUngenerated, ErrClosed or the
	// context's.
	ReadErrors uint64 `json:"readErrors"`
	// TornRetries counts the extra reads made of chunks whose read failed
	// on corrupt or cut-short data.
	TornRetries uint64 `json:"tornRetries"`
	// DamagedChunks is how many chunks are known damaged now: their last
	// read failed on corrupt or cut-short data after its retries. A chunk
	// stops counting when it reads fine (or reads as ungenerated).
	DamagedChunks int `json:"damagedChunks"`
	// Polls counts Poll calls that completed; ChangedChunks sums the
	// chunks they reported.
	Polls         uint64 `json:"polls"`
	ChangedChunks uint64 `json:"changedChunks"`
	// WarningsSuppressed counts damaged-chunk warnings the rate limit held
	// back (each chunk at most once per window).
	WarningsSuppressed uint64 `json:"warningsSuppressed"`
}

// Stats returns the World's counters. It is safe to call at any time,
// also after Close.
func (w *World) Stats() Stats {
	h := &w.health
	h.mu.Lock()
	damaged, suppressed := len(h.damaged), h.suppressedTotal
	h.mu.Unlock()
	return Stats{
		ReadErrors:         h.readErrors.Load(),
		TornRetries:        h.retries.Load(),
		DamagedChunks:      damaged,
		Polls:              w.watch.polls.Load(),
		ChangedChunks:      w.watch.changed.Load(),
		WarningsSuppressed: suppressed,
	}
}

// ChunkError is the error (inside a *world.PosError) of a chunk that could
// not be read: the region file, relative to the save folder, and a short
// reason. Err is the full error; errors.Is(err, ErrCorrupt) tells damaged
// data from I/O errors. It is a plain value, not changed once returned.
type ChunkError struct {
	File   string // e.g. "region/r.0.-1.mca"
	Reason string // at most about 120 bytes, e.g. "zlib: bad header 0x78 0x0"
	Err    error
}

func (e *ChunkError) Error() string { return "anvil: " + e.File + ": " + e.Reason }
func (e *ChunkError) Unwrap() error { return e.Err }

// Is reports whether the error matches target beyond its chain: a chunk
// whose reads (retries included) failed on corrupt or cut-short data, or
// a missing external .mcc file, is world.ErrUnreadable.
func (e *ChunkError) Is(target error) bool {
	return target == world.ErrUnreadable && torn(e.Err)
}

// torn reports whether a failed chunk read may have met a write in
// progress, so that reading again may succeed: corrupt or cut-short data,
// or a missing external .mcc file (the region file holds no other
// ErrNotExist once it is open).
func torn(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, fs.ErrNotExist)
}

// retry reads chunk pos again after a failed first read (err), up to
// len(retryPauses) times while the failure looks torn and the region file
// f is not at rest (see restWindow), and returns Load's result: the chunk,
// or the final error wrapped in a *world.PosError and a *ChunkError.
func (w *World) retry(ctx context.Context, pos geom.Chunk, f *os.File, bufs *buffers, build bool, err error) (*world.Chunk, Info, error) {
	h := &w.health
	var ch *world.Chunk
	var info Info
	rest := atRest(f)
	for _, d := range retryPauses {
		if !torn(err) || rest {
			break
		}
		h.retries.Add(1)
		if perr := h.pause(ctx, d); perr != nil {
			return nil, Info{}, perr
		}
		ch, info, err = w.read(pos, f, bufs, build)
		if err == nil || errors.Is(err, world.ErrUngenerated) {
			h.readFine(pos)
			if err != nil {
				return nil, info, &world.PosError{Pos: pos, Err: err}
			}
			return ch, info, nil
		}
	}
	h.readErrors.Add(1)
	file := path.Join(w.dir, RegionName(pos.Region()))
	reason := shortReason(err)
	if torn(err) {
		h.damagedChunk(file, pos, reason)
	}
	return nil, info, &world.PosError{Pos: pos, Err: &ChunkError{File: file, Reason: reason, Err: err}}
}

// atRest reports whether f was last modified more than restWindow ago
// (false when it cannot tell).
func atRest(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && time.Since(fi.ModTime()) > restWindow
}

// shortReason is err's message without the package's prefixes, cut to
// maxReason bytes.
func shortReason(err error) string {
	s := err.Error()
	for _, p := range []string{"anvil: ", "corrupt data: "} {
		s = strings.TrimPrefix(s, p)
	}
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// health keeps a World's read counters and its damaged chunks, and rate
// limits the warnings about them. It is safe for concurrent use.
type health struct {
	log   *slog.Logger
	now   func() time.Time                                 // the rate limit's clock
	pause func(ctx context.Context, d time.Duration) error // between reads of a chunk

	retries, readErrors atomic.Uint64
	nDamaged            atomic.Int64 // len(damaged), read on every load without the lock

	mu              sync.Mutex // protects the following fields
	damaged         map[geom.Chunk]damageMark
	windowEnd       time.Time // end of the rate limit's window; zero: none open
	inWindow        int       // warnings logged in the window
	suppressed      int       // warnings held back in the window
	suppressedTotal uint64
}

// damageMark is what is known of one damaged chunk.
type damageMark struct {
	warned bool // logged since it last changed
	// suppressedIn is the windowEnd of the window that held back its
	// warning, so that it is counted once per window.
	suppressedIn time.Time
}

func (h *health) init(log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h.log = log
	h.now = time.Now
	h.pause = sleepCtx
	h.damaged = make(map[geom.Chunk]damageMark)
}

// readFine forgets pos as damaged. It costs one atomic load while no chunk
// is damaged.
func (h *health) readFine(pos geom.Chunk) {
	if h.nDamaged.Load() == 0 {
		return
	}
	h.mu.Lock()
	if _, ok := h.damaged[pos]; ok {
		delete(h.damaged, pos)
		h.nDamaged.Add(-1)
	}
	h.mu.Unlock()
}

// damagedChunk records pos (in file) as damaged and warns about it once,
// unless the rate limit holds the warning back.
func (h *health) damagedChunk(file string, pos geom.Chunk, reason string) {
	now := h.now()
	h.mu.Lock()
	m, known := h.damaged[pos]
	if !known {
		h.nDamaged.Add(1)
	}
	if m.warned {
		h.mu.Unlock()
		return
	}
	ended := h.rollLocked(now)
	if h.windowEnd.IsZero() {
		h.windowEnd = now.Add(warnWindow)
	}
	warn := h.inWindow < warnBurst
	if warn {
		h.inWindow++
		m.warned = true
	} else if !m.suppressedIn.Equal(h.windowEnd) {
		m.suppressedIn = h.windowEnd
		h.suppressed++
		h.suppressedTotal++
	}
	h.damaged[pos] = m
	h.mu.Unlock()
	h.logSuppressed(ended)
	if warn {
		h.log.Warn("anvil: damaged chunk",
			slog.String("file", file),
			slog.String("chunk", fmt.Sprintf("%d,%d", pos.X, pos.Z)),
			slog.String("reason", reason))
	}
}

// rollLocked closes the rate limit's window once it has ended and returns
// how many warnings it held back.
func (h *health) rollLocked(now time.Time) int {
	if h.windowEnd.IsZero() || now.Before(h.windowEnd) {
		return 0
	}
	n := h.suppressed
	h.windowEnd, h.inWindow, h.suppressed = time.Time{}, 0, 0
	return n
}

func (h *health) logSuppressed(n int) {
	if n > 0 {
		h.log.Warn("anvil: more damaged chunks, warnings suppressed",
			slog.Int("suppressed", n), slog.Duration("window", warnWindow))
	}
}

// flush logs how many warnings a window that has ended held back (Poll
// calls it, so the line comes without waiting for the next damage).
func (h *health) flush() {
	now := h.now()
	h.mu.Lock()
	n := h.rollLocked(now)
	h.mu.Unlock()
	h.logSuppressed(n)
}

// changed lets the damaged chunks among cs be warned about again.
func (h *health) changed(cs []geom.Chunk) {
	if h.nDamaged.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cs {
		if _, ok := h.damaged[c]; ok {
			h.damaged[c] = damageMark{}
		}
	}
}
