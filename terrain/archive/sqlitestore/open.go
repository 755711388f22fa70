package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rtpengine/rtp/internal/lograte"
	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/internal/txgate"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// schemaVersion is the PRAGMA user_version this package writes and reads.
const schemaVersion = 1

// schema creates version 1. The records table is a rowid table (large
// blobs belong in overflow pages of a rowid table, not in a WITHOUT ROWID
// b-tree) with the small columns first, so the LRU index and COUNT/SUM never
// touch blob pages. records_lru covers the eviction query.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS records (
		id      INTEGER PRIMARY KEY,
		digest  BLOB NOT NULL UNIQUE CHECK (length(digest) = 32),
		size    INTEGER NOT NULL CHECK (size >= 0),
		recency INTEGER NOT NULL,
		key     BLOB NOT NULL,
		payload BLOB NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS records_lru ON records (recency, digest, size)`,
	`CREATE TABLE IF NOT EXISTS meta (
		id      INTEGER PRIMARY KEY CHECK (id = 1),
		entries INTEGER NOT NULL,
		bytes   INTEGER NOT NULL,
		seq     INTEGER NOT NULL
	)`,
	`INSERT OR IGNORE INTO meta (id, entries, bytes, seq) VALUES (1, 0, 0, 0)`,
	fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion),
}

// Statements of the read pool.
const (
	sqlGet   = `SELECT key, payload FROM records WHERE digest = ?`
	sqlStats = `SELECT entries, bytes FROM meta WHERE id = 1`
	sqlScan  = `SELECT digest, key, payload FROM records WHERE digest > ? ORDER BY digest LIMIT ?`
)

// Open opens the archive database at path, creating it and its parent
// directories if missing, and returns a Store ready for use. It is bounded
// by opts.OpenTimeout (and ctx).
//
// Open sets WAL mode with synchronous=NORMAL, runs PRAGMA quick_check,
// creates or checks the schema (user_version), compares the counters with
// COUNT/SUM over the rows and repairs them (logging the repair), and trims
// the store to opts.Limits. A file that is not a database, is corrupt, or
// has a newer schema makes Open fail with one error of the form
// "sqlitestore: open PATH: REASON"; nothing is deleted or rewritten then.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqlitestore: open: empty path")
	}
	opts = opts.withDefaults()
	octx, cancel := context.WithTimeoutCause(ctx, opts.OpenTimeout, errOpenTimeout)
	defer cancel()

	s := &Store{
		path:     path,
		opts:     opts,
		log:      opts.Logger,
		warnings: lograte.Limiter{Interval: time.Minute},
		floorLog: lograte.Limiter{Interval: time.Minute},
		gate:     txgate.New(opts.MaxConcurrentTx, opts.TxTimeout),
		ops:      make(chan *writeOp),
		touches:  newTouches(touchBatch),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.calls = dbstore.Calls{Gate: s.gate, Pkg: "sqlitestore", Fail: s.fail}
	if err := s.open(octx); err != nil {
		s.closeDB()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, cerr)
		}
		if errors.Is(context.Cause(octx), errOpenTimeout) || isBusy(err) {
			return nil, fmt.Errorf("sqlitestore: open %s: %w after %v (%v)", path, errOpenTimeout, opts.OpenTimeout, err)
		}
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	go s.run()
	return s, nil
}

var errOpenTimeout = errors.New("open timed out")

func (s *Store) open(ctx context.Context) error {
	if fi, err := os.Stat(s.path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	// Say what is wrong with the folder (read-only, missing and not
	// creatable) before SQLite gives a vaguer answer.
	if s.opts.ReadOnly {
		return s.openReadOnly(ctx)
	}
	if err := sqlitedb.Check(s.path); err != nil {
		return err
	}

	// The writing connection.
	wdb := sql.OpenDB(writerConnector(s.path, s.opts.TxTimeout))
	s.wdb = wdb
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return err
	}
	// SQLite's busy wait does not see the context: bound it by the time
	// Open has left, then by TxTimeout once open.
	if err := setBusyTimeout(ctx, conn, time.Until(deadline(ctx))); err != nil {
		conn.Close()
		return err
	}
	// Recognise a file that is not ours before changing anything in it.
	if err := precheck(ctx, conn); err != nil {
		conn.Close()
		return err
	}
	if err := s.quickCheck(ctx, conn); err != nil {
		conn.Close()
		return err
	}
	// Evicted pages can go back to the file system (space.go). The mode
	// takes effect only in a database not yet written (switching to WAL
	// writes it), and changes nothing in an existing one.
	if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		conn.Close()
		return fmt.Errorf("auto_vacuum: %w", err)
	}
	if err := setupWriter(ctx, conn); err != nil {
		conn.Close()
		return err
	}
	s.w = &writer{path: s.path, limits: s.opts.Limits, log: s.log, conn: conn}
	if err := s.initSchema(ctx); err != nil {
		return err
	}
	if err := setBusyTimeout(ctx, conn, s.opts.TxTimeout); err != nil {
		return err
	}

	return s.openReaders(ctx, false)
}

// openReadOnly opens a store of Options.ReadOnly: the read pool alone,
// immutable, on an archive that must exist and hold the current schema.
func (s *Store) openReadOnly(ctx context.Context) error {
	fi, err := os.Stat(s.path)
	switch {
	case err != nil:
		return fmt.Errorf("read-only: %w", err)
	case fi.IsDir():
		return errors.New("is a directory")
	case fi.Size() == 0:
		return errors.New("read-only: the archive is empty")
	}
	if err := s.openReaders(ctx, true); err != nil {
		return err
	}
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := precheck(ctx, conn); err != nil {
		return err
	}
	var version int
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version != schemaVersion {
		return errors.New("read-only: the archive holds no schema yet")
	}
	return nil
}

// openReaders opens the read-only pool and prepares its statements.
func (s *Store) openReaders(ctx context.Context, immutable bool) error {
	var setup []string
	if s.opts.MmapSize > 0 {
		setup = append(setup, fmt.Sprintf(`PRAGMA mmap_size = %d`, s.opts.MmapSize))
	}
	rdb := sql.OpenDB(readerConnector(s.path, s.opts.TxTimeout, immutable, setup...))
	s.rdb = rdb
	rdb.SetMaxOpenConns(s.opts.MaxConcurrentTx)
	rdb.SetMaxIdleConns(s.opts.MaxConcurrentTx)
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.getStmt, sqlGet},
		{&s.statsStmt, sqlStats},
		{&s.scanStmt, sqlScan},
	} {
		st, err := rdb.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

// deadline returns ctx's deadline (Open always sets one).
func deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(DefaultOpenTimeout)
	}
	return d
}

func setBusyTimeout(ctx context.Context, conn *sql.Conn, d time.Duration) error {
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyMillis(d))); err != nil {
		return fmt.Errorf("busy_timeout: %w", err)
	}
	return nil
}

// precheck reads the header and schema version, the first reads of the
// file (so a file that is not a database fails here), and rejects a
// database this package did not write (one holding tables other than the
// archive's, named in the error) or a newer schema before anything is
// written to it. initSchema checks again inside its transaction.
func precheck(ctx context.Context, conn *sql.Conn) error {
	if err := sqlitedb.CheckTables(ctx, conn, "records", "meta"); err != nil {
		return err
	}
	var version, tables int
	if err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name IN ('records', 'meta')`).Scan(&tables); err != nil {
		return err
	}
	return checkVersion(version, tables)
}

// checkVersion accepts a new database (version 0, no archive tables) or the
// current schema.
func checkVersion(version, tables int) error {
	switch {
	case version == 0 && tables != 0:
		return errors.New("schema version 0 with archive tables present: not an archive this package wrote")
	case version > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this build's %d", version, schemaVersion)
	case version != 0 && version < schemaVersion:
		return fmt.Errorf("schema version %d is not supported", version)
	}
	return nil
}

// setupWriter switches the writing connection to WAL mode.
func setupWriter(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	for _, p := range []string{
		// WAL with synchronous=NORMAL: a commit is durable against a
		// process crash or SIGKILL (the WAL frames are in the OS by then);
		// only a power loss or kernel crash may lose the last commits, never
		// consistency. See the package documentation.
		`PRAGMA synchronous = NORMAL`,
		// Keep the WAL from staying large after a burst of writes.
		`PRAGMA journal_size_limit = 67108864`,
	} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

var errCheckBudget = errors.New("quick_check budget spent")

// quickCheck runs PRAGMA quick_check within QuickCheckBudget and reports
// the first problems found. A check cut short by its budget is logged and
// is not an error.
func (s *Store) quickCheck(ctx context.Context, conn *sql.Conn) error {
	qctx, cancel := context.WithTimeoutCause(ctx, s.opts.QuickCheckBudget, errCheckBudget)
	defer cancel()
	start := time.Now()
	problems, err := quickCheckRows(qctx, conn)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(qctx), errCheckBudget) {
		s.log.Warn("sqlitestore: quick_check did not finish within its budget; opening unchecked",
			"path", s.path, "budget", s.opts.QuickCheckBudget, "elapsed", time.Since(start))
		return nil
	}
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("database disk image is malformed: quick_check: %s", strings.Join(problems, "; "))
	}
	return nil
}

func quickCheckRows(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	return problems, rows.Err()
}

// initSchema creates the schema when missing or checks its version, then
// checks the counters and trims to the limits, all in one write
// transaction (so concurrent openers, in any process, do not race).
func (s *Store) initSchema(ctx context.Context) error {
	w := s.w
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			w.rollback()
		}
	}()
	var version, tables int
	if err := w.conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if err := w.conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name IN ('records', 'meta')`).Scan(&tables); err != nil {
		return err
	}
	if err := checkVersion(version, tables); err != nil {
		return err
	}
	if version == 0 {
		for _, q := range schema {
			if _, err := w.conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
	}
	if err := w.prepare(ctx); err != nil {
		return err
	}
	t := &wtx{ctx: ctx, w: w}
	if err := w.loadMeta.QueryRowContext(ctx).Scan(&t.c.Entries, &t.c.Bytes, &t.seq); err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	if err := t.recount("counter check on open"); err != nil {
		return err
	}
	if !s.opts.NoTrim {
		if err := t.evict(nil); err != nil {
			return err
		}
	}
	if _, err := w.storeMeta.ExecContext(ctx, t.c.Entries, t.c.Bytes, t.seq); err != nil {
		return fmt.Errorf("write counters: %w", err)
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	ok = true
	return nil
}

// busyMillis is the SQLite busy timeout for a transaction bound.
func busyMillis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }
