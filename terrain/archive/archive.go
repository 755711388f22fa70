package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/internal/lograte"
	"github.com/rtpengine/rtp/terrain"
)

// Options configure an Archive. The zero value gives the defaults.
type Options struct {
	// Logger receives one line when the archive runs without a store and
	// rate-limited warnings about storage failures and invalid records.
	// Default: slog.Default().
	Logger *slog.Logger
	// Clock tells the time for rate-limiting log lines. Default: time.Now.
	Clock func() time.Time
	// QueueLength bounds the writes waiting for the background writer. A
	// write that finds the queue full is dropped and counted, never waited
	// for, unless WaitForRoom is set. Default: 256.
	QueueLength int
	// WaitForRoom makes a write that finds the queue full wait until the
	// writer has taken one, instead of being dropped: the tile is
	// delivered only once its write is queued. It is for batch work whose
	// point is to fill the archive (rtp pregen), where generation on
	// every processor outruns one writer and a dropped tile is generated
	// again by the server that was meant to find it. A server leaves it
	// off, so that no request ever waits on the disk. Default false.
	WaitForRoom bool
	// ReadTimeout, when positive, bounds one store read; a read that times
	// out costs a regeneration. Default: none besides the caller's ctx,
	// since stores bound their own transactions (the SQLite store's
	// TxTimeout, for one) and a timer per hit is measurable.
	ReadTimeout time.Duration
	// WriteTimeout bounds one store write. Default: 5 s. Negative: no bound.
	WriteTimeout time.Duration
	// StoreError, with a nil store, says why there is none (opening it
	// failed: a corrupt or unopenable database); the one log line the
	// archive writes then carries it. Default nil.
	StoreError error
	// LogInterval is the shortest time between two warnings about storage
	// failures; the ones in between are counted in the next. Default: 1 min.
	LogInterval time.Duration
}

// Defaults for Options.
const (
	DefaultQueueLength  = 256
	DefaultWriteTimeout = 5 * time.Second
	DefaultLogInterval  = time.Minute
)

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.QueueLength <= 0 {
		o.QueueLength = DefaultQueueLength
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.LogInterval <= 0 {
		o.LogInterval = DefaultLogInterval
	}
	return o
}

// Errors returned by Wrap and the Archive's own methods (never by Tile).
var (
	ErrClosed     = errors.New("archive: closed")
	ErrStoreInUse = errors.New("archive: store already belongs to an open archive")
)

// Stats are an archive's diagnostics. Counters run from Wrap.
type Stats struct {
	Hits    int64 // valid records delivered
	Misses  int64 // requests that needed generation (including the invalid and read errors below)
	Invalid int64 // records found but rejected by the key comparison or validation, then deleted
	// ReadErrors counts failed store reads (errors, timeouts and panics); each cost a regeneration.
	ReadErrors int64
	// WriteErrors counts failed store writes and deletes.
	WriteErrors int64
	// DroppedWrites counts writes not queued because the queue was full.
	DroppedWrites int64
	// WaitedWrites counts the times a write found the queue full and
	// waited for room (Options.WaitForRoom).
	WaitedWrites int64
	// WaitForRoom is the archive's Options.WaitForRoom: whether a full
	// queue holds a generation back rather than dropping its write.
	WaitForRoom bool
	// Cancelled counts requests that returned their ctx's error.
	Cancelled int64
	// Generations counts calls to the source (one per single-flight group).
	Generations int64
	// PendingWrites is the number of queued writes not yet finished.
	PendingWrites int64
	// Store reports whether a store is attached and open; when false the
	// archive passes every request straight to its source.
	Store bool
	// Entries, Bytes and Limits are the store's own (zero without a store).
	Entries, Bytes int64
	Limits         Limits
}

// Archive is a terrain.Source that answers from a Store when it holds a
// valid tile for the exact request and generates (then archives) it
// otherwise. Create one with Wrap; the zero value is not usable. An Archive
// is safe for concurrent use.
//
// Guarantees: a hit needs full-key equality and complete validation (an
// invalid record is deleted and the tile regenerated); a generated tile is
// returned before it is written (writes are queued to one background writer
// and dropped when the queue is full); concurrent misses for one key share
// one generation; any storage failure, including a panicking store, costs a
// regeneration and never fails a request: Tile returns only the source's
// errors and ctx errors.
//
// One Archive owns its store: Wrap refuses a store that an open Archive
// already holds (when the store's dynamic type is comparable, as pointer
// types are), because two archives over one store would clear, flush and
// close it behind each other's backs.
type Archive struct {
	src    terrain.Source
	store  Store // nil: pass-through
	opts   Options
	prefix []byte // key bytes common to every request: magic, producer, params

	life   sync.RWMutex // read-held around store reads and Clear; write-held by Close to flip closed
	closed bool         // protected by life

	epoch   atomic.Uint64 // bumped by Clear; a write generated under an older epoch is discarded
	writeMu sync.Mutex    // serializes the writer's store writes with Clear's store.Clear

	mu        sync.Mutex    // protects following fields
	queued    uint64        // sequence number of the last queued write
	finished  uint64        // sequence number of the last finished write
	progress  chan struct{} // closed and replaced whenever finished advances
	queueDone bool          // queue is closed: Close has begun

	queue      chan writeOp
	writerCtx  context.Context // cancelled when Close gives up waiting
	stopWriter context.CancelFunc
	writerDone chan struct{}

	flights flight.Group[Digest, *terrain.Tile] // one generation per digest; see generate

	hits, misses, invalid, readErrors, writeErrors atomic.Int64
	dropped, waited, cancelled, generations        atomic.Int64

	warnings lograte.Limiter // storage warnings, one per LogInterval
}

type writeOp struct {
	seq   uint64
	epoch uint64
	rec   Record          // Digest and Key; the writer fills Payload from tile
	tile  *terrain.Tile   // the generated tile to archive (nil: delete rec.Digest)
	req   terrain.Request // what tile must answer
}

// owners maps each store held by an open Archive to it (only stores of a
// comparable dynamic type are tracked).
var owners sync.Map

// Wrap returns an Archive in front of src that keeps tiles in store. The
// Archive has src's Producer and Params. It returns an error when src's
// parameters cannot be encoded canonically (Params must return a struct
// value whose fields are bools, numbers, strings, arrays, slices or structs
// of those: see the package's canonical encoding) or when store already
// belongs to an open Archive.
//
// A nil store (none configured, or opening it failed) is not an error: the
// Archive logs one line and passes every request straight to src.
func Wrap(src terrain.Source, store Store, opts Options) (*Archive, error) {
	if src == nil {
		return nil, errors.New("archive: nil source")
	}
	opts = opts.withDefaults()
	prefix, err := keyPrefix(src.Producer(), src.Params())
	if err != nil {
		return nil, err
	}
	a := &Archive{src: src, opts: opts, prefix: prefix, warnings: lograte.Limiter{Interval: opts.LogInterval, Clock: opts.Clock}}
	if isNil(store) {
		a.closed = true
		args := []any{"producer", src.Producer().String()}
		if opts.StoreError != nil {
			args = append(args, "reason", opts.StoreError.Error())
		}
		opts.Logger.Warn("archive: no store available; every tile is generated by its source", args...)
		return a, nil
	}
	if reflect.TypeOf(store).Comparable() {
		if other, loaded := owners.LoadOrStore(store, a); loaded && other != a {
			return nil, ErrStoreInUse
		}
	}
	a.store = store
	a.flights.Logger = opts.Logger
	a.progress = make(chan struct{})
	a.queue = make(chan writeOp, opts.QueueLength)
	a.writerCtx, a.stopWriter = context.WithCancel(context.Background())
	a.writerDone = make(chan struct{})
	go a.writer()
	return a, nil
}

func isNil(s Store) bool {
	if s == nil {
		return true
	}
	v := reflect.ValueOf(s)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Producer returns the source's producer.
func (a *Archive) Producer() terrain.Producer { return a.src.Producer() }

// Params returns the source's parameters.
func (a *Archive) Params() any { return a.src.Params() }

var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Tile returns the archived tile for req when the store holds a valid one,
// and the source's tile otherwise. It returns only the source's errors and
// ctx errors. A ctx that ends before the store read finishes starts no
// generation; one that ends during a generation cancels it unless another
// caller still waits for the same tile.
func (a *Archive) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	if req.Validate() != nil {
		return a.src.Tile(ctx, req) // the source reports the request's problems
	}
	a.life.RLock()
	if a.closed {
		a.life.RUnlock()
		return a.src.Tile(ctx, req)
	}
	if err := ctx.Err(); err != nil {
		a.life.RUnlock()
		a.cancelled.Add(1)
		return nil, err
	}
	epoch := a.epoch.Load()
	bp := keyBufs.Get().(*[]byte)
	key := appendRequest(append((*bp)[:0], a.prefix...), req)
	d := Digest(sha256.Sum256(key))
	rec, found, err := a.read(ctx, d)
	a.life.RUnlock()

	if ctxErr := ctx.Err(); ctxErr != nil {
		*bp = key
		keyBufs.Put(bp)
		a.cancelled.Add(1)
		return nil, ctxErr
	}
	if err != nil {
		a.readErrors.Add(1)
		a.warn("archive: store read failed; regenerating", "err", err)
	} else if found {
		t, err := a.check(rec, key, req)
		if err == nil {
			*bp = key
			keyBufs.Put(bp)
			a.hits.Add(1)
			return t, nil
		}
		a.invalid.Add(1)
		a.warn("archive: invalid record deleted; regenerating", "request", req.String(), "err", err)
		a.enqueue(writeOp{epoch: epoch, rec: Record{Digest: d}})
	}
	a.misses.Add(1)
	*bp = key
	key = bytes.Clone(key)
	keyBufs.Put(bp)
	return a.generate(ctx, d, key, req, epoch)
}

// read gets d from the store within the read timeout, turning a panic into
// an error.
func (a *Archive) read(ctx context.Context, d Digest) (rec Record, found bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, found, err = Record{}, false, fmt.Errorf("archive: store Get panicked: %v", p)
		}
	}()
	if a.opts.ReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.opts.ReadTimeout)
		defer cancel()
	}
	return a.store.Get(ctx, d)
}

// check accepts rec as the answer to req only if its key is exactly key and
// its payload decodes and validates against req.
func (a *Archive) check(rec Record, key []byte, req terrain.Request) (*terrain.Tile, error) {
	if !bytes.Equal(rec.Key, key) {
		return nil, errors.New("archive: stored key differs from the request's (digest collision or corruption)")
	}
	return decodeChecked(rec.Payload, req)
}

// generate joins or starts the generation for d and waits for it or for
// ctx. The generation follows the internal/flight policy: it keeps the
// first caller's values, not its cancellation, and is cancelled when the
// last waiting caller leaves. It queues its write before delivering its
// tile, so that a caller's Flush covers it; the writer validates and
// encodes, so delivery waits for neither.
func (a *Archive) generate(ctx context.Context, d Digest, key []byte, req terrain.Request, epoch uint64) (*terrain.Tile, error) {
	t, _, err := a.flights.Do(ctx, d, func(gctx context.Context) (*terrain.Tile, error) {
		a.generations.Add(1)
		t, err := a.callSource(gctx, req)
		if err == nil {
			a.enqueue(writeOp{epoch: epoch, rec: Record{Digest: d, Key: key}, tile: t, req: req})
		}
		return t, err
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		a.cancelled.Add(1)
	}
	return t, err
}

func (a *Archive) callSource(ctx context.Context, req terrain.Request) (t *terrain.Tile, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("archive: source %s panicked on %v: %v", a.src.Producer(), req, p)
		}
	}()
	t, err = a.src.Tile(ctx, req)
	if err == nil && t == nil {
		err = fmt.Errorf("archive: source %s returned no tile and no error for %v", a.src.Producer(), req)
	}
	return t, err
}

// enqueue queues op for the writer. A full queue drops it, or, with
// Options.WaitForRoom, makes enqueue wait until the writer has finished a
// write (it always does: each write ends within WriteTimeout, or at once
// once Close has given up) and try again.
func (a *Archive) enqueue(op writeOp) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if a.queueDone {
			return // closing: the store is no longer ours to write
		}
		op.seq = a.queued + 1
		select {
		case a.queue <- op:
			a.queued = op.seq
			return
		default:
		}
		if !a.opts.WaitForRoom {
			a.dropped.Add(1)
			return
		}
		a.waited.Add(1)
		progress := a.progress
		a.mu.Unlock()
		<-progress
		a.mu.Lock()
	}
}

// writer applies queued writes in order until the queue is closed.
func (a *Archive) writer() {
	defer close(a.writerDone)
	for op := range a.queue {
		a.apply(op)
		a.mu.Lock()
		a.finished = op.seq
		close(a.progress)
		a.progress = make(chan struct{})
		a.mu.Unlock()
	}
}

func (a *Archive) apply(op writeOp) {
	if a.writerCtx.Err() != nil {
		a.dropped.Add(1) // Close gave up waiting
		return
	}
	if op.tile != nil {
		if err := op.tile.Validate(op.req); err != nil {
			a.warn("archive: source returned an invalid tile; not archived", "request", op.req.String(), "err", err)
			return
		}
		op.rec.Payload = EncodeTile(op.tile)
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if op.tile != nil && op.epoch != a.epoch.Load() {
		return // generated before a Clear: must not repopulate
	}
	ctx := a.writerCtx
	if a.opts.WriteTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.opts.WriteTimeout)
		defer cancel()
	}
	err := guard("Put", func() error {
		if op.tile == nil {
			return a.store.Delete(ctx, op.rec.Digest)
		}
		return a.store.Put(ctx, op.rec)
	})
	if err != nil {
		a.writeErrors.Add(1)
		a.warn("archive: store write failed", "err", err)
	}
}

// guard calls fn, turning a panic into an error.
func guard(op string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("archive: store %s panicked: %v", op, p)
		}
	}()
	return fn()
}

// Flush waits until every write queued before the call has been applied
// (or discarded as stale), or until ctx ends.
func (a *Archive) Flush(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	a.mu.Lock()
	target := a.queued
	a.mu.Unlock()
	for {
		a.mu.Lock()
		done, wake := a.finished >= target, a.progress
		a.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Clear empties the store so that nothing generated before the call can
// repopulate it: it starts a new epoch (writes of requests that began
// earlier are discarded), waits for the queued writes, then clears the
// store. It returns ErrClosed after Close, and the store's error if
// clearing fails. Without a store there is nothing to clear: it returns nil.
func (a *Archive) Clear(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	a.life.RLock()
	defer a.life.RUnlock()
	if a.closed {
		return ErrClosed
	}
	a.epoch.Add(1)
	if err := a.Flush(ctx); err != nil {
		return err
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if err := guard("Clear", func() error { return a.store.Clear(ctx) }); err != nil {
		return fmt.Errorf("archive: clear: %w", err)
	}
	return nil
}

// Close stops archiving: it waits for queued writes (until ctx ends; then
// the rest are dropped), closes the store and releases it. Afterwards the
// Archive passes every request straight to its source and touches no store.
// Generations in flight still deliver to their callers. Close is
// idempotent; it returns ctx's error if the writes could not all be applied
// in time, and the store's Close error.
func (a *Archive) Close(ctx context.Context) error {
	a.life.Lock()
	if a.closed {
		a.life.Unlock()
		return nil
	}
	a.closed = true
	a.life.Unlock()

	a.mu.Lock()
	a.queueDone = true
	close(a.queue)
	a.mu.Unlock()
	var errs []error
	select {
	case <-a.writerDone:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("archive: close: pending writes dropped: %w", ctx.Err()))
		a.stopWriter()
		<-a.writerDone
	}
	a.stopWriter()
	errs = append(errs, guard("Close", a.store.Close))
	owners.CompareAndDelete(a.store, a)
	return errors.Join(errs...)
}

// Stats returns the archive's counters and, while it has an open store, the
// store's retained entries and bytes. The error is the store's.
func (a *Archive) Stats(ctx context.Context) (Stats, error) {
	a.life.RLock()
	defer a.life.RUnlock()
	s := a.countersLocked()
	if a.closed {
		return s, nil
	}
	var st StoreStats
	err := guard("Stats", func() (err error) {
		st, err = a.store.Stats(ctx)
		return err
	})
	if err != nil {
		return s, fmt.Errorf("archive: stats: %w", err)
	}
	s.Entries, s.Bytes, s.Limits = st.Entries, st.Bytes, st.Limits
	return s, nil
}

// Counters returns what Stats does without asking the store: the
// counters, the pending writes and whether a store is open, with Entries,
// Bytes and Limits zero. It never blocks on the store, for callers that
// read it often (a metrics scrape).
func (a *Archive) Counters() Stats {
	a.life.RLock()
	defer a.life.RUnlock()
	return a.countersLocked()
}

// countersLocked is Counters, with life read-held.
func (a *Archive) countersLocked() Stats {
	s := Stats{
		Hits: a.hits.Load(), Misses: a.misses.Load(), Invalid: a.invalid.Load(),
		ReadErrors: a.readErrors.Load(), WriteErrors: a.writeErrors.Load(),
		DroppedWrites: a.dropped.Load(), WaitedWrites: a.waited.Load(), WaitForRoom: a.opts.WaitForRoom,
		Cancelled:   a.cancelled.Load(),
		Generations: a.generations.Load(),
	}
	if a.closed {
		return s
	}
	a.mu.Lock()
	s.PendingWrites = int64(a.queued - a.finished)
	a.mu.Unlock()
	s.Store = true
	return s
}

// warn logs a storage problem, at most once per LogInterval; the lines
// suppressed in between are counted in the next one.
func (a *Archive) warn(msg string, args ...any) {
	a.warnings.Warn(a.opts.Logger, msg, args...)
}
