package claims

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgSchemaVersion is the version claims_meta records for the tables this
// package writes in PostgreSQL.
const pgSchemaVersion = 1

// pgSchema creates the tables in the first schema of the search_path. The
// ids come from the identity column's sequence, unique across the nodes.
// claims_meta has one row: the schema version and the revision, which every
// write increments (see change).
var pgSchema = []string{
	`CREATE TABLE claims_meta (
		one     boolean PRIMARY KEY DEFAULT true CHECK (one),
		version integer NOT NULL,
		rev     bigint NOT NULL CHECK (rev >= 0)
	)`,
	`CREATE TABLE claims (
		id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		world   text NOT NULL CHECK (world <> ''),
		owner   text NOT NULL CHECK (owner <> ''),
		min_x   bigint NOT NULL,
		min_z   bigint NOT NULL,
		max_x   bigint NOT NULL,
		max_z   bigint NOT NULL,
		created timestamptz NOT NULL,
		CHECK (min_x <= max_x AND min_z <= max_z)
	)`,
	`CREATE INDEX claims_world ON claims (world, id)`,
	fmt.Sprintf(`INSERT INTO claims_meta (version, rev) VALUES (%d, 0)`, pgSchemaVersion),
}

const (
	pgBump       = `UPDATE claims_meta SET rev = rev + 1 RETURNING rev`
	pgRevision   = `SELECT rev FROM claims_meta`
	pgInsert     = `INSERT INTO claims (world, owner, min_x, min_z, max_x, max_z, created) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`
	pgDelete     = `DELETE FROM claims WHERE id = $1`
	pgNotify     = `SELECT pg_notify($1, $2)`
	pgColumns    = `SELECT id, world, owner, min_x, min_z, max_x, max_z, created FROM claims`
	pgListAll    = pgColumns + ` ORDER BY id`
	pgListWorld  = pgColumns + ` WHERE world = $1 ORDER BY id`
	pgLockPrefix = "rtp/verify/claims:" // + the schema: the key of the migration lock
)

// Bounds on the follower's work with the database.
const (
	pgQueryTimeout   = 10 * time.Second // a revision check or a reload
	pgConnectTimeout = 10 * time.Second // one reconnection attempt
	pgCloseTimeout   = 2 * time.Second  // closing a connection
	pgMinBackoff     = 100 * time.Millisecond
	pgMaxBackoff     = 5 * time.Second
)

// pgBackend keeps the claims in a PostgreSQL schema that other nodes'
// stores share. Writes go through the pool; the follower keeps the index
// up to date with everyone's writes.
type pgBackend struct {
	pool    *pgxpool.Pool
	schema  string // current_schema() of the pool's connections
	channel string // the notification channel of the schema
	f       *follower
}

// OpenPostgres opens the claims of a PostgreSQL database shared by several
// nodes: connString is a pgx connection string (URL or key=value), and the
// tables live in Options.Schema, else in the first existing schema of the
// connection's search_path (for example options=-csearch_path=rtp in the
// URL). It creates the tables if they are missing, loads every claim into
// the index, and follows the other nodes' changes until Close.
//
// Nodes that start together migrate once: the check and the creation run
// under a transaction-scoped advisory lock on the schema's name. A schema
// with a claims table that this package did not write (no claims_meta) is
// refused with an error that wraps ErrNotClaimsDatabase, and a row that is
// not a valid claim fails OpenPostgres as it fails Open. Errors never
// quote connString, which may hold a password.
func OpenPostgres(ctx context.Context, connString string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := newStore(opts)
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("claims: open postgres: %w", redact(err))
	}
	if s.opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{s.opts.Schema}.Sanitize()
	}
	b := &pgBackend{}
	if err := b.open(ctx, cfg, s); err != nil {
		if b.f != nil {
			b.f.cancel()
		}
		if b.pool != nil {
			b.pool.Close()
		}
		if b.schema != "" {
			return nil, fmt.Errorf("claims: open postgres schema %s: %w", b.schema, err)
		}
		return nil, fmt.Errorf("claims: open postgres: %w", err)
	}
	s.be = b
	return s, nil
}

// redact replaces a parse error of a connection string, whose text may
// quote the string and so a password, by one that names only the problem:
// pgx's message and, of an error beneath it, the part that does not quote
// the string.
func redact(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return errors.New("invalid connection string")
	}
	// The message follows the quoted string: "cannot parse `...`: msg",
	// then " (cause)" when there is a cause.
	text := pe.Error()
	cause := pe.Unwrap()
	if cause != nil {
		text = strings.TrimSuffix(text, " ("+cause.Error()+")")
	}
	msg := ""
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		msg = text[i+len("`: "):]
	}
	var ue *url.Error
	if errors.As(cause, &ue) {
		cause = ue.Err
	}
	switch {
	case msg != "" && cause != nil:
		return fmt.Errorf("invalid connection string: %s: %w", msg, cause)
	case msg != "":
		return fmt.Errorf("invalid connection string: %s", msg)
	case cause != nil:
		return fmt.Errorf("invalid connection string: %w", cause)
	}
	return errors.New("invalid connection string")
}

func (b *pgBackend) open(ctx context.Context, cfg *pgxpool.Config, s *Store) error {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	b.pool = pool
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	created, err := b.migrate(ctx, s.opts.Schema)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(b.schema))
	b.channel = "rtp_claims_" + hex.EncodeToString(sum[:8])

	lcfg := cfg.ConnConfig.Copy()
	if _, ok := lcfg.RuntimeParams["application_name"]; !ok {
		lcfg.RuntimeParams["application_name"] = "rtp claims follower"
	}
	b.f = newFollower(s, lcfg, b.schema, b.channel)
	conn, err := b.f.connect(ctx, true)
	if err != nil {
		return err
	}
	if created {
		s.opts.Logger.Info("claims: created the claims tables, an empty claims store", "schema", b.schema)
	}
	go b.f.run(conn)
	return nil
}

// migrate creates the tables in the pool's current schema if they are
// missing, or checks those there, under the advisory lock of the schema.
// It sets b.schema and reports whether it created the tables.
func (b *pgBackend) migrate(ctx context.Context, wantSchema string) (created bool, err error) {
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		switch {
		case schema == nil && wantSchema != "":
			return fmt.Errorf("schema %s does not exist", wantSchema)
		case schema == nil:
			return errors.New("no schema of the search_path exists (create it, or set Options.Schema)")
		}
		b.schema = *schema
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, pgLockPrefix+b.schema); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		var hasMeta, hasClaims bool
		if err := tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT FROM pg_tables WHERE schemaname = $1 AND tablename = 'claims_meta'),
			EXISTS (SELECT FROM pg_tables WHERE schemaname = $1 AND tablename = 'claims')`, b.schema).Scan(&hasMeta, &hasClaims); err != nil {
			return fmt.Errorf("migrate: look up the tables: %w", err)
		}
		switch {
		case !hasMeta && hasClaims:
			return fmt.Errorf("%w: a claims table this package did not write (no claims_meta table); refusing to change it", ErrNotClaimsDatabase)
		case !hasMeta:
			for _, q := range pgSchema {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("migrate: create the tables: %w", err)
				}
			}
			created = true
			return nil
		}
		var version int
		switch err := tx.QueryRow(ctx, `SELECT version FROM claims_meta`).Scan(&version); {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: claims_meta holds no row; refusing to change it", ErrNotClaimsDatabase)
		case err != nil:
			return fmt.Errorf("migrate: read the schema version: %w", err)
		case version > pgSchemaVersion:
			return fmt.Errorf("schema version %d is newer than this build's %d", version, pgSchemaVersion)
		case version != pgSchemaVersion:
			return fmt.Errorf("schema version %d is not supported", version)
		case !hasClaims:
			return fmt.Errorf("%w: schema version %d without a claims table; refusing to change it", ErrNotClaimsDatabase, version)
		}
		return nil
	})
	return created, err
}

// notice is the payload of a change's notification. A claim's JSON is at
// most about 3.5 kB (names of 256 bytes, every byte escaped), well under
// PostgreSQL's limit of 8,000 bytes.
type notice struct {
	Rev    int64  `json:"rev"`
	Add    *Claim `json:"add,omitempty"`
	Remove int64  `json:"remove,omitempty"`
}

func encodeNotice(ch change) (string, error) {
	n := notice{Rev: ch.rev, Add: ch.add}
	if ch.add == nil {
		n.Remove = ch.id
	}
	p, err := json.Marshal(n)
	return string(p), err
}

func decodeNotice(payload string) (change, error) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return change{}, err
	}
	switch {
	case n.Rev <= 0:
		return change{}, fmt.Errorf("revision %d", n.Rev)
	case n.Add != nil && n.Remove == 0:
		if err := checkStored(n.Add); err != nil {
			return change{}, err
		}
		n.Add.Created = time.UnixMilli(n.Add.Created.UnixMilli()).UTC()
		return change{rev: n.Rev, id: n.Add.ID, add: n.Add}, nil
	case n.Add == nil && n.Remove > 0:
		return change{rev: n.Rev, id: n.Remove}, nil
	}
	return change{}, errors.New("neither one addition nor one removal")
}

// write runs one write transaction: it takes the next revision (and with
// it the lock that orders the writers), runs fn, and notifies the change
// fn returns, all committed together. With ok false from fn the
// transaction rolls back: nothing is committed, no revision is used.
func (b *pgBackend) write(ctx context.Context, fn func(tx pgx.Tx, rev int64) (change, bool, error)) (change, bool, error) {
	var ch change
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var rev int64
		if err := tx.QueryRow(ctx, pgBump).Scan(&rev); errors.Is(err, pgx.ErrNoRows) {
			return errors.New("claims_meta holds no row")
		} else if err != nil {
			return fmt.Errorf("take a revision: %w", err)
		}
		c, ok, err := fn(tx, rev)
		switch {
		case err != nil:
			return err
		case !ok:
			return errNoChange // roll back the revision's increment
		}
		payload, err := encodeNotice(c)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pgNotify, b.channel, payload); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		ch = c
		return nil
	})
	switch {
	case errors.Is(err, errNoChange):
		return change{}, false, nil
	case err != nil:
		return change{}, false, err
	}
	return ch, true, nil
}

// errNoChange rolls back a write transaction that found nothing to do.
var errNoChange = errors.New("no change")

func (b *pgBackend) insert(ctx context.Context, c Claim) (change, error) {
	for _, name := range []string{c.World, c.Owner} {
		if strings.IndexByte(name, 0) >= 0 {
			return change{}, fmt.Errorf("%w: %q holds a NUL byte, which PostgreSQL text cannot", ErrInvalidClaim, name)
		}
	}
	ch, _, err := b.write(ctx, func(tx pgx.Tx, rev int64) (change, bool, error) {
		if err := tx.QueryRow(ctx, pgInsert, c.World, c.Owner, c.MinX, c.MinZ, c.MaxX, c.MaxZ, c.Created).Scan(&c.ID); err != nil {
			return change{}, false, err
		}
		return change{rev: rev, id: c.ID, add: &c}, true, nil
	})
	return ch, err
}

func (b *pgBackend) remove(ctx context.Context, id int64) (change, bool, error) {
	return b.write(ctx, func(tx pgx.Tx, rev int64) (change, bool, error) {
		tag, err := tx.Exec(ctx, pgDelete, id)
		if err != nil {
			return change{}, false, err
		}
		return change{rev: rev, id: id}, tag.RowsAffected() > 0, nil
	})
}

func (b *pgBackend) list(ctx context.Context, world string) ([]Claim, error) {
	return queryClaims(ctx, b.pool, world)
}

// querier is what queryClaims reads through: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryClaims(ctx context.Context, q querier, world string) ([]Claim, error) {
	var rows pgx.Rows
	var err error
	if world == "" {
		rows, err = q.Query(ctx, pgListAll)
	} else {
		rows, err = q.Query(ctx, pgListWorld, world)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Claim
	for rows.Next() {
		var c Claim
		if err := rows.Scan(&c.ID, &c.World, &c.Owner, &c.MinX, &c.MinZ, &c.MaxX, &c.MaxZ, &c.Created); err != nil {
			return nil, err
		}
		c.Created = time.UnixMilli(c.Created.UnixMilli()).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

func (b *pgBackend) shared() bool { return true }

func (b *pgBackend) close() error {
	b.f.stop()
	b.pool.Close()
	return nil
}
