package claims

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"

	"github.com/rtpengine/rtp/verify"
)

// Source is the verifier source name of the claims store: the name its
// rejections carry in stats and the key of its entry in ttl.yml's
// verifiers section.
const Source = "claims"

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

// ErrClosed is returned by Add, Remove and List once the store is closed.
var ErrClosed = errors.New("claims: closed")

// Store is the claims store: the claims table of an SQLite database and
// its in-memory spatial index. Open one with Open; the zero value is not
// usable.
//
// A Store is safe for concurrent use. Contains (and the verifier) reads the
// index under a read lock and never waits for the database; Add, Remove and
// List are serialized with each other. After Close, Contains keeps
// answering from the claims in force at the time.
type Store struct {
	db   *sql.DB
	path string
	opts Options

	wmu sync.Mutex // serializes Add, Remove, List and Close: database, then index
	// wmu protects the following field.
	closed bool

	mu sync.RWMutex // protects the following field (writers also hold wmu)
	ix *index
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
	s := &Store{path: path, opts: opts.withDefaults(), ix: newIndex()}
	if err := s.open(ctx); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, fmt.Errorf("claims: open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	state, err := probe(ctx, s.path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	db, err := sqlitedb.Open(ctx, s.path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	s.db = db
	if err := s.initSchema(ctx); err != nil {
		return err
	}
	claims, err := s.query(ctx, "")
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	for i := range claims {
		c := &claims[i]
		if c.ID <= 0 {
			return fmt.Errorf("load: claim with id %d", c.ID)
		}
		if err := c.check(0); err != nil {
			return fmt.Errorf("load: claim %d: %w", c.ID, err)
		}
		s.ix.add(c)
	}
	switch log := s.opts.Logger; state {
	case fileMissing:
		log.Info("claims: created a new, empty claims store", "path", s.path)
	case fileEmpty:
		log.Warn("claims: the claims database was an existing 0-byte file; starting an empty claims store in it", "path", s.path)
	case fileNoTables:
		log.Warn("claims: the claims database held no tables; starting an empty claims store in it", "path", s.path)
	}
	return nil
}

// initSchema creates the table in a new database, or checks the version of
// an existing one.
func (s *Store) initSchema(ctx context.Context) error {
	return sqlitedb.InitSchema(ctx, s.db, "claims", schemaVersion, schema)
}

// Add validates c, stores it and puts it in force. It returns the claim as
// stored, with its ID and Created set. A claim that fails validation
// (empty or over-long world or owner, a minimum above its maximum, a side
// longer than Options.MaxSide, a non-zero ID, a Created time outside the
// years 1970 to 9999) gets an error listing every
// problem, in whose chain is ErrInvalidClaim. Overlapping claims are
// allowed.
func (s *Store) Add(ctx context.Context, c Claim) (Claim, error) {
	err := c.check(s.opts.MaxSide)
	if c.ID != 0 {
		err = errors.Join(err, fmt.Errorf("%w: ID %d is assigned by the store; leave it zero", ErrInvalidClaim, c.ID))
	}
	if y := c.Created.Year(); !c.Created.IsZero() && (y < 1970 || y > 9999) {
		err = errors.Join(err, fmt.Errorf("%w: Created %v is outside the years 1970 to 9999", ErrInvalidClaim, c.Created))
	}
	if err != nil {
		return Claim{}, err
	}
	if c.Created.IsZero() {
		c.Created = s.opts.Clock()
	}
	c.Created = time.UnixMilli(c.Created.UnixMilli()).UTC() // as stored

	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return Claim{}, ErrClosed
	}
	res, err := s.db.ExecContext(ctx, sqlInsert, c.World, c.Owner, c.MinX, c.MinZ, c.MaxX, c.MaxZ, c.Created.UnixMilli())
	if err != nil {
		return Claim{}, fmt.Errorf("claims: add: %w", err)
	}
	if c.ID, err = res.LastInsertId(); err != nil {
		return Claim{}, fmt.Errorf("claims: add: %w", err)
	}
	stored := c
	s.mu.Lock()
	s.ix.add(&stored)
	s.mu.Unlock()
	return c, nil
}

// Remove deletes the claim with the given id and reports whether there was
// one. From then on its land is no longer claimed; places the verifier
// rejected for it come back as their memory expires.
func (s *Store) Remove(ctx context.Context, id int64) (bool, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	res, err := s.db.ExecContext(ctx, sqlDelete, id)
	if err != nil {
		return false, fmt.Errorf("claims: remove %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claims: remove %d: %w", id, err)
	}
	s.mu.Lock()
	c := s.ix.remove(id)
	s.mu.Unlock()
	if (n > 0) != (c != nil) {
		// Only this store writes the table while it is open.
		return n > 0, fmt.Errorf("claims: remove %d: the database and the index disagree (rows %d, indexed %t)", id, n, c != nil)
	}
	return n > 0, nil
}

// List returns the claims of world in id order (of every world when world
// is empty), read from the database. The caller owns the slice.
func (s *Store) List(ctx context.Context, world string) ([]Claim, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	cs, err := s.query(ctx, world)
	if err != nil {
		return nil, fmt.Errorf("claims: list: %w", err)
	}
	return cs, nil
}

func (s *Store) query(ctx context.Context, world string) ([]Claim, error) {
	var rows *sql.Rows
	var err error
	if world == "" {
		rows, err = s.db.QueryContext(ctx, sqlListAll)
	} else {
		rows, err = s.db.QueryContext(ctx, sqlListWorld, world)
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

// Contains returns the claim containing the block (x, z) of world, the one
// with the lowest id when several overlap there. It reads the in-memory
// index under a read lock: no I/O, no allocation.
func (s *Store) Contains(world string, x, z int64) (Claim, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c := s.ix.lookup(world, x, z, false); c != nil {
		return *c, true
	}
	return Claim{}, false
}

// Claimed reports whether any claim contains the block (x, z) of world. It
// is Contains without finding which claim, and a little faster.
func (s *Store) Claimed(world string, x, z int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.lookup(world, x, z, true) != nil
}

// Len returns the number of claims in force.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.len()
}

// Verifier returns the sync verifier of the store, for
// verify.Registry.Register(claims.Source, ...): it rejects a location
// inside any claim of its world (at any height). It is safe for concurrent
// calls, does no I/O and does not allocate.
func (s *Store) Verifier() func(verify.Location) bool {
	return func(l verify.Location) bool { return !s.Claimed(l.World, l.X, l.Z) }
}

// Register registers the store's verifier with reg under Source.
func (s *Store) Register(reg *verify.Registry) error {
	return reg.Register(Source, s.Verifier())
}

// Close closes the database. Add, Remove and List then return ErrClosed;
// Contains and the verifier keep answering from the claims in force. Close
// is idempotent.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("claims: close: %w", err)
	}
	return nil
}
