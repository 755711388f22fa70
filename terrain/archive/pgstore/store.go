package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rtpengine/rtp/internal/txgate"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rtpengine/rtp/terrain/archive"
)

// Defaults of Options.
const (
	DefaultSchema          = "rtp_archive"
	DefaultOpenTimeout     = time.Second
	DefaultTxTimeout       = 5 * time.Second
	DefaultMaxConcurrentTx = 8
)

// maxIdentifier is PostgreSQL's identifier length (NAMEDATALEN - 1).
const maxIdentifier = 63

// Paging and batching bounds.
const (
	scanPageRows  = 64
	scanPageBytes = 8 << 20
	evictBatch    = 64
)

// Options configure a Store. The zero value selects every default.
type Options struct {
	// Limits bound the store. A zero field takes the archive default:
	// archive.DefaultMaxEntries (65,536) entries and archive.DefaultMaxBytes
	// (4 GiB) of Record.Size. Every Store sharing a schema should use the
	// same limits: each enforces its own on its writes. Open trims a store
	// that holds more.
	Limits archive.Limits

	// Schema is the PostgreSQL schema that holds the archive's tables,
	// created if missing. Archives (and tests) in different schemas of one
	// database do not interact. Default "rtp_archive"; at most 63 bytes.
	Schema string

	// OpenTimeout bounds Open as a whole: connecting, creating or checking
	// the schema, and the counter check. Default 1 s.
	OpenTimeout time.Duration

	// TxTimeout bounds each storage transaction from the moment it is
	// admitted (waiting for admission does not count; waiting for the
	// database's locks does). Default 5 s.
	TxTimeout time.Duration

	// MaxConcurrentTx is how many storage transactions (reads and writes
	// together) this Store runs at once; it is also the size of its
	// connection pool. Default 8.
	MaxConcurrentTx int

	// Logger receives counter repairs. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.Limits.MaxEntries < 0 {
		errs = append(errs, fmt.Errorf("pgstore: Limits.MaxEntries %d is negative", o.Limits.MaxEntries))
	}
	if o.Limits.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("pgstore: Limits.MaxBytes %d is negative", o.Limits.MaxBytes))
	}
	if len(o.Schema) > maxIdentifier {
		errs = append(errs, fmt.Errorf("pgstore: Schema %q is longer than %d bytes", o.Schema, maxIdentifier))
	}
	for _, c := range []byte(o.Schema) {
		if c == 0 {
			errs = append(errs, errors.New("pgstore: Schema contains a NUL byte"))
			break
		}
	}
	if o.OpenTimeout < 0 {
		errs = append(errs, fmt.Errorf("pgstore: OpenTimeout %v is negative", o.OpenTimeout))
	}
	if o.TxTimeout < 0 {
		errs = append(errs, fmt.Errorf("pgstore: TxTimeout %v is negative", o.TxTimeout))
	}
	if o.MaxConcurrentTx < 0 {
		errs = append(errs, fmt.Errorf("pgstore: MaxConcurrentTx %d is negative", o.MaxConcurrentTx))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults()
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.OpenTimeout == 0 {
		o.OpenTimeout = DefaultOpenTimeout
	}
	if o.TxTimeout == 0 {
		o.TxTimeout = DefaultTxTimeout
	}
	if o.MaxConcurrentTx == 0 {
		o.MaxConcurrentTx = DefaultMaxConcurrentTx
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

var (
	errTxTimeout   = txgate.ErrTimeout
	errOpenTimeout = errors.New("open timed out")
)

// Store is an archive.Store in a PostgreSQL schema, for fleets: any number
// of Stores, in any number of processes, may share one schema. Create one
// with Open; the zero value is not usable. A Store is safe for concurrent
// use.
type Store struct {
	opts Options // with defaults
	log  *slog.Logger
	pool *pgxpool.Pool
	q    queries
	gate *txgate.Gate // admission, transaction slots and bounds, Close

	closeOnce sync.Once
}

var _ archive.Store = (*Store)(nil)

// Schema returns the schema the store lives in.
func (s *Store) Schema() string { return s.opts.Schema }

func (s *Store) enter(ctx context.Context, op string) error {
	if err := s.gate.Enter(ctx); err != nil {
		if errors.Is(err, txgate.ErrClosed) {
			return archive.ErrStoreClosed
		}
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return nil
}

func (s *Store) leave() { s.gate.Leave() }

// admit waits for a transaction slot (honouring ctx), then returns the
// transaction's context, bounded by TxTimeout from now, and the function
// that releases both.
func (s *Store) admit(ctx context.Context) (context.Context, func(), error) {
	return s.gate.Admit(ctx)
}

// fail wraps err from operation op: the caller's context error when ctx is
// done, a timeout (not a context error) when TxTimeout ran out, else err.
func (s *Store) fail(op string, ctx, txctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("pgstore: %s: %w", op, cerr)
	}
	if txgate.TimedOut(txctx) {
		return fmt.Errorf("pgstore: %s: %w after %v (%v)", op, errTxTimeout, s.opts.TxTimeout, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// Get returns the record with digest d and, in the same statement, makes
// it the most recently used: the recency update is committed before Get
// returns, so every later eviction decision, in any process, sees it. The
// returned slices are the caller's.
func (s *Store) Get(ctx context.Context, d archive.Digest) (archive.Record, bool, error) {
	if err := s.enter(ctx, "get"); err != nil {
		return archive.Record{}, false, err
	}
	defer s.leave()
	txctx, release, err := s.admit(ctx)
	if err != nil {
		return archive.Record{}, false, fmt.Errorf("pgstore: get: %w", err)
	}
	defer release()
	var key, payload []byte
	err = s.pool.QueryRow(txctx, s.q.get, d[:]).Scan(&key, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return archive.Record{}, false, nil
	}
	if err != nil {
		return archive.Record{}, false, s.fail("get", ctx, txctx, err)
	}
	return archive.Record{Digest: d, Key: nonNil(key), Payload: nonNil(payload)}, true, nil
}

// Put stores r as the most recently used record and evicts least recently
// used records until both limits hold, in one transaction serialised with
// every other write to the schema. A record larger than MaxBytes is not
// stored and Put returns nil. Put does not retain r's slices.
func (s *Store) Put(ctx context.Context, r archive.Record) error {
	if r.Size() > s.opts.Limits.MaxBytes {
		if err := s.enter(ctx, "put"); err != nil {
			return err
		}
		s.leave()
		return nil
	}
	return s.write(ctx, "put", func(t *wtx) error { return t.put(r) })
}

// Delete removes the record with digest d, if present.
func (s *Store) Delete(ctx context.Context, d archive.Digest) error {
	return s.write(ctx, "delete", func(t *wtx) error { return t.remove(d) })
}

// Clear removes every record. It takes an exclusive lock on the records
// table for its transaction, so concurrent reads wait for it.
func (s *Store) Clear(ctx context.Context) error {
	return s.write(ctx, "clear", (*wtx).removeAll)
}

// Scan calls fn for every record, in digest order, stopping at the first
// error fn returns, which Scan returns as is. Records are read in pages of
// their own statements and fn runs outside any transaction: a record
// present during the whole Scan is visited exactly once. Scan changes no
// recency. The record's slices are fn's to keep.
func (s *Store) Scan(ctx context.Context, fn func(archive.Record) error) error {
	if err := s.enter(ctx, "scan"); err != nil {
		return err
	}
	defer s.leave()
	after := []byte{}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pgstore: scan: %w", err)
		}
		page, more, err := s.scanPage(ctx, after)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		last := page[len(page)-1].Digest
		after = last[:]
	}
}

func (s *Store) scanPage(ctx context.Context, after []byte) (page []archive.Record, more bool, err error) {
	txctx, release, err := s.admit(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: scan: %w", err)
	}
	defer release()
	rows, err := s.pool.Query(txctx, s.q.scan, after, scanPageRows)
	if err != nil {
		return nil, false, s.fail("scan", ctx, txctx, err)
	}
	defer rows.Close()
	var bytes int64
	for rows.Next() {
		var d, key, payload []byte
		if err := rows.Scan(&d, &key, &payload); err != nil {
			return nil, false, s.fail("scan", ctx, txctx, err)
		}
		if len(d) != len(archive.Digest{}) {
			return nil, false, fmt.Errorf("pgstore: scan: row with a %d-byte digest", len(d))
		}
		r := archive.Record{Digest: archive.Digest(d), Key: nonNil(key), Payload: nonNil(payload)}
		page = append(page, r)
		bytes += r.Size()
		if bytes >= scanPageBytes {
			return page, true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.fail("scan", ctx, txctx, err)
	}
	return page, len(page) == scanPageRows, nil
}

// Stats reports the retained entries and bytes (the counters of the meta
// row, updated in every write transaction) and this Store's limits.
func (s *Store) Stats(ctx context.Context) (archive.StoreStats, error) {
	if err := s.enter(ctx, "stats"); err != nil {
		return archive.StoreStats{}, err
	}
	defer s.leave()
	txctx, release, err := s.admit(ctx)
	if err != nil {
		return archive.StoreStats{}, fmt.Errorf("pgstore: stats: %w", err)
	}
	defer release()
	st := archive.StoreStats{Limits: s.opts.Limits}
	if err := s.pool.QueryRow(txctx, s.q.stats).Scan(&st.Entries, &st.Bytes); err != nil {
		return archive.StoreStats{}, s.fail("stats", ctx, txctx, err)
	}
	return st, nil
}

// Close waits for calls in progress and closes the connection pool. Every
// method then returns archive.ErrStoreClosed; Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.gate.Close()
		s.pool.Close()
	})
	return nil
}

// write runs fn in one write transaction: it locks the meta row (FOR
// UPDATE), which serialises every write to the schema across all Stores
// and processes, reads the counters, runs fn, and writes the counters back.
func (s *Store) write(ctx context.Context, op string, fn func(*wtx) error) error {
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	defer s.leave()
	txctx, release, err := s.admit(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	defer release()
	err = pgx.BeginTxFunc(txctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		t := &wtx{ctx: txctx, tx: tx, s: s}
		if err := tx.QueryRow(txctx, s.q.lockMeta).Scan(&t.version, &t.entries, &t.bytes); err != nil {
			return fmt.Errorf("lock counters: %w", err)
		}
		if err := fn(t); err != nil {
			return err
		}
		if _, err := tx.Exec(txctx, s.q.storeMeta, t.entries, t.bytes); err != nil {
			return fmt.Errorf("write counters: %w", err)
		}
		return nil
	})
	if err != nil {
		return s.fail(op, ctx, txctx, err)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
