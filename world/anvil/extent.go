package anvil

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
)

// DefaultExtentBudget is ExtentOptions.Budget's default.
const DefaultExtentBudget = 5 * time.Second

// ExtentOptions configure World.Extent. The zero value reads chunk
// statuses for up to DefaultExtentBudget on GOMAXPROCS goroutines.
type ExtentOptions struct {
	// Budget bounds the time spent reading chunk statuses (the region
	// headers are always read whole). Chunks not read by then are
	// estimated from the fraction of finished chunks among those read.
	// It must not be negative. Default DefaultExtentBudget (5s).
	Budget time.Duration
	// Workers is the number of chunks read at once. It must not be
	// negative. Default runtime.GOMAXPROCS(0).
	Workers int
}

// ChunkBox is a box of chunks, Min and Max included on both axes. It is a
// plain value; the zero value is the box holding chunk (0, 0) alone.
type ChunkBox struct{ Min, Max geom.Chunk }

// Center returns the chunk in the middle of the box, rounded towards
// negative infinity.
func (b ChunkBox) Center() geom.Chunk {
	return geom.Chunk{X: mid(b.Min.X, b.Max.X), Z: mid(b.Min.Z, b.Max.Z)}
}

// mid returns floor((a+b)/2) without overflow.
func mid(a, b int64) int64 { return a>>1 + b>>1 + a&b&1 }

// Contains reports whether c lies inside the box.
func (b ChunkBox) Contains(c geom.Chunk) bool {
	return c.X >= b.Min.X && c.X <= b.Max.X && c.Z >= b.Min.Z && c.Z <= b.Max.Z
}

// String describes the box in chunks and in blocks.
func (b ChunkBox) String() string {
	lo, hi := b.Min.Origin(), b.Max.Origin()
	return fmt.Sprintf("chunks x %d..%d, z %d..%d (blocks x %d..%d, z %d..%d)",
		b.Min.X, b.Max.X, b.Min.Z, b.Max.Z,
		lo.X, hi.X+geom.ChunkSize-1, lo.Z, hi.Z+geom.ChunkSize-1)
}

// chunkState is what Extent learnt of one present chunk.
type chunkState uint8

const (
	stateUnread chunkState = iota
	stateFinished
	stateUnfinished
	stateUnreadable
)

// Extent is what a dimension's region files hold: how many chunks were
// saved and which of them are finished (status full), so that a region
// can be laid over the generated part of a world. World.Extent computes
// it.
//
// An Extent is immutable once returned and safe for concurrent use; its
// zero value is an empty world (no region file, no chunk).
type Extent struct {
	// Regions is the number of region files.
	Regions int
	// UnreadableRegions counts region files whose header could not be
	// read; their chunks are not counted anywhere.
	UnreadableRegions int
	// Present is the number of chunks the region headers list.
	Present int
	// Checked is the number of present chunks whose status was read.
	Checked int
	// Unreadable counts checked chunks whose data could not be read or
	// decoded (corrupt, or an I/O error); they count as unfinished.
	Unreadable int
	// NoStatus counts the checked chunks that record neither a status
	// nor TerrainPopulated (Info.NoStatus): read as finished, they are
	// among Finished.
	NoStatus int
	// Finished is the number of finished chunks: counted when Exact, else
	// those found among the Checked plus the estimate for the others
	// (Ratio times their number, rounded).
	Finished int
	// Exact reports whether every present chunk's status was read
	// (Checked == Present).
	Exact bool
	// Ratio is the fraction of finished chunks among the checked ones
	// (0 when none was checked).
	Ratio float64
	// Bounds is the smallest box holding every finished chunk and, when
	// not Exact and Ratio is not 0, every unchecked chunk (any of which
	// may be finished). It is meaningful only when HasBounds is true.
	Bounds ChunkBox
	// HasBounds reports whether any chunk is (or may be) finished.
	HasBounds bool
	// Took is how long Extent ran.
	Took time.Duration

	chunks []geom.Chunk // present chunks, in reading order
	states []chunkState // states[i] is chunks[i]'s
}

// Within counts the chunks of s: present is those the headers list,
// finished those that are finished, estimated as Finished is when the
// Extent is not exact.
func (e *Extent) Within(s geom.Shape) (present, finished int) {
	unread := 0
	for i, c := range e.chunks {
		if !s.Contains(c) {
			continue
		}
		present++
		switch e.states[i] {
		case stateFinished:
			finished++
		case stateUnread:
			unread++
		}
	}
	return present, finished + e.estimate(unread)
}

func (e *Extent) estimate(unread int) int {
	return int(math.Round(e.Ratio * float64(unread)))
}

// candidate reports whether chunk i is, or may be, finished.
func (e *Extent) candidate(i int) bool {
	switch e.states[i] {
	case stateFinished:
		return true
	case stateUnread:
		return e.Ratio > 0
	}
	return false
}

// CoverRadius returns the smallest radius r, in chunks, such that every
// finished chunk (and, as for Bounds, every unchecked one that may be)
// lies within r of center: dx² + dz² <= r², the membership rule of
// geom.Circle. It returns -1 when no chunk is or may be finished.
func (e *Extent) CoverRadius(center geom.Chunk) int64 {
	var best uint64
	found := false
	for i, c := range e.chunks {
		if !e.candidate(i) {
			continue
		}
		found = true
		dx, dz := absDiff(c.X, center.X), absDiff(c.Z, center.Z)
		// Offsets beyond 2^31 cannot be squared in 64 bits; no Minecraft
		// chunk is that far from another (the world spans ±1,875,000).
		dx, dz = min(dx, math.MaxInt32), min(dz, math.MaxInt32)
		if d := dx*dx + dz*dz; d > best {
			best = d
		}
	}
	if !found {
		return -1
	}
	r := uint64(math.Sqrt(float64(best)))
	for r*r < best {
		r++
	}
	for r > 0 && (r-1)*(r-1) >= best {
		r--
	}
	return int64(r)
}

func absDiff(a, b int64) uint64 {
	if a > b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

// Extent reads every region file's header to find the chunks present,
// then reads the status of as many of them as opts.Budget allows, on
// opts.Workers goroutines, in a shuffled (but fixed) order so that those
// read are a fair sample of the rest. A save of a few hundred region files
// is read whole well within the default budget.
//
// It returns an error for invalid options, when the region folder cannot
// be listed, ErrClosed after Close, and ctx.Err() when ctx ends first. A
// region file whose header cannot be read, and a chunk whose data cannot,
// are counted (UnreadableRegions, Unreadable), not errors.
func (w *World) Extent(ctx context.Context, opts ExtentOptions) (Extent, error) {
	start := time.Now()
	if opts.Budget < 0 {
		return Extent{}, fmt.Errorf("anvil: extent budget %v is negative", opts.Budget)
	}
	if opts.Workers < 0 {
		return Extent{}, fmt.Errorf("anvil: extent workers %d is negative", opts.Workers)
	}
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultExtentBudget
	}
	workers := opts.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Listing a closed folder finds nothing; a header read says ErrClosed.
	if _, err := w.Header(geom.Region{}); errors.Is(err, ErrClosed) {
		return Extent{}, err
	}
	regions, err := w.Regions()
	if err != nil {
		return Extent{}, err
	}
	e := Extent{Regions: len(regions)}
	for _, r := range regions {
		if err := ctx.Err(); err != nil {
			return Extent{}, err
		}
		h, err := w.Header(r)
		if errors.Is(err, ErrClosed) {
			return Extent{}, err
		}
		if err != nil {
			e.UnreadableRegions++
			continue
		}
		e.chunks = append(e.chunks, h.Chunks(r)...)
	}
	e.Present = len(e.chunks)
	e.states = make([]chunkState, len(e.chunks))
	// A fixed seed: the same save gives the same sample, run after run.
	rng := rand.New(rand.NewPCG(0x7274705f657874, uint64(len(e.chunks))))
	rng.Shuffle(len(e.chunks), func(i, j int) { e.chunks[i], e.chunks[j] = e.chunks[j], e.chunks[i] })

	if err := e.read(ctx, w, start.Add(budget), workers); err != nil {
		return Extent{}, err
	}
	e.summarise()
	e.Took = time.Since(start)
	return e, nil
}

// read fills e.states until every chunk is read or the deadline passes.
func (e *Extent) read(ctx context.Context, w *World, deadline time.Time, workers int) error {
	var (
		next     atomic.Int64
		noStatus atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstEr  error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		errMu.Unlock()
	}
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	workers = min(workers, len(e.chunks))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(e.chunks) {
					return
				}
				info, err := w.Info(ctx, e.chunks[i])
				switch {
				case err == nil && info.Full:
					e.states[i] = stateFinished
					if info.NoStatus {
						noStatus.Add(1)
					}
				case err == nil:
					e.states[i] = stateUnfinished
				case ctx.Err() != nil:
					return // unread: estimated, or the whole call fails
				case errors.Is(err, ErrClosed):
					fail(err)
					cancel()
					return
				default:
					e.states[i] = stateUnreadable
				}
			}
		}()
	}
	wg.Wait()
	e.NoStatus = int(noStatus.Load())
	if firstEr != nil {
		return firstEr
	}
	// The caller's end is an error; the budget's is not.
	return parent.Err()
}

// summarise counts the states and computes the estimate and bounds.
func (e *Extent) summarise() {
	found, unread := 0, 0
	for _, s := range e.states {
		switch s {
		case stateFinished:
			found++
			e.Checked++
		case stateUnfinished:
			e.Checked++
		case stateUnreadable:
			e.Checked++
			e.Unreadable++
		case stateUnread:
			unread++
		}
	}
	e.Exact = unread == 0
	if e.Checked > 0 {
		e.Ratio = float64(found) / float64(e.Checked)
	}
	e.Finished = found + e.estimate(unread)
	for i, c := range e.chunks {
		if !e.candidate(i) {
			continue
		}
		if !e.HasBounds {
			e.Bounds, e.HasBounds = ChunkBox{c, c}, true
			continue
		}
		e.Bounds.Min.X = min(e.Bounds.Min.X, c.X)
		e.Bounds.Min.Z = min(e.Bounds.Min.Z, c.Z)
		e.Bounds.Max.X = max(e.Bounds.Max.X, c.X)
		e.Bounds.Max.Z = max(e.Bounds.Max.Z, c.Z)
	}
}
