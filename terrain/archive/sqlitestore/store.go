package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/internal/lograte"
	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/internal/txgate"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// Defaults of Options.
const (
	DefaultOpenTimeout     = time.Second
	DefaultTxTimeout       = 5 * time.Second
	DefaultMaxConcurrentTx = 8
	DefaultTouchDelay      = 50 * time.Millisecond
	DefaultMmapSize        = maxMmap
	// DefaultMinFreeBytes and DefaultMinFreePercent make the default free
	// space floor: the smaller of 256 MiB and 5% of the file system.
	DefaultMinFreeBytes   = 256 << 20
	DefaultMinFreePercent = 5.0
)

// touchBatch is the number of pending touches at which the writer applies
// them at once instead of waiting for TouchDelay.
const touchBatch = 256

// evictBatch is how many eviction candidates one query fetches.
const evictBatch = 32

// Options configure a Store. The zero value selects every default.
type Options struct {
	// Limits bound the store. A zero field takes the archive default:
	// archive.DefaultMaxEntries (65,536) entries and archive.DefaultMaxBytes
	// (4 GiB) of Record.Size. Open trims a store that holds more, unless
	// NoTrim is set.
	Limits archive.Limits

	// NoTrim stops Open from evicting records of a store that holds more
	// than Limits: inspection tools open an archive without knowing the
	// limits its server uses. Later Puts still enforce the limits.
	// Default false.
	NoTrim bool

	// OpenTimeout bounds Open as a whole: creating the file, the integrity
	// check, the schema and the counter check. Default 1 s.
	OpenTimeout time.Duration

	// QuickCheckBudget is how long Open may spend on PRAGMA quick_check.
	// A check that finds a problem fails Open; one that cannot finish in
	// time (a large archive: about 0.4 s per 512 MiB with a warm page cache)
	// is logged and Open goes on, so a big archive stays usable. Default
	// half of OpenTimeout; it never extends OpenTimeout.
	QuickCheckBudget time.Duration

	// TxTimeout bounds each storage transaction from the moment it is
	// admitted (time waiting for admission does not count). Default 5 s.
	TxTimeout time.Duration

	// MaxConcurrentTx is how many storage transactions (reads and writes
	// together) may run at once. Default 8.
	MaxConcurrentTx int

	// MmapSize is how many bytes of the file each read connection reads
	// through a memory map instead of read system calls (SQLite reads a
	// blob's overflow pages one pread each, 16 for 64 KB; the map makes
	// them memory copies: -42% per 64 KB Get measured, see the package
	// documentation). Default 1 GiB, the driver's ceiling; negative
	// disables the map. The writing connection never maps.
	MmapSize int64

	// TouchDelay is the longest a hit's recency update waits to be batched
	// with others when no write comes first. Default 50 ms.
	TouchDelay time.Duration

	// MinFreeBytes and MinFreePercent set the free space floor of the
	// file system holding the archive: the smaller of MinFreeBytes and
	// MinFreePercent of the file system's size. The archive is a cache
	// that yields to the files that matter (the locations database beside
	// it): while the file system has less free space than the floor, Put
	// stores nothing and instead evicts the least recently used records
	// and gives their pages back to the file system. Defaults 256 MiB
	// (DefaultMinFreeBytes) and 5% (DefaultMinFreePercent); a negative
	// value drops that bound, both negative drop the floor.
	MinFreeBytes   int64
	MinFreePercent float64

	// ReadOnly opens an existing archive for reading only, immutable: no
	// writing connection, no lock, no -wal or -shm file, so it opens on a
	// full disk. Put then stores nothing (counted by Yielded), Delete and
	// Clear return ErrReadOnly, hits update no recency. Nothing else may
	// write the file while it is open so. The file must exist and hold an
	// archive. Default false.
	ReadOnly bool

	// Logger receives counter repairs, failures of background recency
	// updates (at most one line a minute) and the free space floor's
	// changes. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	errs := dbstore.ValidateLimits("sqlitestore", o.Limits)
	if o.OpenTimeout < 0 {
		errs = append(errs, fmt.Errorf("sqlitestore: OpenTimeout %v is negative", o.OpenTimeout))
	}
	if o.QuickCheckBudget < 0 {
		errs = append(errs, fmt.Errorf("sqlitestore: QuickCheckBudget %v is negative", o.QuickCheckBudget))
	}
	if o.TxTimeout < 0 {
		errs = append(errs, fmt.Errorf("sqlitestore: TxTimeout %v is negative", o.TxTimeout))
	}
	if o.MaxConcurrentTx < 0 {
		errs = append(errs, fmt.Errorf("sqlitestore: MaxConcurrentTx %d is negative", o.MaxConcurrentTx))
	}
	if o.TouchDelay < 0 {
		errs = append(errs, fmt.Errorf("sqlitestore: TouchDelay %v is negative", o.TouchDelay))
	}
	if o.MinFreePercent > 100 || o.MinFreePercent != o.MinFreePercent {
		errs = append(errs, fmt.Errorf("sqlitestore: MinFreePercent %v is above 100", o.MinFreePercent))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with zero fields replaced by their defaults.
func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults()
	if o.OpenTimeout == 0 {
		o.OpenTimeout = DefaultOpenTimeout
	}
	if o.QuickCheckBudget == 0 {
		o.QuickCheckBudget = o.OpenTimeout / 2
	}
	if o.TxTimeout == 0 {
		o.TxTimeout = DefaultTxTimeout
	}
	if o.MaxConcurrentTx == 0 {
		o.MaxConcurrentTx = DefaultMaxConcurrentTx
	}
	if o.TouchDelay == 0 {
		o.TouchDelay = DefaultTouchDelay
	}
	if o.MmapSize == 0 {
		o.MmapSize = DefaultMmapSize
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.MinFreePercent == 0 {
		o.MinFreePercent = DefaultMinFreePercent
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrReadOnly is returned by Delete and Clear of a store opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("sqlitestore: opened read-only")

// errTxTimeout is the cause of a transaction context that ran out of
// TxTimeout. It is a storage failure, not a caller's context error, so the
// error a method returns for it does not wrap context.DeadlineExceeded.
var errTxTimeout = txgate.ErrTimeout

// Store is an archive.Store in one SQLite database file. Create one with
// Open; the zero value is not usable. A Store is safe for concurrent use;
// several Stores (in one process or several) may share one file.
//
// All writes go through one goroutine that owns the only writing
// connection; Get, Scan and Stats use a pool of read-only connections.
type Store struct {
	path string
	opts Options // with defaults
	// warnings holds repeated storage warnings to one a minute.
	warnings lograte.Limiter
	// floorLog holds the lines of the free space floor (low, then back)
	// to one a minute together.
	floorLog lograte.Limiter
	log      *slog.Logger

	wdb *sql.DB // one connection, wconn, used only by the writer goroutine
	w   *writer
	rdb *sql.DB // read-only pool, at most MaxConcurrentTx connections

	getStmt   *sql.Stmt
	statsStmt *sql.Stmt
	scanStmt  *sql.Stmt

	gate    *txgate.Gate  // admission, transaction slots and bounds, Close
	calls   dbstore.Calls // admits the calls through gate, runs their transactions
	ops     chan *writeOp // to the writer goroutine
	touches *touches
	stop    chan struct{} // closed by Close once no call is in flight
	done    chan struct{} // closed by the writer goroutine when it returns

	// yielding is whether the last Put found the disk under the free space
	// floor; only the writer goroutine uses it.
	yielding bool
	// yielded counts the Puts that stored nothing because the disk was low.
	yielded atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// Yielded returns how many Puts stored nothing because the file system had
// less free space than the floor (Options.MinFreeBytes, MinFreePercent) or
// the store is read-only.
func (s *Store) Yielded() int64 { return s.yielded.Load() }

var _ archive.Store = (*Store)(nil)

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (s *Store) ReadOnly() bool { return s.opts.ReadOnly }

// Path returns the database file's path as given to Open.
func (s *Store) Path() string { return s.path }

// enter admits a call unless the store is closed or ctx is done. A nil
// error must be paired with s.leave.
func (s *Store) enter(ctx context.Context, op string) error { return s.calls.Enter(ctx, op) }

func (s *Store) leave() { s.gate.Leave() }

// admit waits for a transaction slot (honouring ctx), then returns the
// transaction's context, bounded by TxTimeout from now, and the function
// that releases both.
func (s *Store) admit(ctx context.Context) (context.Context, func(), error) {
	return s.gate.Admit(ctx)
}

// fail wraps err from operation op: the caller's context error when ctx is
// done, a timeout when the transaction's own bound ran out (its context, or
// a lock wait that used up busy_timeout = TxTimeout), else err.
func (s *Store) fail(op string, ctx, txctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op, cerr)
	}
	if txgate.TimedOut(txctx) || txctx != nil && isBusy(err) {
		return fmt.Errorf("sqlitestore: %s: %w after %v (%v)", op, errTxTimeout, s.opts.TxTimeout, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, sqlitedb.Explain(s.path, err))
}

// Get returns the record with digest d. A hit becomes the most recently
// used record: the update is queued and applied by the writer before its
// next transaction's eviction decision, or within TouchDelay (see the
// package documentation). The returned slices are the caller's.
func (s *Store) Get(ctx context.Context, d archive.Digest) (archive.Record, bool, error) {
	var key, payload []byte
	found := false
	err := s.calls.Run(ctx, "get", func(txctx context.Context) error {
		err := s.getStmt.QueryRowContext(txctx, d[:]).Scan(&key, &payload)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return archive.Record{}, false, err
	}
	if !s.opts.ReadOnly {
		s.touches.add(d)
	}
	return archive.Record{Digest: d, Key: dbstore.NonNil(key), Payload: dbstore.NonNil(payload)}, true, nil
}

// Put stores r as the most recently used record and evicts least recently
// used records until both limits hold, in one transaction. A record larger
// than MaxBytes is not stored and Put returns nil. Put does not retain r's
// slices.
func (s *Store) Put(ctx context.Context, r archive.Record) error {
	if err := s.enter(ctx, "put"); err != nil {
		return err
	}
	defer s.leave()
	if r.Size() > s.opts.Limits.MaxBytes {
		return nil
	}
	if s.opts.ReadOnly {
		s.yielded.Add(1)
		return nil
	}
	return s.write(ctx, "put", &writeOp{kind: opPut, rec: r})
}

// Delete removes the record with digest d, if present.
func (s *Store) Delete(ctx context.Context, d archive.Digest) error {
	if err := s.enter(ctx, "delete"); err != nil {
		return err
	}
	defer s.leave()
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	return s.write(ctx, "delete", &writeOp{kind: opDelete, rec: archive.Record{Digest: d}})
}

// Clear removes every record. Pending recency updates are dropped.
func (s *Store) Clear(ctx context.Context) error {
	if err := s.enter(ctx, "clear"); err != nil {
		return err
	}
	defer s.leave()
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	return s.write(ctx, "clear", &writeOp{kind: opClear})
}

// write hands op to the writer goroutine and waits for its result or ctx.
// If ctx ends first, write returns ctx's error; the writer then skips the
// operation or interrupts it (a transaction already committed stays).
func (s *Store) write(ctx context.Context, name string, op *writeOp) error {
	op.ctx = ctx
	op.name = name
	op.reply = make(chan error, 1)
	select {
	case s.ops <- op:
	case <-ctx.Done():
		return fmt.Errorf("sqlitestore: %s: %w", name, ctx.Err())
	}
	select {
	case err := <-op.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("sqlitestore: %s: %w", name, ctx.Err())
	}
}

// Scan calls fn for every record, in digest order, stopping at the first
// error fn returns, which Scan returns as is. Records are read in pages, each
// page in its own read transaction, and fn runs outside any transaction: a
// record present during the whole Scan is visited exactly once, one added or
// removed meanwhile may or may not be. Scan changes no recency. The
// record's slices are fn's to keep.
func (s *Store) Scan(ctx context.Context, fn func(archive.Record) error) error {
	if err := s.enter(ctx, "scan"); err != nil {
		return err
	}
	defer s.leave()
	// One page per read transaction.
	page := func(after []byte) (page []archive.Record, more bool, err error) {
		err = s.calls.Tx(ctx, "scan", func(txctx context.Context) error {
			rows, err := s.scanStmt.QueryContext(txctx, after, dbstore.ScanPageRows)
			if err != nil {
				return err
			}
			defer rows.Close()
			page, more, err = dbstore.ReadPage(rows)
			return err
		})
		return page, more, err
	}
	return dbstore.Scan(ctx, "sqlitestore", page, fn)
}

// Stats reports the retained entries and bytes (the counters kept in the
// database, updated in every write transaction) and the limits.
func (s *Store) Stats(ctx context.Context) (archive.StoreStats, error) {
	st := archive.StoreStats{Limits: s.opts.Limits}
	err := s.calls.Run(ctx, "stats", func(txctx context.Context) error {
		return s.statsStmt.QueryRowContext(txctx).Scan(&st.Entries, &st.Bytes)
	})
	if err != nil {
		return archive.StoreStats{}, err
	}
	return st, nil
}

// Close waits for calls in progress, lets the writer apply pending recency
// updates, and closes the database. Every method then returns
// archive.ErrStoreClosed; Close itself is idempotent and returns the first
// call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.gate.Close()
		close(s.stop)
		<-s.done
		s.closeErr = s.closeDB()
	})
	return s.closeErr
}

// closeDB releases statements and connections; Open uses it on failure.
func (s *Store) closeDB() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.getStmt, s.statsStmt, s.scanStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlitestore: close %s: %w", s.path, err)
	}
	return nil
}
