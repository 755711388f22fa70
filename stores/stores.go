// Package stores declares where an engine keeps its state, and nothing
// more: the locations database (with the memory journal, the placement
// spots and the claims), the terrain archives of the procedural worlds,
// and the network leases. Package engine takes a Stores in its Spec and
// links no database driver of its own; the program picks the
// implementation, and links only what it picks:
//
//   - package stores/sqlite: the files of the data folder (SQLite rows,
//     claims and archives, network leases in the rows' database), what a
//     game server embedding the engine wants;
//   - package stores/fleet: those, and PostgreSQL and Redis wherever the
//     Spec names their URLs (FleetSpec, ArchiveSpec.URL), what rtp serve
//     uses.
//
// An implementation opens what the Config names and refuses, with an
// error naming the package to pick instead, what it cannot open: the
// choice between SQLite and PostgreSQL is the Spec's, and the program's
// is only which drivers it links.
//
// The engine calls a Stores in this order, each step once: OpenArchives
// (unless the archives are disabled), OpenDatabase, OpenLeases, then
// Archives.Open for each procedural world. It closes what they returned
// at shutdown, once its pipelines are closed: the lease store's Closer,
// the archive stores (through the archive that wraps each), then the
// database.
package stores

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/verify/claims"
)

// Stores opens the stores of an engine. Implementations are plain values
// (package engine compares the Stores of two Specs as it compares their
// other fields: an equal value is the same stores) and safe for
// concurrent use; what they open is the engine's to close.
type Stores interface {
	// OpenArchives readies the terrain archives of the procedural worlds
	// named in worlds (in the engine's order, by name), before any other
	// store opens: an archive, the largest and only disposable store, may
	// give room on a full disk to the database opened next (see package
	// stores/sqlite). The stores themselves open later, with
	// Archives.Open. The engine does not call it when
	// cfg.Archive.Disabled is set.
	OpenArchives(ctx context.Context, cfg Config, env Env, worlds []string) (Archives, error)
	// OpenDatabase opens the locations database and the claims store.
	OpenDatabase(ctx context.Context, cfg Config, env Env) (Database, error)
	// OpenLeases opens the network lease store the engine's network sinks
	// share; db is the database OpenDatabase returned. A nil store (and
	// closer) means none: each network sink then keeps its leases in its
	// own process's memory. The engine closes the returned Closer, when
	// not nil, once its pipelines are closed (the leases stay in the
	// store, for other nodes to redeem).
	OpenLeases(ctx context.Context, cfg Config, env Env, db Database) (lease.Store, io.Closer, error)
}

// Config is what an engine's Spec says of its stores, resolved by the
// engine: paths in its data folder, defaults filled in. It is a plain
// value.
type Config struct {
	// Database is the path of the SQLite locations database
	// (engine.Spec.Database), used when Fleet.DatabaseURL is empty.
	Database string
	// Claims is the path of the SQLite claims database (engine.ClaimsFile
	// in the data folder), used when Fleet.DatabaseURL is empty.
	Claims string
	// Fleet says where the state a fleet shares lives.
	Fleet FleetSpec
	// Archive is the terrain archive of the procedural worlds.
	Archive ArchiveSpec
}

// FleetSpec says where the state shared by the nodes of a fleet lives
// (see docs/fleet.md). Each URL is optional: an empty one keeps that part
// local. It is engine.Spec's Fleet.
type FleetSpec struct {
	// DatabaseURL is a PostgreSQL connection URL ("postgres://..."). When
	// set, the locations, the memory journal, the placement spots and the
	// claims live there instead of in the SQLite files, shared by every
	// node on that database. Default "": SQLite in the data folder.
	DatabaseURL string
	// LeasesURL is a Redis URL ("redis://..."). When set, network leases
	// live there, so a token reserved through one node can be redeemed
	// through any other. Default "": a single node's (DatabaseURL "")
	// in its locations database, where a reservation and a redemption
	// outlive a restart or a crash; a fleet node's in its process's
	// memory.
	LeasesURL string
	// Node names this engine among the fleet's nodes; one process at a
	// time per name. Default: the host name, a dash and a random suffix,
	// drawn by the engine (Env.Node).
	Node string
	// NodeLease is how long a node's claims on shared locations outlive
	// its last heartbeat: a node that dies has its claims returned to the
	// pool this long after. Default engine.DefaultNodeLease.
	NodeLease time.Duration
}

// ArchiveSpec is the terrain archive: the store of the tiles the
// procedural worlds generate (see package archive), an SQLite file per
// world or a PostgreSQL schema per world. The zero value selects the
// defaults. It is engine.Spec's Archive.
type ArchiveSpec struct {
	// Disabled runs without an archive: terrain is generated every time
	// it is needed. Default false.
	Disabled bool
	// Path of the archive database; a relative path is in the engine's
	// data folder. The first procedural world (by name) uses it, each
	// other one a file beside it ("archive-<world>.db"). Default
	// engine.DefaultArchive.
	Path string
	// Limits bound the tiles kept. Default: archive's defaults.
	Limits archive.Limits
	// URL is a PostgreSQL connection URL: when set, the tiles live in that
	// database (package pgstore), shared by the nodes of a fleet, instead
	// of the file at Path. Default "".
	URL string
	// Schema is the PostgreSQL schema of the first procedural world's
	// archive (URL only); each other one is in "<Schema>_<world>".
	// Fleets sharing one database keep apart by it. At most 63 bytes.
	// Default engine.DefaultArchiveSchema.
	Schema string
	// MinFreeBytes and MinFreePercent make the free space floor of the
	// archive file's disk (see sqlitestore.Options): under it, the archive
	// stores nothing and gives back space to the files beside it. Defaults
	// sqlitestore's (256 MiB, 5%); negative drops that bound.
	MinFreeBytes   int64
	MinFreePercent float64
}

// Env is what an engine lends the stores it opens. It is a plain value,
// which the engine fills in full.
type Env struct {
	// Logger receives the stores' log lines. Never nil.
	Logger *slog.Logger
	// Clock tells the time to the claims store and the network leases.
	// Never nil.
	Clock func() time.Time
	// Gate is the engine's refill gate (see pacer.Gate), through which
	// an embedded database's writer paces its transactions. nil: none.
	Gate *pacer.Gate
	// Software names the program's version, recorded for a fleet's status.
	Software string
	// Node is the engine's name among a fleet's nodes: FleetSpec.Node, or
	// one the engine drew.
	Node string
}

// Database is an open locations database: the rows of every region's
// locations with their memory journal and placement spots, and the claims
// store beside them (in the same PostgreSQL database, or a file of its
// own). It is safe for concurrent use.
type Database interface {
	// Region returns the Persister of the locations of the region named
	// name, under key (see pipeline.Persister). It also implements
	// pipeline.Journal when the database journals the region's memory,
	// and SharedRegion when the database is a Fleet's.
	Region(name string, key pipeline.Key) (pipeline.Persister, error)
	// Claims returns the claims store. The Database closes it, after the
	// locations.
	Claims() *claims.Store
	// Writes returns the counters of the locations writer.
	Writes() Writes
	// Fresh names the database when it was new or empty at open, for the
	// engine's warning that a data folder which served before lost it;
	// "" otherwise, and always for a fleet's.
	Fresh() string
	// LeaseJournal returns where a single node's network leases are kept
	// across restarts (see lease/local), or nil when the database keeps
	// none.
	LeaseJournal() lease.Journal
	// Fleet returns the database's fleet side, or nil when one engine
	// owns the database.
	Fleet() Fleet
	// Close closes the locations, then the claims store.
	Close() error
}

// Writes are the counters of a locations writer (see
// engine.LocationWrites, whose fields are these). The zero value is a
// writer that wrote nothing.
type Writes struct {
	Pending   int
	Written   uint64
	Coalesced uint64
	Dropped   uint64
	Failures  uint64
	Retries   uint64
	Failing   bool
	LastError string
}

// Fleet is the side of a locations database that several engines, the
// nodes of a fleet, share: each row is owned by at most one node, under a
// lease the node renews (see docs/fleet.md). It is safe for concurrent
// use.
type Fleet interface {
	// Node returns the node's name.
	Node() string
	// LeaseUntil returns until when the node's claims on rows are surely
	// its own.
	LeaseUntil() time.Time
	// LeaseLost reports that the node's lease lapsed: until it rejoins,
	// at its next heartbeat, it claims and promotes nothing.
	LeaseLost() bool
	// Listen calls notify with the region of every feed notification (a
	// node committed marks or spots of the region) until ctx ends,
	// reconnecting when its connection breaks; connected is called with
	// true each time it listens and false each time it lost its
	// connection. notify must not block. It returns ctx's error.
	Listen(ctx context.Context, notify func(region string), connected func(up bool)) error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
	// LiveNodes returns the names of the live nodes serving the region,
	// in the order that ranks their shares of its chunks.
	LiveNodes(ctx context.Context, region string) ([]string, error)
}

// SharedRegion is the fleet side of a region's Persister on a Fleet's
// database. It is safe for concurrent use.
type SharedRegion interface {
	// Follow starts reading the region's feed from now on: the marks and
	// spots the other nodes commit. What a journal replay just before
	// Follow read may be read again, which is harmless.
	Follow(ctx context.Context) (Feed, error)
	// ClaimPool claims at most n rows of the shared pool (the rows of
	// nodes that stopped or died) for this node and returns their
	// locations. Once the node's lease is lost its errors wrap
	// ErrLeaseLost.
	ClaimPool(ctx context.Context, n int) ([]pipeline.Location, error)
}

// Feed reads a region's feed for one reader (see SharedRegion.Follow): one
// goroutine at a time calls Next.
type Feed interface {
	// Next returns the marks and spots committed by other nodes since the
	// last call, and whether more may wait past a read's bound (then the
	// caller calls again to catch up).
	Next(ctx context.Context) (marks []pipeline.Mark, spots []pipeline.Spot, more bool, err error)
}

// ErrLeaseLost is in the chain of the errors of a Fleet's region once the
// node's lease was lost.
var ErrLeaseLost = errors.New("stores: the node's lease was lost")

// Archives are the terrain archives of an engine's procedural worlds,
// readied by OpenArchives. The engine calls Open from one goroutine, for
// each world once, before it calls Warnings and Found, which may then be
// called concurrently.
type Archives interface {
	// Open opens the archive store of the world named world, one of those
	// OpenArchives was given. On error the world runs without an archive
	// (its archive logs why, once).
	Open(ctx context.Context, world string) (archive.Store, error)
	// Warnings returns what OpenArchives did that an operator should
	// know, one line each, nil when nothing: what a full disk made of an
	// archive (read-only, or removed to make room).
	Warnings() []string
	// Found names the archives that held data when Open opened them:
	// traces that the data folder served before.
	Found() []string
}
