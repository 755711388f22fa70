package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"

	"github.com/rtpengine/rtp/pipeline"
)

// Defaults of Options.
const (
	DefaultQueueLimit  = 1 << 16
	DefaultBusyTimeout = 5 * time.Second
	DefaultBatchDelay  = 100 * time.Millisecond
	DefaultRetryMin    = 100 * time.Millisecond
	DefaultRetryMax    = 10 * time.Second
)

// logEvery is the pace of the log lines of a lasting failure (and of
// dropped writes): at most one a minute after the first.
const logEvery = time.Minute

// schemaVersion is the PRAGMA user_version this package writes: 2 added
// the hot column and the meta, memory_journal and spots tables.
const schemaVersion = 2

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
		hot    INTEGER NOT NULL DEFAULT 0,
		UNIQUE (region, key, world, x, y, z)
	)`,
}

// schemaV2 is what version 2 added to version 1, beside the hot column.
var schemaV2 = []string{
	`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS memory_journal (
		seq    INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		idx    INTEGER NOT NULL,
		cause  INTEGER NOT NULL,
		source TEXT NOT NULL,
		at     INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS memory_journal_region ON memory_journal (region, seq)`,
	`CREATE TABLE IF NOT EXISTS spots (
		region TEXT NOT NULL,
		x      INTEGER NOT NULL,
		z      INTEGER NOT NULL,
		at     INTEGER NOT NULL,
		PRIMARY KEY (region, x, z)
	) WITHOUT ROWID`,
}

// The run states of the meta row "state".
const (
	stateRunning = "running" // set at Open: a process has the database
	stateClean   = "clean"   // set by Close after its final commit
)

// The statements of a change (see change): ?1 is the number of copies
// added or removed.
const (
	sqlAdd = `INSERT INTO locations (region, key, world, x, y, z, idx, n) VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?1)
		ON CONFLICT (region, key, world, x, y, z) DO UPDATE SET n = n + excluded.n, idx = excluded.idx`
	sqlDec      = `UPDATE locations SET n = n - ?1 WHERE region = ?2 AND key = ?3 AND world = ?4 AND x = ?5 AND y = ?6 AND z = ?7 AND n > ?1`
	sqlDel      = `DELETE FROM locations WHERE region = ?2 AND key = ?3 AND world = ?4 AND x = ?5 AND y = ?6 AND z = ?7 AND n <= ?1`
	sqlDropKeys = `DELETE FROM locations WHERE region = ? AND key <> ?`
	sqlLoad     = `SELECT world, x, y, z, idx, n FROM locations WHERE region = ? AND key = ? ORDER BY id`
	// sqlHot marks the row of a column hot whatever its y (the landing y
	// found at promotion may differ from the screen's).
	sqlHot      = `UPDATE locations SET hot = 1 WHERE region = ?1 AND key = ?2 AND world = ?3 AND x = ?4 AND z = ?5`
	sqlMark     = `INSERT INTO memory_journal (seq, region, idx, cause, source, at) VALUES (?, ?, ?, ?, ?, ?)`
	sqlSpot     = `INSERT INTO spots (region, x, z, at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (region, x, z) DO UPDATE SET at = max(at, excluded.at)`
	sqlTrim     = `DELETE FROM memory_journal WHERE region = ? AND seq <= ?`
	sqlMarks    = `SELECT seq, idx, cause, source, at FROM memory_journal WHERE region = ? ORDER BY seq`
	sqlOldSpots = `DELETE FROM spots WHERE region = ? AND at < ?`
	sqlSpots    = `SELECT x, z, at FROM spots WHERE region = ? ORDER BY at, x, z`
	sqlState    = `INSERT INTO meta (k, v) VALUES ('state', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
)

// ErrClosed is returned once the DB is closed.
var ErrClosed = errors.New("sqlitepersist: closed")

// Options configure a DB. The zero value selects every default.
type Options struct {
	// QueueLimit bounds the pending writes, counted in rows: the writes
	// to one location coalesce into one pending change however many they
	// are. At most QueueLimit rows gather while the writer commits (or
	// waits to retry) a batch of at most QueueLimit rows, so the pending
	// work takes at most 2*QueueLimit rows of memory. Past the bound the
	// oldest rows are dropped (Stats.Dropped, a log line). Default
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
	// RetryMin and RetryMax bound the wait before a failed batch is tried
	// again: RetryMin after the first failure, doubling with each further
	// one up to RetryMax, less a random part of up to half. Defaults
	// DefaultRetryMin (100 ms) and DefaultRetryMax (10 s); when only one
	// is set, the other's default gives way to it (RetryMax 50 ms makes
	// RetryMin 50 ms). Both must not be negative, nor RetryMin above
	// RetryMax.
	RetryMin, RetryMax time.Duration
	// Logger receives write failures (paced: see the package
	// documentation) and dropped writes. Default slog.Default().
	Logger *slog.Logger

	clock clock // tests only; default realClock
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
	if o.RetryMin < 0 {
		errs = append(errs, fmt.Errorf("sqlitepersist: RetryMin %v is negative", o.RetryMin))
	}
	if o.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("sqlitepersist: RetryMax %v is negative", o.RetryMax))
	}
	if o.RetryMin > 0 && o.RetryMax > 0 && o.RetryMin > o.RetryMax {
		errs = append(errs, fmt.Errorf("sqlitepersist: RetryMin %v is above RetryMax %v", o.RetryMin, o.RetryMax))
	}
	return errors.Join(errs...)
}

// Stats are a DB's counters. Every write (Add or Remove) ends up in one of
// Written, Coalesced and Dropped, or is still Pending.
type Stats struct {
	Pending   int    // writes waiting to be committed, after coalescing
	Written   uint64 // writes committed
	Coalesced uint64 // writes that cancelled out before their commit: an Add and the Remove that undid it
	Dropped   uint64 // writes lost: past QueueLimit, after Close, or still failing at Close
	Failures  uint64 // commits that failed
	Retries   uint64 // commits of a batch that had failed before
	Failing   bool   // the last commit failed: its writes wait for a retry
	LastError string // the error of the last failed commit, "" if none; kept once writes resume
}

// DB is the locations database. Open one with Open; the zero value is not
// usable. A DB is safe for concurrent use. It owns one writer goroutine,
// which Close stops.
type DB struct {
	db   *sql.DB
	path string
	opts Options
	// abandon makes Close skip recording a clean shutdown (tests: the
	// next Open sees the run as killed).
	abandon bool
	log     *slog.Logger
	clock   clock

	add, dec, del, hot, mark, spot, trim *sql.Stmt

	// Set by Open, read-only afterwards: what the previous run left.
	unclean   bool
	discarded map[string][]pipeline.Location // by region: hot rows deleted at Open

	wake chan struct{} // buffered(1): the queue is not empty
	now  chan struct{} // buffered(1): Flush is waiting, do not delay
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has returned

	// The writer's own: the batch it commits, kept across failures.
	batch    *pending
	order    []*change
	streak   uint64    // failed commits in a row
	downAt   time.Time // when the streak began
	loggedAt time.Time // when the streak was last logged

	mu sync.Mutex
	// mu protects the following fields.
	front     *pending      // writes since the writer last took them
	spare     *pending      // the writer's emptied front, for the next swap
	batchOps  int           // writes the writer holds (its batch, and the front it took), for Stats
	seq       uint64        // sequence number of the last queued write
	markSeq   uint64        // Seq of the last journal mark queued
	committed uint64        // writes up to this sequence number are committed
	attempts  uint64        // commits tried
	failSeq   uint64        // the last failed commit covered writes up to this
	failAt    uint64        // attempts when the last commit failed
	lastErr   error         // of the last failed commit
	closeErr  error         // writes lost at Close
	progress  chan struct{} // closed and replaced after every commit tried
	closed    bool
	droppedAt time.Time // when a drop was last logged
	stats     Stats     // counters other than Pending
}

// Open opens (creating it and its directory if needed) the locations
// database at path. A directory or file that cannot be written is told
// apart (see internal/sqlitedb.Open).
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
	if opts.RetryMin == 0 {
		opts.RetryMin = DefaultRetryMin
		if opts.RetryMax > 0 {
			opts.RetryMin = min(opts.RetryMin, opts.RetryMax)
		}
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = max(DefaultRetryMax, opts.RetryMin)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.clock == nil {
		opts.clock = realClock{}
	}
	d := &DB{
		path: path, opts: opts, log: opts.Logger, clock: opts.clock,
		wake: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		batch: newPending(), front: newPending(), spare: newPending(),
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
	}{{&d.add, sqlAdd}, {&d.dec, sqlDec}, {&d.del, sqlDel}, {&d.hot, sqlHot}, {&d.mark, sqlMark}, {&d.spot, sqlSpot}, {&d.trim, sqlTrim}} {
		st, err := db.PrepareContext(ctx, s.q)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*s.dst = st
	}
	return d.recover(ctx)
}

// initSchema creates the tables in a new database, upgrades a version 1
// database, or checks the version of an existing one.
func (d *DB) initSchema(ctx context.Context) error {
	var have int
	if err := d.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return err
	}
	if have == 1 {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// A version 1 database knew no hot rows: its last run counts as
		// clean.
		steps := append([]string{`ALTER TABLE locations ADD COLUMN hot INTEGER NOT NULL DEFAULT 0`}, schemaV2...)
		steps = append(steps, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion))
		for _, q := range steps {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("upgrade schema 1 to %d: %w", schemaVersion, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("upgrade schema 1 to %d: %w", schemaVersion, err)
		}
	}
	return sqlitedb.InitSchema(ctx, d.db, "locations", schemaVersion, append(slices.Clone(schema), schemaV2...))
}

// recover reads the state the previous run left: if it did not close
// cleanly, the rows that were hot are deleted (and kept in d.discarded
// for Region.Recovery). Then the state becomes "running" until Close.
func (d *DB) recover(ctx context.Context) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var state string
	switch err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'state'`).Scan(&state); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read run state: %w", err)
	}
	if state == stateRunning {
		d.unclean = true
		d.discarded = map[string][]pipeline.Location{}
		rows, err := tx.QueryContext(ctx, `SELECT region, world, x, y, z, idx, n FROM locations WHERE hot <> 0 ORDER BY id`)
		if err != nil {
			return fmt.Errorf("read hot rows: %w", err)
		}
		for rows.Next() {
			var region string
			var l pipeline.Location
			var n int
			if err := rows.Scan(&region, &l.World, &l.X, &l.Y, &l.Z, &l.Index, &n); err != nil {
				rows.Close()
				return fmt.Errorf("read hot rows: %w", err)
			}
			for range n {
				d.discarded[region] = append(d.discarded[region], l)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("read hot rows: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM locations WHERE hot <> 0`); err != nil {
			return fmt.Errorf("discard hot rows: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, sqlState, stateRunning); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM memory_journal`).Scan(&last); err != nil {
		return fmt.Errorf("read journal position: %w", err)
	}
	d.markSeq = uint64(last.Int64)
	if err := tx.Commit(); err != nil {
		return err
	}
	if d.unclean {
		total := 0
		for _, l := range d.discarded {
			total += len(l)
		}
		d.log.Warn("sqlitepersist: the previous run did not shut down cleanly; discarded the locations that were hot, which may have been handed out",
			"path", d.path, "discarded", total)
	}
	return nil
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

// enqueue queues one write without waiting for the database: it composes
// the write into the pending change of its row, or adds one, dropping the
// oldest row past QueueLimit.
func (d *DB) enqueue(f change) { d.enqueueDone(f, nil) }

// enqueueDone is enqueue of a change with a MarkHot callback (done, nil
// for none), which the commit of the change calls. While the writes are
// failing, and once the DB is closed, done is called at once with the
// error (a failing mark is still queued and retried).
func (d *DB) enqueueDone(f change, done func(error)) {
	d.mu.Lock()
	if d.closed {
		d.stats.Dropped++
		d.mu.Unlock()
		if done != nil {
			done(ErrClosed)
		}
		return
	}
	var failed error
	if done != nil {
		if d.stats.Failing {
			failed = d.lastErr
		} else {
			d.front.done = append(d.front.done, done)
		}
	}
	d.seq++
	if f.a > 0 {
		f.addSeq = d.seq
	}
	dropped := 0
	if _, ok := d.front.at[f.row]; !ok {
		for d.front.rows() >= d.opts.QueueLimit {
			dropped += d.front.dropOldest()
		}
	}
	d.stats.Coalesced += uint64(d.front.put(f))
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	total := d.stats.Dropped
	d.mu.Unlock()
	if logDrop {
		d.logDrops(total)
	}
	if failed != nil {
		done(failed)
	}
	d.signal(done != nil && failed == nil)
}

// signal wakes the writer; urgent asks it to commit without its batch
// delay (a promotion waits for the commit).
func (d *DB) signal(urgent bool) {
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if urgent {
		select {
		case d.now <- struct{}{}:
		default:
		}
	}
}

// enqueueJournal queues journal work (put, under d.mu) without waiting for
// the database; once the DB is closed the write is dropped.
func (d *DB) enqueueJournal(put func(p *pending) (cancelled int)) bool {
	d.mu.Lock()
	if d.closed {
		d.stats.Dropped++
		d.mu.Unlock()
		return false
	}
	d.seq++
	d.stats.Coalesced += uint64(put(d.front))
	dropped := 0
	for len(d.front.marks) > d.opts.QueueLimit {
		d.front.dropOldestMark()
		dropped++
	}
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	total := d.stats.Dropped
	d.mu.Unlock()
	if logDrop {
		d.logDrops(total)
	}
	d.signal(false)
	return true
}

// noteDropsLocked counts n dropped writes and reports whether to log it
// (at most once every logEvery). d.mu is held.
func (d *DB) noteDropsLocked(n int) bool {
	d.stats.Dropped += uint64(n)
	now := d.clock.Now()
	if !d.droppedAt.IsZero() && now.Sub(d.droppedAt) < logEvery {
		return false
	}
	d.droppedAt = now
	return true
}

func (d *DB) logDrops(total uint64) {
	d.log.Warn("sqlitepersist: too many pending writes; dropping the oldest",
		"path", d.path, "limit_rows", d.opts.QueueLimit, "dropped_total", total)
}

// run is the writer goroutine: it waits for writes (then BatchDelay), or
// after a failure for the back-off, and tries to commit everything
// pending. Flush cuts either wait short; Close makes it try once more and
// return.
func (d *DB) run() {
	defer close(d.done)
	for {
		if d.streak == 0 {
			select {
			case <-d.wake:
				if d.opts.BatchDelay > 0 && !d.wait(d.opts.BatchDelay) {
					d.final()
					return
				}
			case <-d.now:
			case <-d.stop:
				d.final()
				return
			}
		} else if !d.wait(backoff(d.streak, d.opts.RetryMin, d.opts.RetryMax)) {
			d.final()
			return
		}
		d.commit()
	}
}

// wait waits for delay, or less if Flush asks; it returns false when Close
// does.
func (d *DB) wait(delay time.Duration) bool {
	c, release := d.clock.After(delay)
	defer release()
	select {
	case <-c:
	case <-d.now:
	case <-d.stop:
		return false
	}
	return true
}

// final is the writer's last commit, at Close: writes that fail now are
// lost, and Close says how many.
func (d *DB) final() {
	if err := d.commit(); err != nil {
		lost := d.batch.ops
		d.batch.reset()
		d.mu.Lock()
		d.stats.Dropped += uint64(lost)
		d.batchOps = 0
		d.closeErr = fmt.Errorf("sqlitepersist: close: %d writes lost, the database is still failing: %w", lost, err)
		d.mu.Unlock()
		d.log.Error("sqlitepersist: writes lost at close", "path", d.path, "writes", lost, "failures", d.streak, "error", err)
		return
	}
	if d.abandon {
		return
	}
	// Every write is committed: no row is hot any longer (the pipelines
	// unloaded their entries), and the run ends cleanly.
	if err := d.markClean(); err != nil {
		d.mu.Lock()
		d.closeErr = fmt.Errorf("sqlitepersist: close: recording a clean shutdown: %w", err)
		d.mu.Unlock()
	}
}

// markClean turns every hot row cold and records a clean shutdown, in one
// transaction.
func (d *DB) markClean() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.BusyTimeout+10*time.Second)
	defer cancel()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE locations SET hot = 0 WHERE hot <> 0`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqlState, stateClean); err != nil {
		return err
	}
	return tx.Commit()
}

// commit takes the writes queued since the last commit into the batch
// (which still holds those of a failed commit, if any) and commits the
// batch in one transaction. On failure the batch is kept for the next
// try.
func (d *DB) commit() error {
	// This commit serves every Flush that asked so far: a request left
	// over would cut the next wait short for nothing.
	select {
	case <-d.now:
	default:
	}
	d.mu.Lock()
	front := d.front
	d.front, d.spare = d.spare, nil
	d.batchOps += front.ops // in the writer's hands now
	upTo := d.seq
	retry := d.streak > 0
	if retry {
		d.stats.Retries++
	}
	d.mu.Unlock()

	cancelled := d.batch.merge(front)
	front.reset()
	dropped := 0
	for d.batch.rows() > d.opts.QueueLimit {
		dropped += d.batch.dropOldest()
	}
	var err error
	if d.batch.ops > 0 {
		err = d.apply(d.batch)
	}
	now := d.clock.Now()
	ops := d.batch.ops
	// The hot marks of a failed commit stay in the batch and are retried,
	// but their callers hear of the failure now.
	done := d.batch.takeDone()
	if err == nil {
		d.batch.reset()
	}

	d.mu.Lock()
	d.spare = front
	d.stats.Coalesced += uint64(cancelled)
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	d.attempts++
	streak, downAt := d.streak, d.downAt
	if err == nil {
		d.stats.Written += uint64(ops)
		d.committed = upTo
		d.stats.Failing = false
		d.batchOps = 0
	} else {
		d.stats.Failures++
		d.stats.Failing = true
		d.stats.LastError = err.Error()
		d.lastErr = err
		d.failSeq, d.failAt = upTo, d.attempts
		d.batchOps = ops
	}
	pending := d.batchOps + d.front.ops
	total := d.stats.Dropped
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()

	if logDrop {
		d.logDrops(total)
	}
	for _, f := range done {
		f(err)
	}
	switch {
	case err == nil && streak > 0:
		d.streak = 0
		d.log.Info(fmt.Sprintf("sqlitepersist: writes resumed after %d failures, %v", streak, now.Sub(downAt).Round(time.Millisecond)),
			"path", d.path, "failures", streak, "down", now.Sub(downAt), "written", ops, "dropped_total", total)
	case err == nil:
	case streak == 0:
		d.streak, d.downAt, d.loggedAt = 1, now, now
		d.log.Warn("sqlitepersist: writing locations failed; keeping the writes and retrying",
			"path", d.path, "pending", pending, "error", err)
	default:
		d.streak++
		if now.Sub(d.loggedAt) >= logEvery {
			d.loggedAt = now
			d.log.Warn("sqlitepersist: writing locations still failing",
				"path", d.path, "failures", d.streak, "pending", pending, "down", now.Sub(downAt).Round(time.Second), "dropped_total", total, "error", err)
		}
	}
	return err
}

// apply commits the changes of b in one transaction.
func (d *DB) apply(b *pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.BusyTimeout+10*time.Second)
	defer cancel()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	add, dec, del, hot := tx.StmtContext(ctx, d.add), tx.StmtContext(ctx, d.dec), tx.StmtContext(ctx, d.del), tx.StmtContext(ctx, d.hot)
	d.order = b.order(d.order)
	defer clear(d.order)
	for _, c := range d.order {
		w := c.row
		if c.r > 0 {
			// The row goes if it has at most r copies; otherwise r fewer.
			r, err := del.ExecContext(ctx, c.r, w.region, string(w.key), w.world, w.x, w.y, w.z)
			if err != nil {
				return fmt.Errorf("remove: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return fmt.Errorf("remove: %w", err)
			} else if n == 0 {
				if _, err := dec.ExecContext(ctx, c.r, w.region, string(w.key), w.world, w.x, w.y, w.z); err != nil {
					return fmt.Errorf("remove: %w", err)
				}
			}
		}
		if c.a > 0 {
			if _, err := add.ExecContext(ctx, c.a, w.region, string(w.key), w.world, w.x, w.y, w.z, c.idx); err != nil {
				return fmt.Errorf("add: %w", err)
			}
		}
		if c.hot {
			if _, err := hot.ExecContext(ctx, w.region, string(w.key), w.world, w.x, w.z); err != nil {
				return fmt.Errorf("mark hot: %w", err)
			}
		}
	}
	if err := d.applyJournal(ctx, tx, b); err != nil {
		return err
	}
	return tx.Commit()
}

// applyJournal writes the journal work of b in tx: marks, spots, then
// trims (a trim may cover marks of the same batch).
func (d *DB) applyJournal(ctx context.Context, tx *sql.Tx, b *pending) error {
	if len(b.marks) > 0 {
		st := tx.StmtContext(ctx, d.mark)
		for _, m := range b.marks {
			if _, err := st.ExecContext(ctx, int64(m.m.Seq), m.region, m.m.Index, int(m.m.Cause), m.m.Source, m.m.At.UnixNano()); err != nil {
				return fmt.Errorf("journal mark: %w", err)
			}
		}
	}
	if len(b.spots) > 0 {
		st := tx.StmtContext(ctx, d.spot)
		for k, at := range b.spots {
			if _, err := st.ExecContext(ctx, k.region, k.x, k.z, at); err != nil {
				return fmt.Errorf("journal spot: %w", err)
			}
		}
	}
	if len(b.trims) > 0 {
		st := tx.StmtContext(ctx, d.trim)
		for region, seq := range b.trims {
			if _, err := st.ExecContext(ctx, region, int64(seq)); err != nil {
				return fmt.Errorf("trim journal: %w", err)
			}
		}
	}
	return nil
}

// Flush waits until every write queued before the call is committed, or
// ctx ends, and tries a commit at once rather than after BatchDelay or the
// back-off. If that commit fails, Flush returns its error without waiting
// for the next retry: the writes are kept and retried, and a later Flush
// returns nil once they are committed. Errors recovered from are not
// reported. Flush returns ErrClosed once the DB is closed.
func (d *DB) Flush(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	target, start := d.seq, d.attempts
	for d.committed < target {
		if d.failAt > start && d.failSeq >= target {
			err := fmt.Errorf("sqlitepersist: %d writes not committed, kept for a retry: %w", d.batchOps+d.front.ops, d.lastErr)
			d.mu.Unlock()
			return err
		}
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
	d.mu.Unlock()
	return nil
}

// Stats returns the DB's counters.
func (d *DB) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stats
	st.Pending = d.batchOps + d.front.ops
	return st
}

// Close commits what is pending, stops the writer and closes the
// database. Writes queued afterwards are dropped. If the commit fails,
// Close does not retry: it returns an error that says how many writes were
// lost. A failure that writes recovered from before is not reported.
// Close is idempotent.
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
	werr := d.closeErr
	d.mu.Unlock()
	for _, s := range []*sql.Stmt{d.add, d.dec, d.del, d.hot, d.mark, d.spot, d.trim} {
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

func (r *Region) row(loc pipeline.Location) row {
	return row{region: r.region, key: r.key, world: loc.World, x: loc.X, y: loc.Y, z: loc.Z}
}

// Add implements pipeline.Persister; it never waits for the database.
func (r *Region) Add(loc pipeline.Location) {
	r.d.enqueue(change{row: r.row(loc), idx: loc.Index, a: 1})
}

// Remove implements pipeline.Persister; it never waits for the database.
func (r *Region) Remove(loc pipeline.Location) {
	r.d.enqueue(change{row: r.row(loc), r: 1})
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
