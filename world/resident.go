package world

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rtpengine/rtp/geom"
)

// Resident store design notes.
//
// One mutex guards the map of entries, the LRU list of unreserved chunks and
// the list of open reservations. A hit is a map lookup, two list operations
// and one allocation (the *Reservation handle) under that mutex; at the
// expected rates (thousands of reservations a second, not millions) one lock
// is cheaper and far simpler than a sharded map.
//
// Open reservations sit in intrusive doubly linked lists, one for each
// lifespan in use, so opening and closing are O(1) and each list is in
// deadline order (it is in opening order, and its reservations live
// equally long): the watchdog closes the expired ones from the head of
// each list and stops at the first that is not, O(expired + lifespans)
// under the mutex. It used to scan one list of them all, which looked
// harmless, a background goroutine once a second; but it held the mutex
// every reservation and release takes for the whole scan, and with the
// 8,700 reservations a full load-test sink keeps open the scan took about
// a millisecond, in which hand-outs completing over HTTP waited (an
// execution trace showed requests blocked up to 1.5 ms there). A
// deadline heap would do too, at O(log n) on every open and close.
//
// Two reservations of one lifespan opened at nearly the same moment may
// join their list out of order (the clock is read before the mutex): the
// later of them is then closed at most one sweep late.
//
// A miss starts one loader goroutine per chunk; later Reserve calls for the
// same chunk join it as waiters (single flight). The loader takes a slot of
// a semaphore (LoadConcurrency) before calling Source.Load. When it
// finishes it converts every waiter into a reference on the chunk while
// still holding the mutex, so a freshly loaded chunk cannot be evicted
// before its waiters wake up. A waiter whose ctx ends first leaves; when
// the last waiter leaves, the load's context is cancelled and the entry is
// forgotten, so a later Reserve starts a new load instead of joining a
// cancelled one. A cancelled load that completes anyway is discarded, not
// cached: the store never keeps what nobody asked for.
//
// With LoadOnCaller the caller that starts a load runs it itself, as the
// first of its waiters; others join it the same way. Its ctx ending makes
// it leave, as any waiter (context.AfterFunc does what the select on
// ctx.Done does for the others), but it returns only once the Source
// does. A promotion waits for its chunk anyway: at 1,000 promotions a
// second the loader goroutines cost a goroutine start, a grown stack and a
// wake-up each, a few percent of a processor that requests wanted.
//
// A reservation handle is never reused (no pool): Close on a handle must stay
// a no-op forever, and a pooled handle would close someone else's
// reservation on a second Close.
//
// Freshness: with ResidentOptions.Epochs set, a loader reads the chunk's
// epoch before calling Source.Load and the entry keeps it, so a change
// reported while the load runs makes the copy stale at once (never the
// reverse: a copy is never taken as fresher than it is). A reservation
// compares that epoch with the current one (Reservation.Stale: two atomic
// loads and a map lookup, no lock). Reserve never hands out a stale copy:
// an unreserved stale entry is dropped, and a reserved one is retired (it
// leaves the map, so the next Reserve starts a fresh load, and lives on,
// still counted in the budget, until its last reservation closes). A load
// that completes stale for its waiters (the chunk changed while it ran) is
// retried for them.

// Defaults for ResidentOptions.
const (
	DefaultMaxChunks        = 4096
	DefaultLifespan         = 10 * time.Minute
	DefaultWatchdogInterval = time.Second
	DefaultLoadConcurrency  = 4
)

// Errors returned by the resident store.
var (
	// ErrClosed is returned by Reserve once the store is shutting down.
	ErrClosed = errors.New("world: resident store closed")
	// ErrSourcePanic wraps the value of a panic in Source.Load.
	ErrSourcePanic = errors.New("world: source panicked")
	// ErrNoChunk is returned when a Source returns neither a chunk nor an
	// error, or a chunk for another position.
	ErrNoChunk = errors.New("world: source returned no chunk for the position")
)

// ResidentOptions configure a Resident store. The zero value gives the
// defaults.
type ResidentOptions struct {
	// MaxChunks bounds the number of resident chunks that no reservation
	// holds: beyond it, unreserved chunks are evicted least recently used
	// first. Reserved chunks are never evicted, so the store exceeds the
	// budget only while more chunks than that are reserved.
	// Default (0): DefaultMaxChunks. Negative: no bound by count.
	MaxChunks int
	// MaxBytes bounds the estimated memory of resident chunks (see
	// Chunk.MemSize) the same way. Default (0): no bound by bytes.
	MaxBytes int64
	// Lifespan is how long a reservation opened by Reserve may stay open
	// before the watchdog force-closes it and logs it. Default (0):
	// DefaultLifespan. Negative: reservations never expire.
	Lifespan time.Duration
	// WatchdogInterval is how often the watchdog looks for expired
	// reservations; a reservation is closed at most this long after its
	// lifespan ends. Default: DefaultWatchdogInterval.
	WatchdogInterval time.Duration
	// LoadConcurrency bounds the Source.Load calls in flight at once.
	// Default: DefaultLoadConcurrency.
	LoadConcurrency int
	// Clock tells the time reservations open (for Age and lifespans).
	// Default: time.Now.
	Clock func() time.Time
	// Logger receives a warning for each force-closed reservation and an
	// error for each panic in the Source. Default: slog.Default().
	Logger *slog.Logger
	// Epochs, when set, tells which chunks changed at the Source since
	// they were loaded: a resident copy loaded while Epochs.Of(pos) was e
	// is stale once Epochs.Of(pos) != e (see Reservation.Stale), and
	// Reserve never hands one out (it loads the chunk again). Default
	// (nil): a resident chunk is never stale.
	Epochs *Epochs
	// LoadOnCaller makes the caller whose reservation misses load the
	// chunk on its own goroutine rather than on a loader goroutine of the
	// store: one goroutine start and one wake-up fewer for every load,
	// for callers that would only wait for it anyway (the engine's
	// promotions). Callers that join that load still wait for it, and
	// ctx still bounds each of them: when the loading caller's ctx ends,
	// the load is cancelled if nobody else waits for it, and that caller
	// returns ctx.Err() once the Source returns (a Source that ignores
	// cancellation holds it until then).
	LoadOnCaller bool
}

func (o ResidentOptions) withDefaults() ResidentOptions {
	if o.MaxChunks == 0 {
		o.MaxChunks = DefaultMaxChunks
	}
	if o.Lifespan == 0 {
		o.Lifespan = DefaultLifespan
	}
	if o.WatchdogInterval <= 0 {
		o.WatchdogInterval = DefaultWatchdogInterval
	}
	if o.LoadConcurrency <= 0 {
		o.LoadConcurrency = DefaultLoadConcurrency
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Sizer is implemented by a BlockReader or ColumnReader that knows how
// much memory it holds, so the resident store's byte budget can count it.
type Sizer interface {
	MemSize() int64
}

// MemSize estimates the memory c holds: the chunk with its stored column
// summaries, plus its block data and its column reader where they
// implement Sizer (once when they are one value).
func (c *Chunk) MemSize() int64 {
	n := int64(unsafe.Sizeof(*c))
	if c.Columns != nil {
		n += int64(unsafe.Sizeof(*c.Columns))
	}
	if s, ok := c.Blocks.(Sizer); ok {
		n += s.MemSize()
	}
	if s, ok := c.Summaries.(Sizer); ok && any(c.Blocks) != any(c.Summaries) {
		n += s.MemSize()
	}
	return n
}

// ResidentStats are a store's counters (since NewResident) and gauges.
type ResidentStats struct {
	Opened uint64 // reservations handed out
	Closed uint64 // reservations closed, by any path (Close, watchdog, shutdown)
	Forced uint64 // of Closed, those the watchdog closed past their lifespan
	Open   int    // reservations open now: Opened - Closed

	Hits       uint64 // Reserve calls served by a resident chunk
	Misses     uint64 // Reserve calls that waited for a load (started or joined)
	Loads      uint64 // Source.Load calls finished (successful or not)
	LoadErrors uint64 // of Loads, those that failed (errors, panics, cancellations)
	Evictions  uint64 // unreserved chunks evicted for the budget
	// Stale counts resident copies Reserve found stale (changed at the
	// source since their load, see ResidentOptions.Epochs) and loaded
	// again; of them, those reserved at the time were retired.
	Stale uint64

	Resident int   // chunks in memory now
	Reserved int   // of Resident, those held by at least one reservation
	Bytes    int64 // estimated memory of the resident chunks
	Loading  int   // loads in flight
	// Retired is the number of stale copies still held by reservations
	// opened before they went stale (counted in Resident and Reserved).
	Retired int
}

// Resident is the resident chunk store: chunks in memory, held there by
// reservations, loaded from a Source on a miss and evicted least recently
// used beyond a memory budget once nothing holds them.
//
// Create one with NewResident; the zero value is not usable. A Resident is
// safe for concurrent use. It owns a watchdog goroutine and the loader
// goroutines it starts; Close or Shutdown stops them.
type Resident struct {
	src      Source
	opts     ResidentOptions
	sem      chan struct{}      // load slots
	base     context.Context    // parent of every load; cancelled by Shutdown
	stopBase context.CancelFunc // cancels base
	done     chan struct{}      // closed by Shutdown; stops the watchdog
	wg       sync.WaitGroup     // the watchdog and the loaders

	mu      sync.Mutex // protects the following fields
	closed  bool
	entries map[geom.Chunk]*entry
	lru     entry // sentinel of the unreserved resident chunks, most recent first
	// open holds the sentinels of the lists of open reservations, one per
	// lifespan (0: no deadline), oldest first; a list goes when it empties.
	open      map[time.Duration]*Reservation
	resident  int
	reserved  int
	loading   int
	bytes     int64
	opened    uint64
	nclosed   uint64
	forced    uint64
	hits      uint64
	misses    uint64
	loads     uint64
	loadErrs  uint64
	evictions uint64
	stale     uint64
	// retired holds the stale entries that reservations still hold: out
	// of entries (a fresh copy may be there), in the gauges until their
	// last reservation closes.
	retired map[*entry]struct{}
}

// entry is one chunk position known to the store: resident (chunk != nil)
// or loading (load != nil).
type entry struct {
	pos   geom.Chunk
	chunk *Chunk
	size  int64
	refs  int     // open reservations plus waiters converted at load completion
	load  *loadOp // the load in flight, nil once resident
	// epoch is Epochs.Of(pos) when the load started; retired marks an
	// entry taken out of Resident.entries for being stale.
	epoch   uint32
	retired bool
	// prev and next link the entry into Resident.lru while refs == 0 and
	// chunk != nil; both are nil otherwise.
	prev, next *entry
}

// loadOp is one Source.Load in flight and the callers waiting for it.
type loadOp struct {
	ctx     context.Context
	cancel  context.CancelFunc
	ch      chan struct{} // closed when finished
	waiters int           // guarded by Resident.mu
	// finished and err are written under Resident.mu before ch is closed.
	finished bool
	err      error
}

// NewResident returns a store loading chunks from src. It starts the
// watchdog goroutine: call Close or Shutdown when done with the store.
// It panics if src is nil.
func NewResident(src Source, opts ResidentOptions) *Resident {
	if src == nil {
		panic("world: NewResident with a nil Source")
	}
	opts = opts.withDefaults()
	s := &Resident{
		src:     src,
		opts:    opts,
		sem:     make(chan struct{}, opts.LoadConcurrency),
		done:    make(chan struct{}),
		entries: make(map[geom.Chunk]*entry),
	}
	s.base, s.stopBase = context.WithCancel(context.Background())
	s.lru.prev, s.lru.next = &s.lru, &s.lru
	s.open = make(map[time.Duration]*Reservation)
	s.wg.Add(1)
	go s.watchdog()
	return s
}

// Reserve returns a reservation on the chunk at pos with the store's
// default lifespan (ResidentOptions.Lifespan). See ReserveFor.
func (s *Resident) Reserve(ctx context.Context, pos geom.Chunk) (*Reservation, error) {
	return s.ReserveFor(ctx, pos, s.opts.Lifespan)
}

// ReserveFor returns a reservation on the chunk at pos that the watchdog
// force-closes once it is older than lifespan (never, when lifespan <= 0).
// The chunk stays resident until every reservation on it is closed.
//
// On a miss the chunk is loaded on a goroutine of the store (on the
// caller's with ResidentOptions.LoadOnCaller); concurrent reservations of
// one chunk share one load. ctx bounds only the wait: when it ends first,
// ReserveFor returns ctx.Err(), and if no other caller still waits, the
// load is cancelled and forgotten.
//
// With ResidentOptions.Epochs set, the reservation is never on a stale
// copy: a resident chunk that changed since its load is loaded again (see
// Reservation.Stale), and so is one that changed while its load ran.
//
// Errors: ErrClosed once the store shuts down; ctx.Err(); otherwise the
// load's error as a *PosError wrapping what the Source returned
// (ErrUngenerated, I/O errors...), ErrSourcePanic or ErrNoChunk.
func (s *Resident) ReserveFor(ctx context.Context, pos geom.Chunk, lifespan time.Duration) (*Reservation, error) {
	for {
		r, err, again := s.reserveOnce(ctx, pos, lifespan)
		if !again {
			return r, err
		}
	}
}

// reserveOnce is one attempt of ReserveFor; again reports that the chunk
// it loaded changed while the load ran, so the caller tries again (a dead
// ctx ends the next attempt).
func (s *Resident) reserveOnce(ctx context.Context, pos geom.Chunk, lifespan time.Duration) (_ *Reservation, _ error, again bool) {
	now := s.opts.Clock() // outside the lock: some clocks are slow
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed, false
	}
	e := s.entries[pos]
	if e != nil && e.chunk != nil && s.staleLocked(e) {
		s.stale++
		s.retireLocked(e)
		e = nil
	}
	if e != nil && e.chunk != nil {
		s.hits++
		s.refLocked(e)
		r := s.openLocked(e, now, lifespan)
		s.mu.Unlock()
		return r, nil, false
	}
	own := false // the caller runs the load (LoadOnCaller)
	if e == nil {
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return nil, err, false
		}
		own = s.opts.LoadOnCaller
		e = &entry{pos: pos, load: s.startLoadLocked(pos, own)}
		s.entries[pos] = e
	}
	l := e.load
	l.waiters++
	s.misses++
	s.mu.Unlock()

	if own {
		if s.loadHere(ctx, e, l) {
			if s.isClosed() {
				return nil, ErrClosed, false
			}
			return nil, ctx.Err(), false
		}
	} else {
		select {
		case <-l.ch:
		case <-ctx.Done():
		}
	}

	now = s.opts.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.finished {
		if l.err != nil {
			return nil, l.err, false
		}
		// The loader converted this waiter into a reference on e.
		if s.closed {
			s.unrefLocked(e)
			return nil, ErrClosed, false
		}
		if s.staleLocked(e) {
			// Changed while loading: the next attempt retires or drops it.
			s.unrefLocked(e)
			return nil, nil, true
		}
		return s.openLocked(e, now, lifespan), nil, false
	}
	s.leaveLocked(e, l)
	if s.closed {
		return nil, ErrClosed, false
	}
	return nil, ctx.Err(), false
}

// leaveLocked takes a waiter whose ctx ended off the unfinished load l of
// e; the last one to leave cancels the load and forgets the entry, so that
// a later reservation starts a new load rather than joining a cancelled
// one.
func (s *Resident) leaveLocked(e *entry, l *loadOp) {
	l.waiters--
	if l.waiters == 0 {
		l.cancel()
		if s.entries[e.pos] == e {
			delete(s.entries, e.pos)
		}
	}
}

// loadHere runs the load l of e on the calling goroutine (LoadOnCaller),
// the caller being one of its waiters. When ctx ends before the load
// finishes, the caller leaves it as a waiter of a loader goroutine would
// (see leaveLocked), and loadHere reports true once the Source returns:
// the caller then has no reference on e. Otherwise the load finished with
// the caller converted into a reference, as any waiter.
func (s *Resident) loadHere(ctx context.Context, e *entry, l *loadOp) (left bool) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !l.finished {
			left = true
			s.leaveLocked(e, l)
		}
	})
	s.runLoad(e.pos, l)
	stop()
	// The callback, if it ran, ran before runLoad finished the load
	// (under the lock) or did nothing: left is settled.
	s.mu.Lock()
	defer s.mu.Unlock()
	return left
}

// isClosed reports whether the store is shutting down.
func (s *Resident) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// staleLocked reports whether the resident entry e changed at the source
// since its load started.
func (s *Resident) staleLocked(e *entry) bool {
	return s.opts.Epochs != nil && s.opts.Epochs.Of(e.pos) != e.epoch
}

// retireLocked takes the stale resident entry e out of the map: dropped
// when nothing holds it, otherwise kept (and counted) until its last
// reservation closes.
func (s *Resident) retireLocked(e *entry) {
	if e.refs == 0 {
		lruRemove(e)
		s.dropLocked(e)
		return
	}
	delete(s.entries, e.pos)
	e.retired = true
	if s.retired == nil {
		s.retired = make(map[*entry]struct{})
	}
	s.retired[e] = struct{}{}
}

// startLoadLocked starts the load of pos: on a loader goroutine, or,
// when here, not at all (the caller runs it with runLoad).
func (s *Resident) startLoadLocked(pos geom.Chunk, here bool) *loadOp {
	ctx, cancel := context.WithCancel(s.base)
	l := &loadOp{ctx: ctx, cancel: cancel, ch: make(chan struct{})}
	s.loading++
	s.wg.Add(1)
	if !here {
		go s.runLoad(pos, l)
	}
	return l
}

// runLoad runs the load of one chunk: on its loader goroutine, or on the
// goroutine of the caller that started it (LoadOnCaller).
func (s *Resident) runLoad(pos geom.Chunk, l *loadOp) {
	defer s.wg.Done()
	// Read before the load: a change reported while it runs makes the copy
	// stale at once.
	epoch := s.opts.Epochs.Of(pos)
	c, err := s.callSource(pos, l.ctx)
	l.cancel()
	if err != nil {
		var pe *PosError
		if !errors.As(err, &pe) {
			err = &PosError{Pos: pos, Err: err}
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.loading--
	s.loads++
	e := s.entries[pos]
	attached := e != nil && e.load == l
	switch {
	case !attached:
		// Every waiter left; the entry was forgotten. Discard the result.
		if err == nil {
			err = context.Canceled
		}
	case s.closed:
		delete(s.entries, pos)
		err = ErrClosed
	case err != nil:
		delete(s.entries, pos)
	default:
		e.chunk, e.size, e.load, e.epoch = c, c.MemSize(), nil, epoch
		s.resident++
		s.bytes += e.size
		// Convert every waiter into a reference now, so the chunk cannot
		// be evicted before they wake. An attached load always has
		// waiters: the last one to leave detaches it.
		for range l.waiters {
			s.refLocked(e)
		}
		s.evictLocked()
	}
	if err != nil {
		s.loadErrs++
	}
	l.err = err
	l.finished = true
	close(l.ch)
}

// callSource runs Source.Load within a load slot, turning a panic into an
// error.
func (s *Resident) callSource(pos geom.Chunk, ctx context.Context) (c *Chunk, err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("world: source panicked loading a chunk",
				"pos", pos, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c, err = nil, fmt.Errorf("%w: %v", ErrSourcePanic, p)
		}
	}()
	c, err = s.src.Load(ctx, pos)
	if err == nil && (c == nil || c.Pos != pos) {
		c, err = nil, ErrNoChunk
	}
	return c, err
}

// refLocked adds a reference to the resident entry e.
func (s *Resident) refLocked(e *entry) {
	if e.refs == 0 {
		s.reserved++
		if e.next != nil {
			lruRemove(e)
		}
	}
	e.refs++
}

// unrefLocked drops a reference to the resident entry e: the last one
// makes it the most recently used unreserved chunk (or, once the store is
// closed or the entry retired, drops it).
func (s *Resident) unrefLocked(e *entry) {
	e.refs--
	if e.refs > 0 {
		return
	}
	s.reserved--
	if s.closed || e.retired {
		s.dropLocked(e)
		return
	}
	lruPushFront(&s.lru, e)
	s.evictLocked()
}

// dropLocked forgets the unreserved, unlisted resident entry e.
func (s *Resident) dropLocked(e *entry) {
	if e.retired {
		delete(s.retired, e)
	} else if s.entries[e.pos] == e {
		delete(s.entries, e.pos)
	}
	s.resident--
	s.bytes -= e.size
}

// evictLocked evicts least recently used unreserved chunks while the store
// is over its budget.
func (s *Resident) evictLocked() {
	for s.overBudgetLocked() && s.lru.prev != &s.lru {
		e := s.lru.prev
		lruRemove(e)
		s.dropLocked(e)
		s.evictions++
	}
}

func (s *Resident) overBudgetLocked() bool {
	return (s.opts.MaxChunks > 0 && s.resident > s.opts.MaxChunks) ||
		(s.opts.MaxBytes > 0 && s.bytes > s.opts.MaxBytes)
}

func lruRemove(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func lruPushFront(head, e *entry) {
	e.prev, e.next = head, head.next
	head.next.prev = e
	head.next = e
}

// openLocked hands out a reservation on e opened at now, whose reference
// the caller already counted.
func (s *Resident) openLocked(e *entry, now time.Time, lifespan time.Duration) *Reservation {
	lifespan = max(lifespan, 0)
	r := &Reservation{s: s, e: e, chunk: e.chunk, epoch: e.epoch, opened: now, lifespan: lifespan}
	if lifespan > 0 {
		r.deadline = now.Add(lifespan)
	}
	// Append to its lifespan's list (oldest first).
	head := s.open[lifespan]
	if head == nil {
		head = &Reservation{}
		head.prev, head.next = head, head
		s.open[lifespan] = head
	}
	r.prev, r.next = head.prev, head
	head.prev.next = r
	head.prev = r
	s.opened++
	return r
}

// Peek returns the chunk at pos if it is resident, without reserving it
// and without changing its recency. The chunk may be evicted as soon as
// Peek returns (it stays valid to read: chunks are immutable). It reports
// false for a chunk that is absent, still loading or stale (see
// ResidentOptions.Epochs), and once the store is closed.
func (s *Resident) Peek(pos geom.Chunk) (*Chunk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	if e := s.entries[pos]; e != nil && e.chunk != nil && !s.staleLocked(e) {
		return e.chunk, true
	}
	return nil, false
}

// Stats returns a consistent snapshot of the store's counters.
func (s *Resident) Stats() ResidentStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ResidentStats{
		Opened:     s.opened,
		Closed:     s.nclosed,
		Forced:     s.forced,
		Open:       int(s.opened - s.nclosed),
		Hits:       s.hits,
		Misses:     s.misses,
		Loads:      s.loads,
		LoadErrors: s.loadErrs,
		Evictions:  s.evictions,
		Stale:      s.stale,
		Retired:    len(s.retired),
		Resident:   s.resident,
		Reserved:   s.reserved,
		Bytes:      s.bytes,
		Loading:    s.loading,
	}
}

// Close shuts the store down and waits for its goroutines; it is
// Shutdown(context.Background()). With a Source that ignores cancellation
// it waits for that Source; use Shutdown to bound the wait.
func (s *Resident) Close() error { return s.Shutdown(context.Background()) }

// Shutdown closes every open reservation, cancels the loads in flight,
// stops the watchdog, and waits until the store's goroutines have
// returned or ctx ends (then it returns ctx.Err(); the goroutines still
// finish once the Source returns). Later Reserve calls return ErrClosed.
// Shutdown is idempotent: a second call only waits again.
func (s *Resident) Shutdown(ctx context.Context) error {
	var open []*Reservation
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		s.stopBase()
		for _, head := range s.open {
			for r := head.next; r != head; r = r.next {
				open = append(open, r)
			}
		}
		for e := s.lru.next; e != &s.lru; {
			next := e.next
			lruRemove(e)
			s.dropLocked(e)
			e = next
		}
	}
	s.mu.Unlock()
	for _, r := range open {
		r.release(false)
	}

	waited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchdog force-closes reservations past their deadline.
func (s *Resident) watchdog() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.WatchdogInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep force-closes every open reservation whose deadline has passed and
// logs each one.
func (s *Resident) sweep() {
	var expired []*Reservation
	s.mu.Lock()
	now := s.opts.Clock()
	for lifespan, head := range s.open {
		if lifespan == 0 {
			continue // never expires
		}
		for r := head.next; r != head && !now.Before(r.deadline); r = r.next {
			expired = append(expired, r)
		}
	}
	s.mu.Unlock()
	for _, r := range expired {
		if r.release(true) {
			s.opts.Logger.Warn("world: reservation outlived its lifespan; force-closed",
				"pos", r.e.pos, "age", now.Sub(r.opened), "lifespan", r.deadline.Sub(r.opened))
		}
	}
}

// Reservation holds a chunk resident in a Resident store until closed.
//
// A Reservation is safe for concurrent use. Its zero value is not usable;
// a nil *Reservation behaves as a closed one (Chunk returns nil).
type Reservation struct {
	s        *Resident
	e        *entry
	chunk    *Chunk
	epoch    uint32 // Epochs.Of(pos) when the chunk's load started
	opened   time.Time
	deadline time.Time     // zero: never expires
	lifespan time.Duration // the list of Resident.open it is in (0: no deadline)
	closed   atomic.Bool
	// prev and next link the reservation into its list of Resident.open
	// while open; guarded by Resident.mu.
	prev, next *Reservation
}

// Chunk returns the reserved chunk, or nil once the reservation is closed
// (or r is nil). Callers read it once and check for nil: a chunk obtained
// before Close stays valid to read, since chunks are immutable.
func (r *Reservation) Chunk() *Chunk {
	if r == nil || r.closed.Load() {
		return nil
	}
	return r.chunk
}

// Stale reports whether the reserved chunk changed at the source since it
// was loaded (ResidentOptions.Epochs; false without Epochs, and for a nil
// reservation). A closed reservation still answers for the copy it held.
// It takes no lock and does not allocate: callers check it before handing
// out a place read from the chunk.
func (r *Reservation) Stale() bool {
	if r == nil {
		return false
	}
	ep := r.s.opts.Epochs
	return ep != nil && ep.Of(r.e.pos) != r.epoch
}

// Pos returns the position of the reserved chunk (the zero position for a
// nil reservation).
func (r *Reservation) Pos() geom.Chunk {
	if r == nil {
		return geom.Chunk{}
	}
	return r.e.pos
}

// Closed reports whether the reservation has been closed, by Close, the
// watchdog or the store's shutdown. A nil reservation is closed.
func (r *Reservation) Closed() bool { return r == nil || r.closed.Load() }

// Age returns how long ago the reservation was opened, by the store's
// clock (0 for a nil reservation).
func (r *Reservation) Age() time.Duration {
	if r == nil {
		return 0
	}
	return r.s.opts.Clock().Sub(r.opened)
}

// Close releases the reservation. It is idempotent: only the first call,
// from any of the owner, the watchdog or the store's shutdown, releases
// and is counted; later calls do nothing. It always returns nil.
func (r *Reservation) Close() error {
	if r != nil {
		r.release(false)
	}
	return nil
}

// release closes r if it is still open and reports whether this call did.
func (r *Reservation) release(forced bool) bool {
	if !r.closed.CompareAndSwap(false, true) {
		return false
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r.prev.next, r.next.prev = r.next, r.prev
	if head := s.open[r.lifespan]; head != nil && head.next == head {
		delete(s.open, r.lifespan)
	}
	r.prev, r.next = nil, nil
	s.nclosed++
	if forced {
		s.forced++
	}
	s.unrefLocked(r.e)
	return true
}
