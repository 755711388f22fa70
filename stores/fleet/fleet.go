// Package fleet is the implementation of stores.Stores that rtp serve
// uses: the embedded stores of package stores/sqlite, and the stores a
// fleet of engines shares wherever the engine's Spec names them:
//
//   - FleetSpec.DatabaseURL: the locations of every region with their
//     memory journal and spots (pipeline/pgpersist) and the claims
//     (verify/claims/pgclaims) in that PostgreSQL database, instead of
//     rtp.db and claims.db;
//   - FleetSpec.LeasesURL: the network leases in that Redis (lease/redis),
//     so that a token reserved through one node is redeemed through any
//     other;
//   - ArchiveSpec.URL: the terrain archives in PostgreSQL schemas of that
//     database (terrain/archive/pgstore), instead of files.
//
// It links SQLite, PostgreSQL (pgx) and Redis (go-redis); a program that
// needs neither PostgreSQL nor Redis picks package stores/sqlite and links
// neither.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/stores/sqlite"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/pgstore"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/pgclaims"
)

// Stores is the fleet's stores.Stores. Its zero value is ready (it has no
// field: every setting is the Config's); it is safe for concurrent use.
type Stores struct{}

var _ stores.Stores = Stores{}

// OpenArchives readies the archives in the PostgreSQL database of
// cfg.Archive.URL (see ArchiveSchema), or else sqlite.Stores'.
func (Stores) OpenArchives(ctx context.Context, cfg stores.Config, env stores.Env, worlds []string) (stores.Archives, error) {
	if cfg.Archive.URL == "" {
		return sqlite.Stores{}.OpenArchives(ctx, cfg, env, worlds)
	}
	a := &pgArchives{cfg: cfg.Archive, env: env, schemas: make(map[string]string, len(worlds))}
	for i, w := range worlds {
		a.schemas[w] = ArchiveSchema(cfg.Archive.Schema, i, w)
	}
	return a, nil
}

// ArchiveSchema returns the PostgreSQL schema of the n-th procedural
// world's archive in name order (n from 0): base for the first, and
// "<base>_<world>" for the others, cut to PostgreSQL's 63 bytes. An
// archive store serves one archive at a time, so every procedural world
// has its own.
func ArchiveSchema(base string, n int, world string) string {
	if n == 0 {
		return base
	}
	s := base + "_" + world
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// pgArchives are the archives of an engine's procedural worlds in
// PostgreSQL schemas.
type pgArchives struct {
	cfg     stores.ArchiveSpec
	env     stores.Env
	schemas map[string]string // by world
}

func (a *pgArchives) Open(ctx context.Context, world string) (archive.Store, error) {
	schema, ok := a.schemas[world]
	if !ok {
		return nil, fmt.Errorf("fleet: no archive readied for world %q", world)
	}
	s, err := pgstore.Open(ctx, a.cfg.URL, pgstore.Options{Limits: a.cfg.Limits, Schema: schema, Logger: a.env.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Warnings returns nil: a shared archive is not the data folder's.
func (a *pgArchives) Warnings() []string { return nil }

// Found returns nil: a shared archive holding data says nothing of this
// node's data folder.
func (a *pgArchives) Found() []string { return nil }

// OpenDatabase opens the claims and then the locations in the PostgreSQL
// database of cfg.Fleet.DatabaseURL, with this node registered under
// env.Node; or else sqlite.Stores'.
func (Stores) OpenDatabase(ctx context.Context, cfg stores.Config, env stores.Env) (stores.Database, error) {
	if cfg.Fleet.DatabaseURL == "" {
		return sqlite.Stores{}.OpenDatabase(ctx, cfg, env)
	}
	// A fleet's claims are shared: what one node adds is in force on
	// every node.
	cs, err := pgclaims.Open(ctx, cfg.Fleet.DatabaseURL, pgclaims.Options{Options: claims.Options{Clock: env.Clock, Logger: env.Logger}})
	if err != nil {
		return nil, err
	}
	db, err := pgpersist.Open(ctx, cfg.Fleet.DatabaseURL, pgpersist.Options{
		Node:     env.Node,
		LeaseTTL: cfg.Fleet.NodeLease,
		// Sweep often: a dead node's claims come back a tenth of a lease
		// after its lease lapses.
		SweepEvery: max(cfg.Fleet.NodeLease/10, 100*time.Millisecond),
		Logger:     env.Logger,
		Software:   env.Software,
	})
	if err != nil {
		_ = cs.Close()
		return nil, err
	}
	return &database{db: db, claims: cs}, nil
}

// OpenLeases opens the lease store in the Redis of cfg.Fleet.LeasesURL
// (see openRedis), or else sqlite.LocalLeases: a single node's leases in
// its SQLite database, and none for a node on PostgreSQL (its network
// sinks keep their leases in memory).
func (Stores) OpenLeases(ctx context.Context, cfg stores.Config, env stores.Env, db stores.Database) (lease.Store, io.Closer, error) {
	if cfg.Fleet.LeasesURL == "" {
		return sqlite.LocalLeases(ctx, env, db)
	}
	return openRedis(ctx, cfg.Fleet.LeasesURL)
}

// database is a fleet's PostgreSQL database: the locations and the
// claims.
type database struct {
	db     *pgpersist.DB
	claims *claims.Store
}

var _ stores.Fleet = (*database)(nil)

func (d *database) Region(name string, key pipeline.Key) (pipeline.Persister, error) {
	r, err := d.db.Region(name, key)
	if err != nil {
		return nil, err
	}
	return sharedRegion{r}, nil
}

func (d *database) Claims() *claims.Store { return d.claims }

func (d *database) Writes() stores.Writes {
	st := d.db.Stats()
	return stores.Writes{Pending: st.Pending, Written: st.Written, Coalesced: st.Coalesced, Dropped: st.Dropped,
		Failures: st.Failures, Retries: st.Retries, Failing: st.Failing, LastError: st.LastError}
}

func (d *database) Fresh() string { return "" }

func (d *database) LeaseJournal() lease.Journal { return nil }

func (d *database) Fleet() stores.Fleet { return d }

// Close gives the node's rows back to the fleet and records a clean stop
// (see pgpersist.DB.Close), then closes the claims.
func (d *database) Close() error {
	return errors.Join(d.db.Close(), d.claims.Close())
}

func (d *database) Node() string { return d.db.Node() }

func (d *database) LeaseUntil() time.Time { return d.db.LeaseUntil() }

func (d *database) LeaseLost() bool { return d.db.Stats().LeaseLost }

func (d *database) Listen(ctx context.Context, notify func(region string), connected func(bool)) error {
	return d.db.Listen(ctx, notify, connected)
}

func (d *database) Ping(ctx context.Context) error { return d.db.Ping(ctx) }

func (d *database) LiveNodes(ctx context.Context, region string) ([]string, error) {
	return d.db.LiveNodes(ctx, region)
}

// sharedRegion is a region's pgpersist.Region (its Persister, Journal and
// strict hot marks) with the fleet side of stores.SharedRegion.
type sharedRegion struct{ *pgpersist.Region }

var (
	_ pipeline.Persister  = sharedRegion{}
	_ pipeline.Journal    = sharedRegion{}
	_ stores.SharedRegion = sharedRegion{}
)

func (r sharedRegion) Follow(ctx context.Context) (stores.Feed, error) {
	c, err := r.FeedStart(ctx)
	if err != nil {
		return nil, err
	}
	return &feed{r: r.Region, c: c}, nil
}

func (r sharedRegion) ClaimPool(ctx context.Context, n int) ([]pipeline.Location, error) {
	locs, err := r.ClaimCold(ctx, n)
	if errors.Is(err, pgpersist.ErrLeaseLost) {
		return nil, fmt.Errorf("%w: %w", stores.ErrLeaseLost, err)
	}
	return locs, err
}

// feed is one reader's cursor on a region's feed.
type feed struct {
	r *pgpersist.Region
	c *pgpersist.Cursor
}

// Next reads at most pgpersist.FeedLimit marks: more reports a full read.
func (f *feed) Next(ctx context.Context) ([]pipeline.Mark, []pipeline.Spot, bool, error) {
	marks, spots, err := f.r.Feed(ctx, f.c)
	if err != nil {
		return nil, nil, false, err
	}
	return marks, spots, len(marks) >= pgpersist.FeedLimit, nil
}
