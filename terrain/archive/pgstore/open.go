package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/rtpengine/rtp/internal/txgate"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to the database named by connString (a libpq URL or
// key=value string, as pgx accepts), creates the archive's schema if
// missing, and returns a Store ready for use. It is bounded by
// opts.OpenTimeout (and ctx).
//
// Creating the schema runs under a transaction-scoped advisory lock, so
// Stores of a fleet opening at once do not race. Inside the same
// transaction Open checks the schema version, compares the counters with
// COUNT/SUM over the rows (repairing and logging a difference) and trims
// the store to opts.Limits. Errors have the form
// "pgstore: open schema NAME: REASON"; they never include connString.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open schema %s: parse connection string: %w", opts.Schema, redact(err))
	}
	cfg.MaxConns = int32(opts.MaxConcurrentTx)
	cfg.MinConns = 0

	octx, cancel := context.WithTimeoutCause(ctx, opts.OpenTimeout, errOpenTimeout)
	defer cancel()
	s := &Store{
		opts: opts,
		log:  opts.Logger,
		q:    newQueries(opts.Schema),
		gate: txgate.New(opts.MaxConcurrentTx, opts.TxTimeout),
	}
	s.calls = dbstore.Calls{Gate: s.gate, Pkg: "pgstore", Fail: s.fail}
	if err := s.open(octx, cfg); err != nil {
		if s.pool != nil {
			s.pool.Close()
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("pgstore: open schema %s: %w", opts.Schema, cerr)
		}
		if errors.Is(context.Cause(octx), errOpenTimeout) {
			return nil, fmt.Errorf("pgstore: open schema %s: %w after %v (%v)", opts.Schema, errOpenTimeout, opts.OpenTimeout, err)
		}
		return nil, fmt.Errorf("pgstore: open schema %s: %w", opts.Schema, err)
	}
	return s, nil
}

// redact replaces a parse error, which may quote the connection string
// (and so a password), by one that names only what was wrong.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("invalid connection string: %w", ue.Err)
	}
	return errors.New("invalid connection string")
}

func (s *Store) open(ctx context.Context, cfg *pgxpool.Config) error {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	s.pool = pool
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		// One lock per schema name, held until the transaction ends.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "rtp/terrain/archive/pgstore:"+s.opts.Schema); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		// DDL only when something is missing: CREATE INDEX IF NOT EXISTS
		// on an existing table still takes a SHARE lock on it, which
		// would order records before meta, against the writers' order
		// (meta row, then records), and deadlock with a running Put.
		var complete bool
		if err := tx.QueryRow(ctx, s.q.exists, s.q.names[0], s.q.names[1], s.q.names[2], s.q.names[3]).Scan(&complete); err != nil {
			return fmt.Errorf("look up schema: %w", err)
		}
		if !complete {
			for _, q := range s.q.ddl {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("create schema: %w", err)
				}
			}
		}
		t := &wtx{ctx: ctx, tx: tx, s: s}
		if err := tx.QueryRow(ctx, s.q.lockMeta).Scan(&t.version, &t.c.Entries, &t.c.Bytes); err != nil {
			return fmt.Errorf("read counters: %w", err)
		}
		if t.version != schemaVersion {
			return fmt.Errorf("schema version %d, this build reads %d", t.version, schemaVersion)
		}
		if err := t.recount("counter check on open"); err != nil {
			return err
		}
		if err := t.evict(nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.storeMeta, t.c.Entries, t.c.Bytes); err != nil {
			return fmt.Errorf("write counters: %w", err)
		}
		return nil
	})
}
