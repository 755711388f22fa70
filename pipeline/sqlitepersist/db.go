package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"

	"github.com/rtpengine/rtp/pipeline"
)

// Defaults of Options.
const (
	DefaultQueueLimit  = 1 << 16
	DefaultBusyTimeout = 5 * time.Second
	DefaultBatchDelay  = 100 * time.Millisecond
)

// schemaVersion is the PRAGMA user_version this package writes.
const schemaVersion = 1

var schema = []string{
	`CREATE TABLE IF NOT EXISTS locations (
		id     INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		key    TEXT NOT NULL,
		world  TEXT NOT NULL,
		x      INTEGER NOT NULL,
		y      INTEGER NOT NULL,
		z      INTEGER NOT NULL,
		idx    INTEGER NOT NULL,
		n      INTEGER NOT NULL CHECK (n > 0),
		UNIQUE (region, key, world, x, y, z)
	)`,
}

const (
	sqlAdd = `INSERT INTO locations (region, key, world, x, y, z, idx, n) VALUES (?, ?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (region, key, world, x, y, z) DO UPDATE SET n = n + 1, idx = excluded.idx`
	sqlDec      = `UPDATE locations SET n = n - 1 WHERE region = ? AND key = ? AND world = ? AND x = ? AND y = ? AND z = ? AND n > 1`
	sqlDel      = `DELETE FROM locations WHERE region = ? AND key = ? AND world = ? AND x = ? AND y = ? AND z = ? AND n <= 1`
	sqlDropKeys = `DELETE FROM locations WHERE region = ? AND key <> ?`
	sqlLoad     = `SELECT world, x, y, z, idx, n FROM locations WHERE region = ? AND key = ? ORDER BY id`
)

// ErrClosed is returned once the DB is closed.
var ErrClosed = errors.New("sqlitepersist: closed")

// Options configure a DB. The zero value selects every default.
type Options struct {
	// QueueLimit bounds the writes waiting for the writer. Default
	// DefaultQueueLimit (65,536).
	QueueLimit int
	// BusyTimeout is how long a statement waits for a lock held by
	// another connection or process. Default DefaultBusyTimeout (5 s).
	BusyTimeout time.Duration
	// BatchDelay is how long the writer lets writes gather after the
	// first one of a batch before it commits them in one transaction:
	// under a steady stream of moves a commit every BatchDelay instead of
	// one per few writes. Flush and Close do not wait for it. Writes are
	// queued in memory until they are committed, so a crash loses at most
	// this much more of them (the table is a cache: a lost move costs a
	// check again, never an unsafe place). Default DefaultBatchDelay
	// (100 ms); negative: commit as soon as anything is queued.
	BatchDelay time.Duration
	// Logger receives write failures and the first dropped write of a
	// burst. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.QueueLimit < 0 {
		errs = append(errs, fmt.Errorf("sqlitepersist: QueueLimit %d is negative", o.QueueLimit))
	}
	if o.BusyTimeout < 0 {
		errs = append(errs, fmt.Errorf("sqlitepersist: BusyTimeout %v is negative", o.BusyTimeout))
	}
	return errors.Join(errs...)
}

// op is one queued write.
type op struct {
	add    bool
	region string
	key    pipeline.Key
	loc    pipeline.Location
}

// Stats are a DB's counters.
type Stats struct {
	Queued  int    // writes waiting now
	Written uint64 // writes committed
	Dropped uint64 // writes dropped because the queue was full or the DB closed
	Errors  uint64 // failed batches
}

// DB is the locations database. Open one with Open; the zero value is not
// usable. A DB is safe for concurrent use. It owns one writer goroutine,
// which Close stops.
type DB struct {
	db   *sql.DB
	path string
	opts Options
	log  *slog.Logger

	add, dec, del *sql.Stmt

	wake chan struct{} // buffered(1): the queue is not empty
	now  chan struct{} // buffered(1): Flush is waiting, do not delay
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has returned

	written, dropped, failures atomic.Uint64

	mu sync.Mutex
	// mu protects the following fields.
	queue    []op
	spare    []op
	queued   uint64        // sequence number of the last queued write
	applied  uint64        // sequence number of the last applied write
	progress chan struct{} // closed and replaced whenever applied moves
	err      error         // first write error since the last Flush
	closed   bool
	dropping bool // a drop was logged and the queue has not drained since
}

// Open opens (creating it and its directory if needed) the locations
// database at path.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqlitepersist: open: empty path")
	}
	if opts.QueueLimit == 0 {
		opts.QueueLimit = DefaultQueueLimit
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.BatchDelay == 0 {
		opts.BatchDelay = DefaultBatchDelay
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &DB{
		path: path, opts: opts, log: opts.Logger,
		wake: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		progress: make(chan struct{}),
	}
	if err := d.open(ctx); err != nil {
		if d.db != nil {
			d.db.Close()
		}
		return nil, fmt.Errorf("sqlitepersist: open %s: %w", path, err)
	}
	go d.run()
	return d, nil
}

func (d *DB) open(ctx context.Context) error {
	db, err := sqlitedb.Open(ctx, d.path, d.opts.BusyTimeout)
	if err != nil {
		return err
	}
	d.db = db
	if err := d.initSchema(ctx); err != nil {
		return err
	}
	for _, s := range []struct {
		dst **sql.Stmt
		q   string
	}{{&d.add, sqlAdd}, {&d.dec, sqlDec}, {&d.del, sqlDel}} {
		st, err := db.PrepareContext(ctx, s.q)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*s.dst = st
	}
	return nil
}

// initSchema creates the table in a new database, or checks the version of
// an existing one.
func (d *DB) initSchema(ctx context.Context) error {
	return sqlitedb.InitSchema(ctx, d.db, "locations", schemaVersion, schema)
}

// Region returns the Persister of one region under key. Both must be
// non-empty.
func (d *DB) Region(region string, key pipeline.Key) (*Region, error) {
	var errs []error
	if region == "" {
		errs = append(errs, errors.New("sqlitepersist: empty region name"))
	}
	if key == "" {
		errs = append(errs, errors.New("sqlitepersist: empty key"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Region{d: d, region: region, key: key}, nil
}

// enqueue queues one write without waiting.
func (d *DB) enqueue(o op) {
	d.mu.Lock()
	if d.closed || len(d.queue) >= d.opts.QueueLimit {
		first := !d.dropping && !d.closed
		d.dropping = true
		d.mu.Unlock()
		d.dropped.Add(1)
		if first {
			d.log.Warn("sqlitepersist: write queue full; dropping writes", "path", d.path, "limit", d.opts.QueueLimit)
		}
		return
	}
	d.queue = append(d.queue, o)
	d.queued++
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run is the writer goroutine.
func (d *DB) run() {
	defer close(d.done)
	var delay *time.Timer
	if d.opts.BatchDelay > 0 {
		delay = time.NewTimer(d.opts.BatchDelay)
		delay.Stop()
		defer delay.Stop()
	}
	for {
		urgent := false
		select {
		case <-d.wake:
		case <-d.now:
			urgent = true
		case <-d.stop:
			d.writeBatch()
			return
		}
		if delay != nil && !urgent {
			delay.Reset(d.opts.BatchDelay)
			select {
			case <-delay.C:
			case <-d.now:
			case <-d.stop:
				d.writeBatch()
				return
			}
		}
		d.writeBatch()
	}
}

// writeBatch applies everything queued in one transaction.
func (d *DB) writeBatch() {
	d.mu.Lock()
	batch := d.queue
	d.queue = d.spare[:0]
	upTo := d.queued
	d.mu.Unlock()
	var err error
	if len(batch) > 0 {
		err = d.apply(batch)
		if err != nil {
			d.failures.Add(1)
			d.log.Error("sqlitepersist: writing locations failed", "path", d.path, "writes", len(batch), "error", err)
		} else {
			d.written.Add(uint64(len(batch)))
		}
	}
	clear(batch) // drop the strings for the collector
	d.mu.Lock()
	d.spare = batch[:0]
	d.applied = upTo
	if err != nil && d.err == nil {
		d.err = err
	}
	if len(d.queue) == 0 {
		d.dropping = false
	}
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()
}

func (d *DB) apply(batch []op) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.BusyTimeout+10*time.Second)
	defer cancel()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	add, dec, del := tx.StmtContext(ctx, d.add), tx.StmtContext(ctx, d.dec), tx.StmtContext(ctx, d.del)
	for _, o := range batch {
		l := o.loc
		if o.add {
			if _, err := add.ExecContext(ctx, o.region, string(o.key), l.World, l.X, l.Y, l.Z, l.Index); err != nil {
				return fmt.Errorf("add: %w", err)
			}
			continue
		}
		// The last copy goes with its row; otherwise one copy less.
		r, err := del.ExecContext(ctx, o.region, string(o.key), l.World, l.X, l.Y, l.Z)
		if err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return fmt.Errorf("remove: %w", err)
		} else if n > 0 {
			continue
		}
		if _, err := dec.ExecContext(ctx, o.region, string(o.key), l.World, l.X, l.Y, l.Z); err != nil {
			return fmt.Errorf("remove: %w", err)
		}
	}
	return tx.Commit()
}

// Flush waits until every write queued before the call is committed, or
// ctx ends. It returns the first write error since the last Flush, and
// ErrClosed once the DB is closed.
func (d *DB) Flush(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	target := d.queued
	for d.applied < target {
		ch := d.progress
		d.mu.Unlock()
		select {
		case d.now <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.done:
			return ErrClosed
		}
		d.mu.Lock()
	}
	err := d.err
	d.err = nil
	d.mu.Unlock()
	return err
}

// Stats returns the DB's counters.
func (d *DB) Stats() Stats {
	d.mu.Lock()
	q := len(d.queue)
	d.mu.Unlock()
	return Stats{Queued: q, Written: d.written.Load(), Dropped: d.dropped.Load(), Errors: d.failures.Load()}
}

// Close writes what is queued, stops the writer and closes the database.
// Writes queued afterwards are dropped. Close is idempotent; it returns the
// last write error not yet reported by Flush.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	<-d.done
	d.mu.Lock()
	werr := d.err
	d.err = nil
	d.mu.Unlock()
	for _, s := range []*sql.Stmt{d.add, d.dec, d.del} {
		s.Close()
	}
	return errors.Join(werr, d.db.Close())
}

// load deletes the region's rows of other keys and returns the rest.
func (d *DB) load(ctx context.Context, region string, key pipeline.Key) ([]pipeline.Location, error) {
	if err := d.Flush(ctx); err != nil {
		return nil, err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sqlDropKeys, region, string(key)); err != nil {
		return nil, fmt.Errorf("drop stale keys: %w", err)
	}
	rows, err := tx.QueryContext(ctx, sqlLoad, region, string(key))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pipeline.Location
	for rows.Next() {
		var l pipeline.Location
		var n int
		if err := rows.Scan(&l.World, &l.X, &l.Y, &l.Z, &l.Index, &n); err != nil {
			return nil, err
		}
		for range n {
			out = append(out, l)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return out, tx.Commit()
}

// Region is the pipeline.Persister of one region and key. It is safe for
// concurrent use.
type Region struct {
	d      *DB
	region string
	key    pipeline.Key
}

var _ pipeline.Persister = (*Region)(nil)

// Add implements pipeline.Persister; it never waits for the database.
func (r *Region) Add(loc pipeline.Location) {
	r.d.enqueue(op{add: true, region: r.region, key: r.key, loc: loc})
}

// Remove implements pipeline.Persister; it never waits for the database.
func (r *Region) Remove(loc pipeline.Location) {
	r.d.enqueue(op{region: r.region, key: r.key, loc: loc})
}

// Load implements pipeline.Persister: after flushing the queue it deletes
// the region's rows of other keys and returns the others, one Location per
// copy, in insertion order.
func (r *Region) Load(ctx context.Context) ([]pipeline.Location, error) {
	locs, err := r.d.load(ctx, r.region, r.key)
	if err != nil {
		return nil, fmt.Errorf("sqlitepersist: load %s: %w", r.region, err)
	}
	return locs, nil
}

// Flush implements pipeline.Persister (it flushes the whole DB).
func (r *Region) Flush(ctx context.Context) error { return r.d.Flush(ctx) }
