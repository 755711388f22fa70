package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
)

// Default option values.
const (
	DefaultSpatialResolution = 3
	DefaultPendingThreshold  = 4096
	DefaultRebuildInterval   = 10 * time.Second
	// DefaultDynamicTTL is the TTL of dynamic causes when no TTL function is
	// given (two weeks: a cautious default for external verifiers).
	DefaultDynamicTTL = 14 * 24 * time.Hour
	// DefaultUniquePlacementTTL is the default TTL of CauseUniquePlacement.
	DefaultUniquePlacementTTL = 30 * 24 * time.Hour
	// DefaultUngeneratedTTL is the default TTL of CauseUngenerated: short,
	// since a world without a watcher (see package engine) tells nobody
	// when a chunk gets generated; a watched world forgets the chunk as
	// soon as its region file shows it.
	DefaultUngeneratedTTL = 10 * time.Minute
	// DefaultUnreadableTTL is the default TTL of CauseUnreadable: damaged
	// data stays damaged until its file is written again, which a watched
	// world reports at once.
	DefaultUnreadableTTL = time.Hour
)

// TTLFunc resolves the time to live of a rejection. A negative result means
// permanent (the run joins the static tier), zero means the rejection is not
// remembered, and a positive result is the TTL of a dynamic run.
// (*ttl.Policy).TTL has this signature.
type TTLFunc func(c Cause, source string) time.Duration

// DefaultTTL is the TTLFunc used when Options.TTL is nil: static causes are
// permanent, safetyExternal lives 14 days, uniquePlacement 30 days and
// ungenerated 10 minutes, unreadable 1 hour and transient causes are not
// remembered.
func DefaultTTL(c Cause, _ string) time.Duration {
	switch c.Tier() {
	case Static:
		return -1
	case Dynamic:
		switch c {
		case CauseUniquePlacement:
			return DefaultUniquePlacementTTL
		case CauseUngenerated:
			return DefaultUngeneratedTTL
		case CauseUnreadable:
			return DefaultUnreadableTTL
		}
		return DefaultDynamicTTL
	}
	return 0
}

// Options configure a Table. Only Len is required.
type Options struct {
	// Len is the size of the index universe [0, Len): the shape's Len, or
	// more when the region expands past its shape. Required (> 0) unless
	// Shape is set.
	Len int64
	// Shape maps chunks to indices for AddBadChunk. Optional; when Len is 0
	// it defaults to Shape.Len().
	Shape geom.Shape
	// World names the world in memory files. Default "".
	World string
	// SpatialResolution is the widest gap between two runs of one tier that
	// a rebuild absorbs into one run (never next to a run of ungenerated
	// or unreadable, which keep to their cells). 0 means
	// DefaultSpatialResolution (3); a negative value disables gap
	// absorption (touching runs still merge).
	SpatialResolution int64
	// TTL resolves rejection TTLs. Default DefaultTTL.
	TTL TTLFunc
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// PendingThreshold is the number of pending additions (and probation
	// restorations) that asks Run for a rebuild. Default 4096.
	PendingThreshold int
	// RebuildInterval is how often Run rebuilds regardless of pending work,
	// so expired runs move to probation. Default 10 s.
	RebuildInterval time.Duration
	// OnRecord, when set, is called by AddBad for every rejection it
	// accepts (transient ones and zero TTLs included, which are not
	// kept), with the time it was recorded at, after the table's lock is
	// released: a journal of the rejections since the last Save (see
	// AddBadAt). It must not block nor call AddBad. Default none.
	OnRecord func(index int64, cause Cause, source string, at time.Time)
}

func (o Options) withDefaults() Options {
	if o.Len == 0 && o.Shape != nil {
		o.Len = o.Shape.Len()
	}
	if o.SpatialResolution == 0 {
		o.SpatialResolution = DefaultSpatialResolution
	} else if o.SpatialResolution < 0 {
		o.SpatialResolution = 0
	}
	if o.TTL == nil {
		o.TTL = DefaultTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.PendingThreshold <= 0 {
		o.PendingThreshold = DefaultPendingThreshold
	}
	if o.RebuildInterval <= 0 {
		o.RebuildInterval = DefaultRebuildInterval
	}
	return o
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Len == 0 && o.Shape != nil {
		o.Len = o.Shape.Len()
	}
	if o.Len <= 0 {
		errs = append(errs, fmt.Errorf("memory: Len %d must be positive", o.Len))
	}
	if len(o.World) > maxWorldName {
		errs = append(errs, fmt.Errorf("memory: world name of %d bytes exceeds %d", len(o.World), maxWorldName))
	}
	return errors.Join(errs...)
}

// ErrIndexRange is returned by AddBad for an index outside [0, Len).
var ErrIndexRange = errors.New("memory: index out of range")

// snapshot is what selection reads: immutable once published.
type snapshot struct {
	active *runSet
	n      int64  // universe size
	gen    uint64 // Generation: one more than the snapshot before
}

// pendingCell is a rejection waiting for the next rebuild.
type pendingCell struct {
	index   int64
	cause   Cause
	expires int64 // 0 = static
	ttl     int64
}

type causeSource struct {
	cause  Cause
	source string
}

// Table is the spatial memory of one region: which spiral indices are known
// to be bad, why, and until when.
//
// Selection (Rand, Select, IsBad, Selectable) is lock-free and allocation-
// free: it reads an immutable snapshot published atomically by the last
// rebuild. AddBad records rejections as pending additions; a rebuild (Run's
// loop, or an explicit Rebuild or Save) merges them, ages runs into
// probation and publishes a new snapshot. Additions are therefore visible to
// selection after the next rebuild.
//
// A Table is safe for concurrent use. The zero value is not usable: use New
// or Open.
type Table struct {
	opts Options
	snap atomic.Pointer[snapshot]
	wake chan struct{} // buffered(1): pending work reached the threshold

	mu sync.Mutex // protects the following fields
	// prob holds the probation runs; restore[j] != 0 marks probation run j as
	// restored to active by a repeat rejection: > 0 is its new expiry, -1
	// means restored as permanent.
	prob       *runSet
	restore    []int64
	pending    []pendingCell
	nRestore   int // restorations since the last rebuild
	rejections map[causeSource]int64
	stats      counters
}

type counters struct {
	rebuilds    int64
	restored    int64
	ignored     int64 // transient or zero-TTL rejections
	lastRebuild time.Time
}

// New returns an empty table.
func New(opts Options) (*Table, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t := &Table{
		opts:       opts.withDefaults(),
		wake:       make(chan struct{}, 1),
		prob:       emptyRunSet,
		rejections: make(map[causeSource]int64),
	}
	t.pending = make([]pendingCell, 0, t.opts.PendingThreshold)
	t.snap.Store(&snapshot{active: emptyRunSet, n: t.opts.Len, gen: 1})
	return t, nil
}

// publish stores a new snapshot of the active runs. Caller holds mu (or
// owns the table exclusively).
func (t *Table) publish(active *runSet) {
	t.snap.Store(&snapshot{active: active, n: t.opts.Len, gen: t.snap.Load().gen + 1})
}

// Generation returns the number of the snapshot selection reads now: it
// grows by one with every rebuild, Load and Forget, so a caller that
// noted it when it recorded a rejection (AddBad) knows, once it has
// grown, that selection sees the rejection. O(1), no lock.
func (t *Table) Generation() uint64 { return t.snap.Load().gen }

// Remembers reports whether a rejection for cause attributed to source is
// kept by the table (AddBad stores it) rather than only counted: false for
// transient causes, invalid ones and a TTL of zero.
func (t *Table) Remembers(cause Cause, source string) bool {
	return cause.Valid() && cause.Tier() != Transient && t.opts.TTL(cause, source) != 0
}

// Len returns the size of the index universe.
func (t *Table) Len() int64 { return t.opts.Len }

// World returns the world name stored in memory files.
func (t *Table) World() string { return t.opts.World }

// Selectable returns the number of indices not covered by an active run.
func (t *Table) Selectable() int64 {
	s := t.snap.Load()
	return s.n - s.active.bad()
}

// IsBad reports whether index i lies in an active run. O(log n), no
// allocation, no lock.
func (t *Table) IsBad(i int64) bool {
	return t.snap.Load().active.contains(i)
}

// CauseAt returns the cause of the active run holding index i, or bad
// false when i is selectable (probation runs are selectable). O(log n), no
// allocation, no lock.
func (t *Table) CauseAt(i int64) (cause Cause, bad bool) {
	if i < 0 {
		return 0, false
	}
	a := t.snap.Load().active
	if j := a.find(i); j >= 0 {
		return a.cause[j], true
	}
	return 0, false
}

// Select returns the k-th (0-based) selectable index. ok is false when k is
// outside [0, Selectable()). O(log n), no allocation, no lock.
func (t *Table) Select(k int64) (index int64, ok bool) {
	s := t.snap.Load()
	if k < 0 || k >= s.n-s.active.bad() {
		return 0, false
	}
	return s.active.selectGood(k), true
}

// Rand returns an index drawn uniformly from the selectable indices (those
// not in an active run; probation runs are selectable). ok is false when
// nothing is selectable. One search per draw, no allocation, no lock.
func (t *Table) Rand(rng *rand.Rand) (index int64, ok bool) {
	s := t.snap.Load()
	sel := s.n - s.active.bad()
	if sel <= 0 {
		return 0, false
	}
	return s.active.selectGood(rng.Int64N(sel)), true
}

// Pick draws through a distribution: with n the number of selectable
// indices, capped at limit when limit > 0, it returns the selectable index
// of rank d.Pick(u, n) (ranks count selectable indices from 0 upwards, so
// from the centre of the spiral outwards). Both are read from one snapshot,
// so a concurrent rebuild never makes the rank fall outside the selectable
// indices. ok is false when nothing is selectable.
//
// A limit below the selectable count keeps the draw among the limit
// selectable indices nearest the centre: the expand mode (geom.Expand)
// passes the shape's Len, so in a universe grown past the shape bad cells
// push the draw outwards instead of shrinking the choice. One search per
// draw, no allocation, no lock.
func (t *Table) Pick(d geom.Distribution, u float64, limit int64) (index int64, ok bool) {
	s := t.snap.Load()
	n := s.n - s.active.bad()
	if limit > 0 {
		n = min(n, limit)
	}
	if n <= 0 {
		return 0, false
	}
	k := d.Pick(u, n)
	if k < 0 || k >= n { // a Distribution outside its contract
		k = min(max(k, 0), n-1)
	}
	return s.active.selectGood(k), true
}

// AddBadChunk is AddBad for chunk c, located through Options.Shape.
func (t *Table) AddBadChunk(c geom.Chunk, cause Cause, source string) error {
	i, err := t.ChunkIndex(c)
	if err != nil {
		return err
	}
	return t.AddBad(i, cause, source)
}

// ChunkIndex returns the index of chunk c in this table: its spiral index in
// Options.Shape, or for chunks outside the shape in an expanded universe
// (Len > Shape.Len()), Shape.Len() plus its index beyond the shape.
func (t *Table) ChunkIndex(c geom.Chunk) (int64, error) {
	sh := t.opts.Shape
	if sh == nil {
		return 0, errors.New("memory: AddBadChunk needs Options.Shape")
	}
	if i, ok := sh.Index(c); ok {
		return i, nil
	}
	if j, ok := sh.BeyondIndex(c); ok && j < t.opts.Len-sh.Len() {
		return sh.Len() + j, nil
	}
	return 0, fmt.Errorf("%w: %v outside %v", ErrIndexRange, c, sh)
}

// AddBad records that index i was rejected for cause, attributed to source
// (a verifier name for CauseSafetyExternal, a biome name for CauseBiome, or
// ""). The TTL comes from Options.TTL. Transient causes and zero TTLs are
// not remembered. A dynamic rejection inside a probation run restores the
// whole run to active in O(log M) without allocating, with a refreshed TTL:
// the larger of the run's TTL and the rejection's, which becomes both the
// run's TTL and the length of its new active period (expiry now + TTL), as
// when runs meet in a rebuild. Otherwise the rejection waits for the next
// rebuild.
func (t *Table) AddBad(i int64, cause Cause, source string) error {
	at := t.opts.Clock()
	if err := t.addBad(i, cause, source, at); err != nil {
		return err
	}
	if t.opts.OnRecord != nil {
		t.opts.OnRecord(i, cause, source, at)
	}
	return nil
}

// addBad is AddBad of a rejection recorded at the given time, without
// OnRecord.
func (t *Table) addBad(i int64, cause Cause, source string, at time.Time) error {
	if i < 0 || i >= t.opts.Len {
		return fmt.Errorf("%w: %d not in [0, %d)", ErrIndexRange, i, t.opts.Len)
	}
	if !cause.Valid() {
		return fmt.Errorf("memory: invalid cause %d", cause)
	}
	ttl := t.opts.TTL(cause, source)
	now := at.Unix()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rejections[causeSource{cause, source}]++
	if cause.Tier() == Transient || ttl == 0 {
		t.stats.ignored++
		return nil
	}
	exp, ttlSec := expiryFor(now, ttl)
	if exp != 0 {
		if j := t.prob.find(i); j >= 0 {
			// Runs that meet keep the larger TTL: the restored run lives
			// for, and keeps as its TTL, the larger of its own TTL and
			// this rejection's.
			ttlSec = t.prob.raiseTTL(j, ttlSec)
			if t.restore[j] == 0 {
				t.nRestore++
				t.stats.restored++
			}
			t.restore[j] = max(t.restore[j], now+ttlSec)
			t.signalLocked()
			return nil
		}
	}
	t.pending = append(t.pending, pendingCell{index: i, cause: cause, expires: exp, ttl: ttlSec})
	t.signalLocked()
	return nil
}

// expiryFor returns the expiry (0 for permanent) and TTL in whole seconds
// (rounded up, at least 1) of a rejection at now.
func expiryFor(now int64, ttl time.Duration) (exp, sec int64) {
	if ttl < 0 {
		return 0, 0
	}
	sec = int64((ttl + time.Second - 1) / time.Second)
	return now + sec, sec
}

func (t *Table) signalLocked() {
	if len(t.pending)+t.nRestore >= t.opts.PendingThreshold {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// Pending returns the number of rejections and restorations waiting for the
// next rebuild.
func (t *Table) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending) + t.nRestore
}

// Run rebuilds the table whenever pending work reaches the threshold and at
// least every RebuildInterval, until ctx ends. Call it on its own goroutine;
// it returns ctx.Err().
func (t *Table) Run(ctx context.Context) error {
	tick := time.NewTicker(t.opts.RebuildInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.wake:
		case <-tick.C:
		}
		t.Rebuild()
	}
}

// Rebuild merges pending rejections, moves expired runs to probation, drops
// runs past probation, and publishes a new snapshot for selection. It holds
// the table's writer lock (not the selection path) while it works.
func (t *Table) Rebuild() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rebuildLocked(t.opts.Clock())
}

func (t *Table) rebuildLocked(now time.Time) {
	active, prob := rebuild(now.Unix(), t.opts.SpatialResolution,
		t.snap.Load().active, t.prob, t.restore, t.pending)
	t.install(active, prob)
	t.pending = t.pending[:0]
	t.nRestore = 0
	t.stats.rebuilds++
	t.stats.lastRebuild = now
}

// install publishes new active and probation runs. Caller holds mu (or owns
// the table exclusively).
func (t *Table) install(active, prob []Run) {
	t.prob = newRunSet(prob)
	t.restore = make([]int64, len(prob))
	t.publish(newRunSet(active))
}
