package pgpersist

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations[i] takes the schema from version i to i+1.
var migrations = [][]string{{
	`CREATE TABLE IF NOT EXISTS nodes (
		name      text PRIMARY KEY,
		version   bigint NOT NULL,
		state     text NOT NULL,
		started   timestamptz NOT NULL,
		heartbeat timestamptz NOT NULL,
		expires   timestamptz NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS locations (
		id     bigserial PRIMARY KEY,
		region text NOT NULL,
		key    text NOT NULL,
		world  text NOT NULL,
		x      bigint NOT NULL,
		y      bigint NOT NULL,
		z      bigint NOT NULL,
		idx    bigint NOT NULL,
		n      integer NOT NULL CHECK (n > 0),
		hot    boolean NOT NULL DEFAULT false,
		owner  text,
		UNIQUE (region, key, world, x, y, z)
	)`,
	`CREATE INDEX IF NOT EXISTS locations_owner ON locations (owner) WHERE owner IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS locations_cold ON locations (region, key, id) WHERE owner IS NULL`,
	`CREATE TABLE IF NOT EXISTS discarded (
		node   text NOT NULL,
		region text NOT NULL,
		world  text NOT NULL,
		x      bigint NOT NULL,
		y      bigint NOT NULL,
		z      bigint NOT NULL,
		idx    bigint NOT NULL,
		n      integer NOT NULL,
		id     bigint NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS discarded_node ON discarded (node, id)`,
	`CREATE SEQUENCE IF NOT EXISTS journal_block`,
	`CREATE TABLE IF NOT EXISTS memory_journal (
		seq    bigint PRIMARY KEY,
		node   text NOT NULL,
		region text NOT NULL,
		idx    bigint NOT NULL,
		cause  integer NOT NULL,
		source text NOT NULL,
		at     bigint NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS memory_journal_region ON memory_journal (region, seq)`,
	`CREATE TABLE IF NOT EXISTS spots (
		region text NOT NULL,
		x      bigint NOT NULL,
		z      bigint NOT NULL,
		at     bigint NOT NULL,
		PRIMARY KEY (region, x, z)
	)`,
}, {
	// Version 2: what fleet status reports of a node, and what the
	// journal feed reads (a node's marks and spots learnt by the others).
	`ALTER TABLE nodes ADD COLUMN IF NOT EXISTS software text NOT NULL DEFAULT ''`,
	`ALTER TABLE nodes ADD COLUMN IF NOT EXISTS regions text[] NOT NULL DEFAULT '{}'`,
	`ALTER TABLE spots ADD COLUMN IF NOT EXISTS node text NOT NULL DEFAULT ''`,
	`CREATE INDEX IF NOT EXISTS memory_journal_feed ON memory_journal (region, node, seq)`,
	`CREATE INDEX IF NOT EXISTS spots_feed ON spots (region, at)`,
}}

// SchemaVersion is the version of the schema this package writes: the
// number of migrations.
const SchemaVersion = 2

// lockSpace is the first key of the advisory lock that serializes
// migrations; the second is a hash of the schema name.
const lockSpace = 0x72747070 // "rtpp"

// The statements of the writer. A remove deletes the row if it has at
// most $1 copies and lowers its count otherwise (both statements see one
// snapshot, so exactly one of them applies).
const (
	sqlRemove = `WITH gone AS (DELETE FROM locations WHERE region = $2 AND key = $3 AND world = $4 AND x = $5 AND y = $6 AND z = $7 AND n <= $1
			AND (owner IS NULL OR owner = $8) RETURNING id)
		UPDATE locations SET n = n - $1 WHERE region = $2 AND key = $3 AND world = $4 AND x = $5 AND y = $6 AND z = $7 AND n > $1
			AND (owner IS NULL OR owner = $8)`
	sqlAdd = `INSERT INTO locations (region, key, world, x, y, z, idx, n, owner) VALUES ($2, $3, $4, $5, $6, $7, $8, $1, $9)
		ON CONFLICT (region, key, world, x, y, z) DO UPDATE SET n = locations.n + excluded.n, idx = excluded.idx,
		owner = COALESCE(locations.owner, excluded.owner)`
	// sqlHot marks the row of a column hot whatever its y, and takes it
	// for the node unless another node owns it.
	sqlHot = `UPDATE locations SET hot = true, owner = $6
		WHERE region = $1 AND key = $2 AND world = $3 AND x = $4 AND z = $5 AND (owner IS NULL OR owner = $6)`
	sqlMark = `INSERT INTO memory_journal (seq, node, region, idx, cause, source, at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (seq) DO NOTHING`
	sqlSpot = `INSERT INTO spots (region, x, z, at, node) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (region, x, z) DO UPDATE SET at = greatest(spots.at, excluded.at),
			node = CASE WHEN excluded.at >= spots.at THEN excluded.node ELSE spots.node END`
	// sqlTrim keeps marks younger than JournalRetention whatever the
	// node's snapshot covers: a node that starts later replays them.
	sqlTrim = `DELETE FROM memory_journal WHERE region = $1 AND node = $2 AND seq <= $3 AND at < $4`
	// sqlTrimSpots deletes through spots_feed, (region, at).
	sqlTrimSpots = `DELETE FROM spots WHERE region = $1 AND at < $2`
)

// migrate brings the schema of the pool's search_path to SchemaVersion,
// under a transaction-scoped advisory lock so that nodes starting together
// migrate once: the others wait for the lock and find the work done.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if schema == nil {
			return errors.New("migrate: no schema of the search_path exists (create it, or set Options.Schema)")
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockSpace, *schema); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			one     boolean PRIMARY KEY DEFAULT true CHECK (one),
			version integer NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		have := 0
		switch err := tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&have); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("migrate: read version: %w", err)
		}
		if have > SchemaVersion {
			return fmt.Errorf("migrate: schema %s has version %d, newer than this build's %d", *schema, have, SchemaVersion)
		}
		if have == SchemaVersion {
			return nil
		}
		for v := have; v < SchemaVersion; v++ {
			for _, q := range migrations[v] {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("migrate %d to %d: %w", v, v+1, err)
				}
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET version = excluded.version`, SchemaVersion)
		if err != nil {
			return fmt.Errorf("migrate: write version: %w", err)
		}
		return nil
	})
}
