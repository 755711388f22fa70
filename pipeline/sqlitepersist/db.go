package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"

	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/internal/rowqueue"
)

// Defaults of Options.
const (
	DefaultQueueLimit  = 1 << 16
	DefaultBusyTimeout = 5 * time.Second
	DefaultBatchDelay  = 100 * time.Millisecond
	DefaultHotDelay    = 5 * time.Millisecond
	DefaultRetryMin    = 100 * time.Millisecond
	DefaultRetryMax    = 10 * time.Second
)

// schemaVersion is the PRAGMA user_version this package writes: 2 added
// the hot column and the meta, memory_journal and spots tables; 3 keyed
// the locations by an integer space and their column, in a table without
// rowids, and made spots a log (see schema); 4 added the leases table
// (see Leases).
const schemaVersion = 4

// schema is the current schema. A row change is a lookup of one key in
// one b-tree: the locations table is its own index, keyed by integers
// (a space stands for a region, key and world), so a commit writes one
// page per row changed and compares no strings on the way. Spots are a
// log in claim order, of which a region's latest claim of a column wins
// on reading: each claim appends to the end of the table and of its
// index instead of rewriting a page anywhere in the region.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS spaces (
		id     INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		key    TEXT NOT NULL,
		world  TEXT NOT NULL,
		UNIQUE (region, key, world)
	)`,
	// seq is the order of insertion, in which Load returns the rows.
	`CREATE TABLE IF NOT EXISTS locations ` + locationsColumns,
	`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS memory_journal ` + journalColumns,
	`CREATE INDEX IF NOT EXISTS memory_journal_region ON memory_journal (region, seq)`,
	`CREATE TABLE IF NOT EXISTS spots ` + spotsColumns,
	`CREATE INDEX IF NOT EXISTS spots_region ON spots (region, at)`,
	`CREATE TABLE IF NOT EXISTS leases ` + leasesColumns,
	`CREATE INDEX IF NOT EXISTS leases_forget ON leases (forget)`,
}

// Column lists shared by schema and the upgrades: the journal's, which
// version 2 introduced, and those of the version 3 tables that version 2
// had in another form.
const (
	journalColumns = `(
		seq    INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		idx    INTEGER NOT NULL,
		cause  INTEGER NOT NULL,
		source TEXT NOT NULL,
		at     INTEGER NOT NULL
	)`

	locationsColumns = `(
		space INTEGER NOT NULL,
		x     INTEGER NOT NULL,
		z     INTEGER NOT NULL,
		y     INTEGER NOT NULL,
		seq   INTEGER NOT NULL,
		idx   INTEGER NOT NULL,
		n     INTEGER NOT NULL CHECK (n > 0),
		hot   INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (space, x, z, y)
	) WITHOUT ROWID`
	spotsColumns = `(
		seq    INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		x      INTEGER NOT NULL,
		z      INTEGER NOT NULL,
		at     INTEGER NOT NULL
	)`
)

// upgrades[v] turns a version v database into a version v+1 one.
var upgrades = map[int][]string{
	// A version 1 database knew no hot rows: its last run counts as clean.
	1: {
		`ALTER TABLE locations ADD COLUMN hot INTEGER NOT NULL DEFAULT 0`,
		`CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE memory_journal ` + journalColumns,
		`CREATE INDEX memory_journal_region ON memory_journal (region, seq)`,
		`CREATE TABLE spots (
			region TEXT NOT NULL,
			x      INTEGER NOT NULL,
			z      INTEGER NOT NULL,
			at     INTEGER NOT NULL,
			PRIMARY KEY (region, x, z)
		) WITHOUT ROWID`,
	},
	// Version 2 keyed locations by text with a rowid table and a unique
	// index, and kept one row per spot, rewritten in place.
	2: {
		schema[0],
		`INSERT INTO spaces (region, key, world) SELECT DISTINCT region, key, world FROM locations ORDER BY region, key, world`,
		`CREATE TABLE locations_v3 ` + locationsColumns,
		`INSERT INTO locations_v3 (space, x, z, y, seq, idx, n, hot)
			SELECT s.id, l.x, l.z, l.y, l.id, l.idx, l.n, l.hot FROM locations l JOIN spaces s USING (region, key, world)`,
		`DROP TABLE locations`,
		`ALTER TABLE locations_v3 RENAME TO locations`,
		`CREATE TABLE spots_v3 ` + spotsColumns,
		`INSERT INTO spots_v3 (region, x, z, at) SELECT region, x, z, at FROM spots ORDER BY at, region, x, z`,
		`DROP TABLE spots`,
		`ALTER TABLE spots_v3 RENAME TO spots`,
		`CREATE INDEX spots_region ON spots (region, at)`,
	},
	// Version 3 kept no network leases.
	3: {
		`CREATE TABLE leases ` + leasesColumns,
		`CREATE INDEX leases_forget ON leases (forget)`,
	},
}

// The run states of the meta row "state".
const (
	stateRunning = "running" // set at Open: a process has the database
	stateClean   = "clean"   // set by Close after its final commit
)

// The statements of a change (see change): ?1 is the number of copies
// added or removed, ?2 the row's space.
const (
	sqlAdd = `INSERT INTO locations (space, x, z, y, seq, idx, n) VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?1)
		ON CONFLICT (space, x, z, y) DO UPDATE SET n = n + excluded.n, idx = excluded.idx`
	sqlDec      = `UPDATE locations SET n = n - ?1 WHERE space = ?2 AND x = ?3 AND z = ?4 AND y = ?5 AND n > ?1`
	sqlDel      = `DELETE FROM locations WHERE space = ?2 AND x = ?3 AND z = ?4 AND y = ?5 AND n <= ?1`
	sqlDropKeys = `DELETE FROM locations WHERE space IN (SELECT id FROM spaces WHERE region = ? AND key <> ?)`
	sqlLoad     = `SELECT s.world, l.x, l.y, l.z, l.idx, l.n FROM locations l JOIN spaces s ON s.id = l.space
		WHERE s.region = ? AND s.key = ? ORDER BY l.seq`
	// sqlHot marks the row of a column hot whatever its y (the landing y
	// found at promotion may differ from the screen's).
	sqlHot      = `UPDATE locations SET hot = 1 WHERE space = ?1 AND x = ?2 AND z = ?3`
	sqlSpace    = `INSERT INTO spaces (region, key, world) VALUES (?1, ?2, ?3) ON CONFLICT (region, key, world) DO UPDATE SET world = excluded.world RETURNING id`
	sqlMark     = `INSERT INTO memory_journal (seq, region, idx, cause, source, at) VALUES (?, ?, ?, ?, ?, ?)`
	sqlSpot     = `INSERT INTO spots (region, x, z, at) VALUES (?1, ?2, ?3, ?4)`
	sqlTrim     = `DELETE FROM memory_journal WHERE region = ? AND seq <= ?`
	sqlMarks    = `SELECT seq, idx, cause, source, at FROM memory_journal WHERE region = ? ORDER BY seq`
	sqlOldSpots = `DELETE FROM spots WHERE region = ? AND at < ?`
	sqlSpots    = `SELECT x, z, max(at) AS last FROM spots WHERE region = ? GROUP BY x, z ORDER BY last, x, z`
	sqlState    = `INSERT INTO meta (k, v) VALUES ('state', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
)

// connSetup tunes the connection for the writer's load. The page cache
// holds the whole table of a large region (a few MiB; SQLite's default
// is 2 MiB), so a statement reads no page from the file. The WAL is
// checkpointed into the database every walPages pages rather than every
// 1,000: a checkpoint copies each page changed since the last one once,
// however many commits changed it, so a rarer one copies far fewer pages
// per commit (a hand-out's rows lie on a few hundred hot pages, rewritten
// commit after commit), and it is the one stretch of the writer's work
// that cannot yield to requests (see pacer.Gate). The WAL file grows
// to about walPages*4 KiB. Under the load test (two cores, 1,000
// hand-outs a second) serve's p99 over the null server's fell from a
// median of 1.33 to 0.89 over six alternated rounds, within a noisy
// machine's spread; BenchmarkServeMix from about 55 to 50 cpu-us.
var connSetup = []string{
	`PRAGMA cache_size = -16384`,
	fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walPages),
}

// walPages is the WAL size, in pages, that starts a checkpoint.
const walPages = 8192

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
	// HotDelay is how long an urgent hot mark waits for others to join
	// its commit, which the promotion waits for: promotions end a pulse's
	// worth at a time, and a commit costs much the same whatever number
	// of marks it carries. Default DefaultHotDelay (5 ms); negative: each
	// commits at once.
	HotDelay time.Duration
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
	// Gate, when set, admits and paces the writer's transactions with
	// the refill work of the pipelines holding the same gate: a
	// transaction runs in a turn of the gate and yields between its
	// statements (see pacer.Gate). Default nil: no bound, no pacing.
	Gate *pacer.Gate

	clock rowqueue.Clock // tests only; default the real clock
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
// usable. A DB is safe for concurrent use. It owns one writer goroutine
// (a rowqueue.Writer, which commits with apply), which Close stops.
type DB struct {
	db   *sql.DB
	path string
	opts Options
	// abandon makes Close skip recording a clean shutdown (tests: the
	// next Open sees the run as killed).
	abandon bool
	log     *slog.Logger
	w       *rowqueue.Writer

	add, dec, del, hot, space, mark, spot, trim *sql.Stmt

	// fresh is set by Open, read-only afterwards: the tables were created
	// now (Fresh).
	fresh bool
	// Set by Open, read-only afterwards: what the previous run left.
	unclean   bool
	discarded map[string][]pipeline.Location // by region: hot rows deleted at Open

	// On the writer goroutine (or Open, before it starts): the ids of
	// the spaces known to be committed, those a transaction created (in
	// spaces once it commits), and the seq of the last row inserted.
	spaces    map[spaceKey]int64
	newSpaces map[spaceKey]int64
	seq       int64
	order     []*rowqueue.Change // apply's

	markSeq atomic.Uint64 // Seq of the last journal mark queued
}

// spaceKey is what a row of the spaces table stands for.
type spaceKey struct {
	region string
	key    pipeline.Key
	world  string
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
	if opts.HotDelay == 0 {
		opts.HotDelay = DefaultHotDelay
	}
	opts.RetryMin, opts.RetryMax = rowqueue.RetryBounds(opts.RetryMin, opts.RetryMax, DefaultRetryMin, DefaultRetryMax)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &DB{path: path, opts: opts, log: opts.Logger, spaces: map[spaceKey]int64{}, newSpaces: map[spaceKey]int64{}}
	d.w = rowqueue.New(rowqueue.Config{
		Name:       "sqlitepersist",
		QueueLimit: opts.QueueLimit,
		BatchDelay: opts.BatchDelay,
		HotDelay:   opts.HotDelay,
		RetryMin:   opts.RetryMin,
		RetryMax:   opts.RetryMax,
		Logger:     opts.Logger.With("path", path),
		Clock:      opts.clock,
		Closed:     ErrClosed,
		Apply:      d.apply,
	})
	if err := d.open(ctx); err != nil {
		if d.db != nil {
			d.db.Close()
		}
		return nil, fmt.Errorf("sqlitepersist: open %s: %w", path, err)
	}
	d.w.Start()
	return d, nil
}

// Fresh reports whether Open found no database at its path (no file, an
// empty file, or a database without tables) and created the tables: every
// location, rejection journaled and spot handed out of an earlier run,
// if there was one, is gone. A caller that finds other traces of an
// earlier run beside it should say so.
func (d *DB) Fresh() bool { return d.fresh }

// tables are the tables this package creates, in every schema version; a
// database holding any other is another program's, and Open refuses it.
var tables = []string{"spaces", "locations", "meta", "memory_journal", "spots", "leases"}

func (d *DB) open(ctx context.Context) error {
	// Recognise another program's database before anything writes to it.
	if err := sqlitedb.CheckFile(ctx, d.path, d.opts.BusyTimeout, tables...); err != nil {
		return err
	}
	db, err := sqlitedb.Open(ctx, d.path, d.opts.BusyTimeout, connSetup...)
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
	}{{&d.add, sqlAdd}, {&d.dec, sqlDec}, {&d.del, sqlDel}, {&d.hot, sqlHot}, {&d.space, sqlSpace}, {&d.mark, sqlMark}, {&d.spot, sqlSpot}, {&d.trim, sqlTrim}} {
		st, err := db.PrepareContext(ctx, s.q)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*s.dst = st
	}
	return d.recover(ctx)
}

// initSchema creates the tables in a new database, upgrades one of an
// earlier version (in one transaction: an upgrade that fails leaves the
// database as it was), or checks the version of an existing one.
func (d *DB) initSchema(ctx context.Context) error {
	var have int
	if err := d.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return err
	}
	d.fresh = have == 0 // InitSchema refuses a version 0 database holding tables
	if have > 0 && have < schemaVersion {
		if err := d.upgrade(ctx, have); err != nil {
			return fmt.Errorf("upgrade schema %d to %d: %w", have, schemaVersion, err)
		}
	}
	return sqlitedb.InitSchema(ctx, d.db, "locations", schemaVersion, schema)
}

// upgrade runs the upgrades from version have to schemaVersion.
func (d *DB) upgrade(ctx context.Context, have int) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var tables int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'locations'`).Scan(&tables); err != nil {
		return err
	}
	if tables == 0 {
		return fmt.Errorf("schema version %d without a locations table: not a locations database", have)
	}
	for v := have; v < schemaVersion; v++ {
		for _, q := range upgrades[v] {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
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
		rows, err := tx.QueryContext(ctx, `SELECT s.region, s.world, l.x, l.y, l.z, l.idx, l.n
			FROM locations l JOIN spaces s ON s.id = l.space WHERE l.hot <> 0 ORDER BY l.seq`)
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
	var last, seq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM memory_journal`).Scan(&last); err != nil {
		return fmt.Errorf("read journal position: %w", err)
	}
	d.markSeq.Store(uint64(last.Int64))
	if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM locations`).Scan(&seq); err != nil {
		return fmt.Errorf("read insertion position: %w", err)
	}
	d.seq = seq.Int64
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

// apply commits the changes of b in one transaction (rowqueue.Config.Apply).
// SQLite refuses no hot mark: a mark on a row that is gone does nothing.
func (d *DB) apply(b *rowqueue.Pending) (map[rowqueue.Row]bool, error) {
	seq := d.seq
	err := d.applyTx(b)
	if err != nil {
		// Nothing of the transaction stays: its spaces and seqs are free.
		d.seq = seq
		clear(d.newSpaces)
		return nil, sqlitedb.Explain(d.path, err)
	}
	for k, id := range d.newSpaces {
		d.spaces[k] = id
	}
	clear(d.newSpaces)
	return nil, nil
}

// spaceOf returns the id of w's space, creating its row in tx if there is
// none.
func (d *DB) spaceOf(ctx context.Context, st *sql.Stmt, w rowqueue.Row) (int64, error) {
	k := spaceKey{w.Region, w.Key, w.World}
	if id, ok := d.spaces[k]; ok {
		return id, nil
	}
	if id, ok := d.newSpaces[k]; ok {
		return id, nil
	}
	var id int64
	if err := st.QueryRowContext(ctx, w.Region, string(w.Key), w.World).Scan(&id); err != nil {
		return 0, fmt.Errorf("space: %w", err)
	}
	d.newSpaces[k] = id
	return id, nil
}

// applyTx is apply's transaction: the row changes in order, then the
// journal work.
func (d *DB) applyTx(b *rowqueue.Pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.BusyTimeout+10*time.Second)
	defer cancel()
	turn, err := d.opts.Gate.Enter(ctx)
	if err != nil {
		return err
	}
	defer turn.Leave()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	add, dec, del, hot := tx.StmtContext(ctx, d.add), tx.StmtContext(ctx, d.dec), tx.StmtContext(ctx, d.del), tx.StmtContext(ctx, d.hot)
	space := tx.StmtContext(ctx, d.space)
	d.order = b.Order(d.order)
	defer clear(d.order)
	for _, c := range d.order {
		if err := turn.Yield(ctx); err != nil {
			return err
		}
		w := c.Row
		sp, err := d.spaceOf(ctx, space, w)
		if err != nil {
			return err
		}
		if c.Removes > 0 {
			// The row goes if it has at most r copies; otherwise r fewer.
			r, err := del.ExecContext(ctx, c.Removes, sp, w.X, w.Z, w.Y)
			if err != nil {
				return fmt.Errorf("remove: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return fmt.Errorf("remove: %w", err)
			} else if n == 0 {
				if _, err := dec.ExecContext(ctx, c.Removes, sp, w.X, w.Z, w.Y); err != nil {
					return fmt.Errorf("remove: %w", err)
				}
			}
		}
		if c.Adds > 0 {
			d.seq++
			if _, err := add.ExecContext(ctx, c.Adds, sp, w.X, w.Z, w.Y, d.seq, c.Idx); err != nil {
				return fmt.Errorf("add: %w", err)
			}
		}
		if c.Hot {
			if _, err := hot.ExecContext(ctx, sp, w.X, w.Z); err != nil {
				return fmt.Errorf("mark hot: %w", err)
			}
		}
	}
	if err := d.applyJournal(ctx, tx, turn, b); err != nil {
		return err
	}
	return tx.Commit()
}

// applyJournal writes the journal work of b in tx: marks, spots, then
// trims (a trim may cover marks or spots of the same batch).
func (d *DB) applyJournal(ctx context.Context, tx *sql.Tx, turn *pacer.Turn, b *rowqueue.Pending) error {
	if len(b.Marks) > 0 {
		st := tx.StmtContext(ctx, d.mark)
		for _, m := range b.Marks {
			if err := turn.Yield(ctx); err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, int64(m.Mark.Seq), m.Region, m.Mark.Index, int(m.Mark.Cause), m.Mark.Source, m.Mark.At.UnixNano()); err != nil {
				return fmt.Errorf("journal mark: %w", err)
			}
		}
	}
	if len(b.Spots) > 0 {
		st := tx.StmtContext(ctx, d.spot)
		for k, at := range b.Spots {
			if err := turn.Yield(ctx); err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, k.Region, k.X, k.Z, at); err != nil {
				return fmt.Errorf("journal spot: %w", err)
			}
		}
	}
	if len(b.Trims) > 0 {
		st := tx.StmtContext(ctx, d.trim)
		for region, seq := range b.Trims {
			if _, err := st.ExecContext(ctx, region, int64(seq)); err != nil {
				return fmt.Errorf("trim journal: %w", err)
			}
		}
	}
	for region, before := range b.SpotTrims {
		if err := turn.Yield(ctx); err != nil {
			return err
		}
		// The oldest spots of the region: the left edge of its index.
		if _, err := tx.ExecContext(ctx, sqlOldSpots, region, before); err != nil {
			return fmt.Errorf("trim spots: %w", err)
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
func (d *DB) Flush(ctx context.Context) error { return d.w.Flush(ctx) }

// Stats returns the DB's counters: the writer's, field for field (a
// field added to one and not the other stops the conversion compiling).
func (d *DB) Stats() Stats { return Stats(d.w.Stats()) }

// Close commits what is pending, stops the writer and closes the
// database. Writes queued afterwards are dropped. If the commit fails,
// Close does not retry: it returns an error that says how many writes were
// lost. A failure that writes recovered from before is not reported.
// Close is idempotent.
func (d *DB) Close() error {
	first, werr := d.w.Close(nil)
	if !first {
		return nil
	}
	// Every write is committed: no row is hot any longer (the pipelines
	// unloaded their entries), and the run ends cleanly.
	if werr == nil && !d.abandon {
		if err := d.markClean(); err != nil {
			werr = fmt.Errorf("sqlitepersist: close: recording a clean shutdown: %w", err)
		}
	}
	for _, s := range []*sql.Stmt{d.add, d.dec, d.del, d.hot, d.space, d.mark, d.spot, d.trim} {
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
	r.d.w.Add(r.region, r.key, loc)
}

// Remove implements pipeline.Persister; it never waits for the database.
func (r *Region) Remove(loc pipeline.Location) {
	r.d.w.Remove(r.region, r.key, loc)
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
