package claims

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
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

// sqliteBackend keeps the claims in an SQLite file that only its Store
// writes while it is open.
type sqliteBackend struct {
	db   *sql.DB
	path string
}

// Open opens the claims database at path, creating it and its directory if
// needed, and loads every claim into the index. It fails if the file is not
// a claims database or holds a row that is not a valid claim.
//
// A database that holds tables but no claims table belongs to another
// program: Open refuses it with an error that names its tables and wraps
// ErrNotClaimsDatabase, and writes nothing to it. Where there was no file,
// Open creates a new, empty store and logs so at info level on
// Options.Logger; an existing file that held no claims (0 bytes, or an
// SQLite database without tables) is adopted as an empty store with a
// warning there, since it may stand for claims that were lost.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("claims: open: empty path")
	}
	s := newStore(opts)
	b := &sqliteBackend{path: path}
	if err := b.open(ctx, s); err != nil {
		if b.db != nil {
			b.db.Close()
		}
		// Name the cause (a full disk, a read-only file) rather than
		// SQLite's "disk I/O error".
		return nil, fmt.Errorf("claims: open %s: %w", path, sqlitedb.Explain(path, err))
	}
	s.be = b
	return s, nil
}

func (b *sqliteBackend) open(ctx context.Context, s *Store) error {
	state, err := probe(ctx, b.path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	db, err := sqlitedb.Open(ctx, b.path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	b.db = db
	// Create the table in a new database, or check the version of an
	// existing one.
	if err := sqlitedb.InitSchema(ctx, b.db, "claims", schemaVersion, schema); err != nil {
		return err
	}
	claims, err := b.list(ctx, "")
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := s.load(0, claims); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	switch log := s.opts.Logger; state {
	case fileMissing:
		log.Info("claims: created a new, empty claims store", "path", b.path)
	case fileEmpty:
		log.Warn("claims: the claims database was an existing 0-byte file; starting an empty claims store in it", "path", b.path)
	case fileNoTables:
		log.Warn("claims: the claims database held no tables; starting an empty claims store in it", "path", b.path)
	}
	return nil
}

func (b *sqliteBackend) insert(ctx context.Context, c Claim) (change, error) {
	res, err := b.db.ExecContext(ctx, sqlInsert, c.World, c.Owner, c.MinX, c.MinZ, c.MaxX, c.MaxZ, c.Created.UnixMilli())
	if err != nil {
		return change{}, err
	}
	if c.ID, err = res.LastInsertId(); err != nil {
		return change{}, err
	}
	return change{id: c.ID, add: &c}, nil
}

func (b *sqliteBackend) remove(ctx context.Context, id int64) (change, bool, error) {
	res, err := b.db.ExecContext(ctx, sqlDelete, id)
	if err != nil {
		return change{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return change{}, false, err
	}
	return change{id: id}, n > 0, nil
}

func (b *sqliteBackend) list(ctx context.Context, world string) ([]Claim, error) {
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
	var out []Claim
	for rows.Next() {
		var c Claim
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

func (b *sqliteBackend) shared() bool { return false }

func (b *sqliteBackend) close() error { return b.db.Close() }
