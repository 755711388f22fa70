package pgpersist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ListNodes reads the nodes of the fleet whose tables live in schema of
// the database of dsn (schema "": the connection's search_path), like
// DB.Nodes, for a reader that is not a node: it opens a pool of one
// connection, neither migrates the schema nor registers a node, and
// closes the pool before it returns. A database where no node has opened
// yet (no schema_version table, or a schema that does not exist) has no
// nodes: ListNodes returns none and no error. A schema newer than
// SchemaVersion is an error, since its rows may mean something else.
func ListNodes(ctx context.Context, dsn string, schema string) ([]NodeInfo, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: list nodes: %w", err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: list nodes: %w", err)
	}
	defer pool.Close()
	version, err := readSchemaVersion(ctx, pool)
	switch {
	case err != nil:
		return nil, fmt.Errorf("pgpersist: list nodes: %w", err)
	case version == 0:
		return nil, nil
	case version > SchemaVersion:
		return nil, fmt.Errorf("pgpersist: list nodes: schema version %d is newer than this build's %d", version, SchemaVersion)
	}
	out, err := queryNodes(ctx, pool, version)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: list nodes: %w", err)
	}
	return out, nil
}

// readSchemaVersion returns the version of the schema of the search_path:
// 0 when it has no schema_version table, or no row in it (a migration
// that has not committed yet).
func readSchemaVersion(ctx context.Context, q querier) (int, error) {
	var present bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&present); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !present {
		return 0, nil
	}
	var version int
	switch err := q.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return version, nil
}

// querier is what the node queries need of a pool or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queryNodes reads every node's row, by name, with the rows it owns, from
// a schema of the given version (at least 1): version 1 has neither
// software nor regions, which are then empty.
func queryNodes(ctx context.Context, q querier, version int) ([]NodeInfo, error) {
	extra := `'', '{}'::text[]`
	if version >= 2 {
		extra = `n.software, n.regions`
	}
	rows, err := q.Query(ctx, `SELECT n.name, n.version, n.state, n.started, n.heartbeat, n.expires,
			n.state = 'running' AND n.expires > now(),
			count(l.id), count(l.id) FILTER (WHERE l.hot), `+extra+`, now()
		FROM nodes n LEFT JOIN locations l ON l.owner = n.name
		GROUP BY n.name ORDER BY n.name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (NodeInfo, error) {
		var n NodeInfo
		err := row.Scan(&n.Name, &n.Version, &n.State, &n.Started, &n.Heartbeat, &n.Expires, &n.Live,
			&n.Owned, &n.Hot, &n.Software, &n.Regions, &n.AsOf)
		if n.Regions == nil {
			n.Regions = []string{}
		}
		return n, err
	})
}

// HeartbeatAge returns how long ago the node last renewed its lease, on
// the database's clock.
func (n NodeInfo) HeartbeatAge() time.Duration { return n.AsOf.Sub(n.Heartbeat) }

// ExpiresIn returns how long the node's lease has left, on the database's
// clock: negative once it has lapsed (or the node closed).
func (n NodeInfo) ExpiresIn() time.Duration { return n.Expires.Sub(n.AsOf) }
