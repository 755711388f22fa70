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
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
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

// evictBatch is how many eviction candidates one query fetches.
const evictBatch = 64

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
	errs := dbstore.ValidateLimits("pgstore", o.Limits)
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
	// calls admits the calls through gate and runs their transactions.
	calls dbstore.Calls

	closeOnce sync.Once
}

var _ archive.Store = (*Store)(nil)

// Schema returns the schema the store lives in.
func (s *Store) Schema() string { return s.opts.Schema }

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
	var key, payload []byte
	found := false
	err := s.calls.Run(ctx, "get", func(txctx context.Context) error {
		err := s.pool.QueryRow(txctx, s.q.get, d[:]).Scan(&key, &payload)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return archive.Record{}, false, err
	}
	return archive.Record{Digest: d, Key: dbstore.NonNil(key), Payload: dbstore.NonNil(payload)}, true, nil
}

// Put stores r as the most recently used record and evicts least recently
// used records until both limits hold, in one transaction serialised with
// every other write to the schema. A record larger than MaxBytes is not
// stored and Put returns nil. Put does not retain r's slices.
func (s *Store) Put(ctx context.Context, r archive.Record) error {
	if r.Size() > s.opts.Limits.MaxBytes {
		if err := s.calls.Enter(ctx, "put"); err != nil {
			return err
		}
		s.gate.Leave()
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
	if err := s.calls.Enter(ctx, "scan"); err != nil {
		return err
	}
	defer s.gate.Leave()
	page := func(after []byte) (page []archive.Record, more bool, err error) {
		err = s.calls.Tx(ctx, "scan", func(txctx context.Context) error {
			rows, err := s.pool.Query(txctx, s.q.scan, after, dbstore.ScanPageRows)
			if err != nil {
				return err
			}
			defer rows.Close()
			page, more, err = dbstore.ReadPage(rows)
			return err
		})
		return page, more, err
	}
	return dbstore.Scan(ctx, "pgstore", page, fn)
}

// Stats reports the retained entries and bytes (the counters of the meta
// row, updated in every write transaction) and this Store's limits.
func (s *Store) Stats(ctx context.Context) (archive.StoreStats, error) {
	st := archive.StoreStats{Limits: s.opts.Limits}
	err := s.calls.Run(ctx, "stats", func(txctx context.Context) error {
		return s.pool.QueryRow(txctx, s.q.stats).Scan(&st.Entries, &st.Bytes)
	})
	if err != nil {
		return archive.StoreStats{}, err
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
	return s.calls.Run(ctx, op, func(txctx context.Context) error {
		return pgx.BeginTxFunc(txctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			t := &wtx{ctx: txctx, tx: tx, s: s}
			if err := tx.QueryRow(txctx, s.q.lockMeta).Scan(&t.version, &t.c.Entries, &t.c.Bytes); err != nil {
				return fmt.Errorf("lock counters: %w", err)
			}
			if err := fn(t); err != nil {
				return err
			}
			if _, err := tx.Exec(txctx, s.q.storeMeta, t.c.Entries, t.c.Bytes); err != nil {
				return fmt.Errorf("write counters: %w", err)
			}
			return nil
		})
	})
}
