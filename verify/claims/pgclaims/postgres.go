package pgclaims

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

	"github.com/rtpengine/rtp/verify/claims"
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

// Options configure a store opened by Open. The zero value selects every
// default.
type Options struct {
	claims.Options
	// Schema is the PostgreSQL schema that holds the tables; it must
	// exist. Default "": the first existing schema of the connection's
	// search_path.
	Schema string
	// ResyncInterval is how often the store checks the database's
	// revision when no notification came, the fallback that catches up on
	// changes whose notifications were lost. Default
	// DefaultResyncInterval.
	ResyncInterval time.Duration
}

// DefaultResyncInterval is the default of Options.ResyncInterval.
const DefaultResyncInterval = 2 * time.Second

// maxIdentifier is PostgreSQL's limit on the length of a name, in bytes.
const maxIdentifier = 63

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	errs := []error{o.Options.Validate()}
	if o.ResyncInterval < 0 {
		errs = append(errs, fmt.Errorf("pgclaims: ResyncInterval %v is negative", o.ResyncInterval))
	}
	if len(o.Schema) > maxIdentifier || strings.ContainsRune(o.Schema, 0) {
		errs = append(errs, fmt.Errorf("pgclaims: Schema %q is not a PostgreSQL name (at most %d bytes, no NUL)", o.Schema, maxIdentifier))
	}
	return errors.Join(errs...)
}

// backend keeps the claims in a PostgreSQL schema that other nodes'
// stores share. Writes go through the pool; the follower keeps the index
// up to date with everyone's writes.
type backend struct {
	pool    *pgxpool.Pool
	schema  string // current_schema() of the pool's connections
	channel string // the notification channel of the schema
	f       *follower
}

// Open opens the claims of a PostgreSQL database shared by several
// nodes: connString is a pgx connection string (URL or key=value), and the
// tables live in Options.Schema, else in the first existing schema of the
// connection's search_path (for example options=-csearch_path=rtp in the
// URL). It creates the tables if they are missing, loads every claim into
// the index, and follows the other nodes' changes until Close.
//
// Nodes that start together migrate once: the check and the creation run
// under a transaction-scoped advisory lock on the schema's name. A schema
// with a claims table that this package did not write (no claims_meta) is
// refused with an error that wraps claims.claims.ErrNotClaimsDatabase, and a row
// that is not a valid claim fails Open (its error wraps
// claims.ErrInvalidClaim). Errors never quote connString, which may hold
// a password.
func Open(ctx context.Context, connString string, opts Options) (*claims.Store, error) {
	s, _, err := open(ctx, connString, opts)
	return s, err
}

// open is Open, also returning the store's back end.
func open(ctx context.Context, connString string, opts Options) (*claims.Store, *backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	if opts.ResyncInterval == 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	opts.Options = opts.Options.WithDefaults()
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, nil, fmt.Errorf("claims: open postgres: %w", redact(err))
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	b := &backend{}
	s, err := b.open(ctx, cfg, opts)
	if err != nil {
		if b.f != nil {
			b.f.cancel()
		}
		if b.pool != nil {
			b.pool.Close()
		}
		if b.schema != "" {
			return nil, nil, fmt.Errorf("claims: open postgres schema %s: %w", b.schema, err)
		}
		return nil, nil, fmt.Errorf("claims: open postgres: %w", err)
	}
	return s, b, nil
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

func (b *backend) open(ctx context.Context, cfg *pgxpool.Config, opts Options) (*claims.Store, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b.pool = pool
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	created, err := b.migrate(ctx, opts.Schema)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(b.schema))
	b.channel = "rtp_claims_" + hex.EncodeToString(sum[:8])

	lcfg := cfg.ConnConfig.Copy()
	if _, ok := lcfg.RuntimeParams["application_name"]; !ok {
		lcfg.RuntimeParams["application_name"] = "rtp claims follower"
	}
	b.f = newFollower(lcfg, b.schema, b.channel, opts.ResyncInterval, opts.Logger)
	// Listen, then load: a change committed after the snapshot is
	// notified, one committed before it is in it.
	conn, rev, all, err := b.f.connect(ctx)
	if err != nil {
		return nil, err
	}
	s, mirror, err := claims.NewShared(b, rev, all, opts.Options)
	if err != nil {
		b.f.drop(conn)
		return nil, err
	}
	if created {
		opts.Logger.Info("claims: created the claims tables, an empty claims store", "schema", b.schema)
	}
	b.f.m = mirror
	go b.f.run(conn)
	return s, nil
}

// migrate creates the tables in the pool's current schema if they are
// missing, or checks those there, under the advisory lock of the schema.
// It sets b.schema and reports whether it created the tables.
func (b *backend) migrate(ctx context.Context, wantSchema string) (created bool, err error) {
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
			return fmt.Errorf("%w: a claims table this package did not write (no claims_meta table); refusing to change it", claims.ErrNotClaimsDatabase)
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
			return fmt.Errorf("%w: claims_meta holds no row; refusing to change it", claims.ErrNotClaimsDatabase)
		case err != nil:
			return fmt.Errorf("migrate: read the schema version: %w", err)
		case version > pgSchemaVersion:
			return fmt.Errorf("schema version %d is newer than this build's %d", version, pgSchemaVersion)
		case version != pgSchemaVersion:
			return fmt.Errorf("schema version %d is not supported", version)
		case !hasClaims:
			return fmt.Errorf("%w: schema version %d without a claims table; refusing to change it", claims.ErrNotClaimsDatabase, version)
		}
		return nil
	})
	return created, err
}

// notice is the payload of a change's notification. A claim's JSON is at
// most about 3.5 kB (names of 256 bytes, every byte escaped), well under
// PostgreSQL's limit of 8,000 bytes.
type notice struct {
	Rev    int64         `json:"rev"`
	Add    *claims.Claim `json:"add,omitempty"`
	Remove int64         `json:"remove,omitempty"`
}

func encodeNotice(ch claims.Change) (string, error) {
	n := notice{Rev: ch.Rev, Add: ch.Add}
	if ch.Add == nil {
		n.Remove = ch.ID
	}
	p, err := json.Marshal(n)
	return string(p), err
}

func decodeNotice(payload string) (claims.Change, error) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return claims.Change{}, err
	}
	switch {
	case n.Rev <= 0:
		return claims.Change{}, fmt.Errorf("revision %d", n.Rev)
	case n.Add != nil && n.Remove == 0:
		if err := claims.CheckStored(*n.Add); err != nil {
			return claims.Change{}, err
		}
		n.Add.Created = time.UnixMilli(n.Add.Created.UnixMilli()).UTC()
		return claims.Change{Rev: n.Rev, ID: n.Add.ID, Add: n.Add}, nil
	case n.Add == nil && n.Remove > 0:
		return claims.Change{Rev: n.Rev, ID: n.Remove}, nil
	}
	return claims.Change{}, errors.New("neither one addition nor one removal")
}

// write runs one write transaction: it takes the next revision (and with
// it the lock that orders the writers), runs fn, and notifies the change
// fn returns, all committed together. With ok false from fn the
// transaction rolls back: nothing is committed, no revision is used.
func (b *backend) write(ctx context.Context, fn func(tx pgx.Tx, rev int64) (claims.Change, bool, error)) (claims.Change, bool, error) {
	var ch claims.Change
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
		return claims.Change{}, false, nil
	case err != nil:
		return claims.Change{}, false, err
	}
	return ch, true, nil
}

// errNoChange rolls back a write transaction that found nothing to do.
var errNoChange = errors.New("no change")

func (b *backend) Insert(ctx context.Context, c claims.Claim) (claims.Change, error) {
	for _, name := range []string{c.World, c.Owner} {
		if strings.IndexByte(name, 0) >= 0 {
			return claims.Change{}, fmt.Errorf("%w: %q holds a NUL byte, which PostgreSQL text cannot", claims.ErrInvalidClaim, name)
		}
	}
	ch, _, err := b.write(ctx, func(tx pgx.Tx, rev int64) (claims.Change, bool, error) {
		if err := tx.QueryRow(ctx, pgInsert, c.World, c.Owner, c.MinX, c.MinZ, c.MaxX, c.MaxZ, c.Created).Scan(&c.ID); err != nil {
			return claims.Change{}, false, err
		}
		return claims.Change{Rev: rev, ID: c.ID, Add: &c}, true, nil
	})
	return ch, err
}

func (b *backend) Remove(ctx context.Context, id int64) (claims.Change, bool, error) {
	return b.write(ctx, func(tx pgx.Tx, rev int64) (claims.Change, bool, error) {
		tag, err := tx.Exec(ctx, pgDelete, id)
		if err != nil {
			return claims.Change{}, false, err
		}
		return claims.Change{Rev: rev, ID: id}, tag.RowsAffected() > 0, nil
	})
}

func (b *backend) List(ctx context.Context, world string) ([]claims.Claim, error) {
	return queryClaims(ctx, b.pool, world)
}

// querier is what queryClaims reads through: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryClaims(ctx context.Context, q querier, world string) ([]claims.Claim, error) {
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
	var out []claims.Claim
	for rows.Next() {
		var c claims.Claim
		if err := rows.Scan(&c.ID, &c.World, &c.Owner, &c.MinX, &c.MinZ, &c.MaxX, &c.MaxZ, &c.Created); err != nil {
			return nil, err
		}
		c.Created = time.UnixMilli(c.Created.UnixMilli()).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

func (b *backend) Close() error {
	b.f.stop()
	b.pool.Close()
	return nil
}
