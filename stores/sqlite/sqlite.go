// Package sqlite is the embedded implementation of stores.Stores: every
// store a file of the engine's data folder, what one engine on one machine
// needs and what a game server embedding the engine wants. It links
// SQLite and no other database:
//
//	<data>/rtp.db              locations of every region, their memory
//	                           journal and spots, and the network leases
//	                           (pipeline/sqlitepersist; leases through
//	                           lease/local, so that a token reserved
//	                           before a restart or a crash is redeemable
//	                           after it, and one redeemed never again)
//	<data>/claims.db           claims store (verify/claims/sqliteclaims)
//	<data>/archive.db          terrain archive of the first procedural
//	                           world, in name order
//	                           (terrain/archive/sqlitestore)
//	<data>/archive-<world>.db  the archive of every other procedural world
//	                           (beside the configured archive path: its
//	                           name without extension, "-<world>", and its
//	                           extension), since an archive store serves
//	                           one archive at a time
//
// (the names are the Config's, which the engine's Spec sets). A Spec that
// names a PostgreSQL database or archive, or a Redis for the leases, is
// refused: package stores/fleet opens those.
//
// The archives give way on a full disk at start (see OpenArchives).
package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rtpengine/rtp/lease"
	leaselocal "github.com/rtpengine/rtp/lease/local"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/sqliteclaims"
)

// Stores is the embedded stores.Stores. Its zero value is ready (it has no
// field: every setting is the Config's); it is safe for concurrent use.
type Stores struct{}

var _ stores.Stores = Stores{}

// ErrNotEmbedded is in the chain of the error of a Stores method given a
// Config that names a PostgreSQL database or archive, or a Redis for the
// leases.
var ErrNotEmbedded = errors.New("sqlite: not an embedded store (package stores/fleet opens PostgreSQL and Redis)")

// OpenArchives readies the SQLite archive files of worlds (see
// ArchivePath) on the disk as it is, before the database opens (see
// makeRoom): an archive under its free space floor opens read-only, and
// with less than 4 MiB free the archive files are removed, largest first,
// so that the locations database and the claims store can open and
// commit.
func (Stores) OpenArchives(ctx context.Context, cfg stores.Config, env stores.Env, worlds []string) (stores.Archives, error) {
	if cfg.Archive.URL != "" {
		return nil, fmt.Errorf("%w: the archive is in PostgreSQL (Archive.URL)", ErrNotEmbedded)
	}
	a := &archives{cfg: cfg.Archive, env: env, paths: make(map[string]string, len(worlds))}
	files := make([]string, len(worlds))
	for i, w := range worlds {
		files[i] = ArchivePath(cfg.Archive.Path, i, w)
		a.paths[w] = files[i]
	}
	a.readOnly, a.warnings = makeRoom(files, cfg.Archive, env.Logger)
	return a, nil
}

// ArchivePath returns the archive file of the n-th procedural world in
// name order (n from 0): p for the first, and beside it
// "<base>-<world><ext>" for the others (archive.db -> archive-<world>.db;
// ".db" when p has no extension).
func ArchivePath(p string, n int, world string) string {
	if n == 0 {
		return p
	}
	ext := filepath.Ext(p)
	if ext == "" {
		ext = ".db"
	}
	return strings.TrimSuffix(p, filepath.Ext(p)) + "-" + world + ext
}

// archives are the SQLite archives of an engine's procedural worlds.
type archives struct {
	cfg      stores.ArchiveSpec
	env      stores.Env
	paths    map[string]string // by world
	readOnly map[string]string // paths that open read-only, with why
	warnings []string
	found    []string // archives that held data when opened
}

func (a *archives) Open(ctx context.Context, world string) (archive.Store, error) {
	path, ok := a.paths[world]
	if !ok {
		return nil, fmt.Errorf("sqlite: no archive readied for world %q", world)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		a.found = append(a.found, path)
	}
	_, readOnly := a.readOnly[path]
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Limits: a.cfg.Limits, Logger: a.env.Logger,
		MinFreeBytes: a.cfg.MinFreeBytes, MinFreePercent: a.cfg.MinFreePercent, ReadOnly: readOnly})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a *archives) Warnings() []string { return a.warnings }

func (a *archives) Found() []string { return a.found }

// OpenDatabase opens the claims store at cfg.Claims, then the locations
// database at cfg.Database.
func (Stores) OpenDatabase(ctx context.Context, cfg stores.Config, env stores.Env) (stores.Database, error) {
	if cfg.Fleet.DatabaseURL != "" {
		return nil, fmt.Errorf("%w: the database is in PostgreSQL (Fleet.DatabaseURL)", ErrNotEmbedded)
	}
	cs, err := sqliteclaims.Open(ctx, cfg.Claims, sqliteclaims.Options{Options: claims.Options{Clock: env.Clock, Logger: env.Logger}})
	if err != nil {
		return nil, err
	}
	db, err := sqlitepersist.Open(ctx, cfg.Database, sqlitepersist.Options{Logger: env.Logger, Gate: env.Gate})
	if err != nil {
		_ = cs.Close()
		return nil, err
	}
	d := &database{db: db, claims: cs}
	if db.Fresh() {
		d.fresh = cfg.Database
	}
	return d, nil
}

// OpenLeases opens a lease/local store written through the leases table
// of the locations database, when db is one of this package's (or any
// that keeps a LeaseJournal); otherwise none.
func (Stores) OpenLeases(ctx context.Context, cfg stores.Config, env stores.Env, db stores.Database) (lease.Store, io.Closer, error) {
	if cfg.Fleet.LeasesURL != "" {
		return nil, nil, fmt.Errorf("%w: the leases are in Redis (Fleet.LeasesURL)", ErrNotEmbedded)
	}
	return LocalLeases(ctx, env, db)
}

// LocalLeases opens a lease/local store written through db's LeaseJournal,
// or returns none (nil) when db keeps no leases. The store needs no
// closing: it writes through the database, which the engine closes after
// its pipelines.
func LocalLeases(ctx context.Context, env stores.Env, db stores.Database) (lease.Store, io.Closer, error) {
	j := db.LeaseJournal()
	if j == nil {
		return nil, nil, nil
	}
	s, err := leaselocal.Open(ctx, j, leaselocal.Options{Clock: env.Clock})
	if err != nil {
		return nil, nil, fmt.Errorf("network leases: %w", err)
	}
	return s, nil, nil
}

// database is the SQLite locations database and claims store.
type database struct {
	db     *sqlitepersist.DB
	claims *claims.Store
	fresh  string
}

func (d *database) Region(name string, key pipeline.Key) (pipeline.Persister, error) {
	r, err := d.db.Region(name, key)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (d *database) Claims() *claims.Store { return d.claims }

func (d *database) Writes() stores.Writes { return stores.Writes(d.db.Stats()) }

func (d *database) Fresh() string { return d.fresh }

func (d *database) LeaseJournal() lease.Journal { return d.db.Leases() }

func (d *database) Fleet() stores.Fleet { return nil }

func (d *database) Close() error {
	return errors.Join(d.db.Close(), d.claims.Close())
}
