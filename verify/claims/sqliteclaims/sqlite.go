package sqliteclaims

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/verify/claims"
)

// schemaVersion is the PRAGMA user_version this package writes.
const schemaVersion = 1

var schema = []string{
	`CREATE TABLE claims (
		id      INTEGER PRIMARY KEY AUTOINCREMENT,
		world   TEXT NOT NULL CHECK (world <> ''),
		owner   TEXT NOT NULL CHECK (owner <> ''),
		min_x   INTEGER NOT NULL,
		min_z   INTEGER NOT NULL,
		max_x   INTEGER NOT NULL,
		max_z   INTEGER NOT NULL,
		created INTEGER NOT NULL,
		CHECK (min_x <= max_x AND min_z <= max_z)
	)`,
	`CREATE INDEX claims_world ON claims (world, id)`,
}

const (
	sqlInsert    = `INSERT INTO claims (world, owner, min_x, min_z, max_x, max_z, created) VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlDelete    = `DELETE FROM claims WHERE id = ?`
	sqlColumns   = `SELECT id, world, owner, min_x, min_z, max_x, max_z, created FROM claims`
	sqlListAll   = sqlColumns + ` ORDER BY id`
	sqlListWorld = sqlColumns + ` WHERE world = ? ORDER BY id`
)

// Options configure a store opened by Open. The zero value selects every
// default.
type Options struct {
	claims.Options
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process. Default DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// DefaultBusyTimeout is the default of Options.BusyTimeout.
const DefaultBusyTimeout = 5 * time.Second

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	err := o.Options.Validate()
	if o.BusyTimeout < 0 {
		err = errors.Join(err, fmt.Errorf("sqliteclaims: BusyTimeout %v is negative", o.BusyTimeout))
	}
	return err
}

// backend keeps the claims in an SQLite file that only its Store writes
// while it is open.
type backend struct {
	db   *sql.DB
	path string
}

// Open opens the claims database at path, creating it and its directory if
// needed, and loads every claim into the index. It fails if the file is not
// a claims database or holds a row that is not a valid claim.
//
// A database that holds tables but no claims table belongs to another
// program: Open refuses it with an error that names its tables and wraps
// claims.ErrNotClaimsDatabase, and writes nothing to it. Where there was
// no file, Open creates a new, empty store and logs so at info level on
// Options.Logger; an existing file that held no claims (0 bytes, or an
// SQLite database without tables) is adopted as an empty store with a
// warning there, since it may stand for claims that were lost.
func Open(ctx context.Context, path string, opts Options) (*claims.Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("sqliteclaims: open: empty path")
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	copts := opts.Options.WithDefaults()
	b := &backend{path: path}
	s, err := b.open(ctx, opts.BusyTimeout, copts)
	if err != nil {
		if b.db != nil {
			b.db.Close()
		}
		// Name the cause (a full disk, a read-only file) rather than
		// SQLite's "disk I/O error".
		return nil, fmt.Errorf("claims: open %s: %w", path, sqlitedb.Explain(path, err))
	}
	return s, nil
}

func (b *backend) open(ctx context.Context, busy time.Duration, opts claims.Options) (*claims.Store, error) {
	state, err := probe(ctx, b.path, busy)
	if err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(ctx, b.path, busy)
	if err != nil {
		return nil, err
	}
	b.db = db
	// Create the table in a new database, or check the version of an
	// existing one.
	if err := sqlitedb.InitSchema(ctx, b.db, "claims", schemaVersion, schema); err != nil {
		return nil, err
	}
	all, err := b.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	s, err := claims.New(b, all, opts)
	if err != nil {
		return nil, err
	}
	switch log := opts.Logger; state {
	case fileMissing:
		log.Info("claims: created a new, empty claims store", "path", b.path)
	case fileEmpty:
		log.Warn("claims: the claims database was an existing 0-byte file; starting an empty claims store in it", "path", b.path)
	case fileNoTables:
		log.Warn("claims: the claims database held no tables; starting an empty claims store in it", "path", b.path)
	}
	return s, nil
}

func (b *backend) Insert(ctx context.Context, c claims.Claim) (claims.Change, error) {
	res, err := b.db.ExecContext(ctx, sqlInsert, c.World, c.Owner, c.MinX, c.MinZ, c.MaxX, c.MaxZ, c.Created.UnixMilli())
	if err != nil {
		return claims.Change{}, err
	}
	if c.ID, err = res.LastInsertId(); err != nil {
		return claims.Change{}, err
	}
	return claims.Change{ID: c.ID, Add: &c}, nil
}

func (b *backend) Remove(ctx context.Context, id int64) (claims.Change, bool, error) {
	res, err := b.db.ExecContext(ctx, sqlDelete, id)
	if err != nil {
		return claims.Change{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return claims.Change{}, false, err
	}
	return claims.Change{ID: id}, n > 0, nil
}

func (b *backend) List(ctx context.Context, world string) ([]claims.Claim, error) {
	var rows *sql.Rows
	var err error
	if world == "" {
		rows, err = b.db.QueryContext(ctx, sqlListAll)
	} else {
		rows, err = b.db.QueryContext(ctx, sqlListWorld, world)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claims.Claim
	for rows.Next() {
		var c claims.Claim
		var created int64
		if err := rows.Scan(&c.ID, &c.World, &c.Owner, &c.MinX, &c.MinZ, &c.MaxX, &c.MaxZ, &created); err != nil {
			return nil, err
		}
		c.Created = time.UnixMilli(created).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

func (b *backend) Close() error { return b.db.Close() }
