// Package claims is the built-in claims store: rectangles of land held by an
// owner, kept in the embedded SQLite database (Open) or in a PostgreSQL
// database that several rtp nodes share (OpenPostgres), mirrored in an
// in-memory spatial index, and the verifier (source "claims") that rejects
// any landing place inside a claim.
//
// # Claims and the spatial memory
//
// A rejection by this verifier is a safetyExternal rejection attributed to
// the source "claims": memory.AddBad(index, memory.CauseSafetyExternal,
// result.Source). Its time to live is ttl.yml's verifiers.claims, else
// causes.safetyExternal, else 14 days, so claimed places sit in the
// dynamic tier. Removing a claim needs no reset of the spatial memory: the
// places it covered expire, go on probation (selectable again) and come
// back into circulation; if the claim is still there when a place on
// probation is drawn, the verifier rejects it again and the memory
// restores the whole run at once.
//
// The verifier is in-process and does no I/O (an index lookup under a read
// lock), so unlike an out-of-process callback it is not extrinsic. That
// holds for both back ends: with PostgreSQL too the verifier reads only the
// index and never waits on the network.
//
// # Back ends
//
// A Store is the same type whichever back end it has: the index, the
// validation of Add, the locking and ErrClosed are shared, and the back
// end (a small internal interface: insert, remove, list, close) only
// stores rows. database/sql with two dialects was not chosen: the SQL is
// the small part, while what differs is around it (SQLite's probe of a
// foreign file before writing; PostgreSQL's advisory-locked migration,
// revision row and LISTEN, which needs a pgx connection of its own that
// database/sql does not expose), and the rest of the project reaches
// PostgreSQL through pgx already.
//
// # SQLite
//
// The store owns one SQLite database file (by convention
// rtp-data/claims.db), opened as the project's other SQLite stores are
// (see pipeline/sqlitepersist): WAL journal, synchronous=NORMAL, a busy
// timeout on the connection, one connection. Schema version 1
// (PRAGMA user_version = 1):
//
//	claims(id INTEGER PRIMARY KEY AUTOINCREMENT, world, owner,
//	       min_x, min_z, max_x, max_z, created)
//
// Coordinates are block coordinates, both corners inclusive. created is in
// Unix milliseconds. AUTOINCREMENT keeps ids unique for the life of the
// file, so the id of a removed claim never names another one.
//
// Add and Remove write synchronously: each commits its row before it
// updates the index and returns, so a claim that Add returned survives a
// crash and is in force at once. (The queued writer of sqlitepersist suits
// writes on request paths that must not wait; claims change on the admin
// path, whose caller needs the committed id.) Open loads every row into
// the index and checks it.
//
// # PostgreSQL
//
// OpenPostgres(ctx, connString, opts) keeps the claims in a PostgreSQL
// schema that every node of a fleet opens alike: Options.Schema, or the
// first existing schema of the connection's search_path. Schema
// version 1 (claims_meta.version = 1):
//
//	claims_meta(one = true, version, rev)  -- a single row
//	claims(id bigint GENERATED ALWAYS AS IDENTITY, world, owner,
//	       min_x, min_z, max_x, max_z, created timestamptz)
//
// OpenPostgres creates the tables when the schema has neither, under
// pg_advisory_xact_lock on a hash of "rtp/verify/claims:" and the schema
// name, so nodes starting together migrate once (the others wait for the
// lock and find the tables); it refuses a claims table without
// claims_meta, and a newer version. Ids come from the identity column's
// sequence: unique across the nodes and never reused. A world or owner
// with a NUL byte, which SQLite stores, is refused here with
// ErrInvalidClaim, since PostgreSQL text cannot hold it.
//
// Every write is one transaction that first increments claims_meta.rev
// (the row lock orders the writers, so revisions are dense and commit in
// order), then inserts or deletes the row, then sends
// pg_notify(channel, change) with the revision and the claim or id; the
// notification goes out at commit, or not at all. The channel is named
// after a hash of the schema, so stores of other schemas on the same
// database do not hear each other. A removal that finds nothing rolls
// back and uses no revision.
//
// Each store keeps its own index, and the writer's store puts its change
// in force when the commit returns, as with SQLite. The others learn it
// from one dedicated connection per store (outside the pool) that
// LISTENs on the channel: the change is in force on every other node a
// notification's delivery after the commit, a few milliseconds on one
// machine (TestPostgresPropagation measures and logs the delay from the
// call of Add or Remove on one store to the change in force on another:
// over six runs of 40 changes under the race detector, medians of 0.6 to
// 2 ms and a worst case of 13 ms, far under the one second the package
// promises). A notification that does not follow the index's revision
// reveals a lost one and reloads every claim (in one REPEATABLE READ
// snapshot with the revision). As a fallback, when no notification came
// for Options.ResyncInterval (default 2 s) the follower reads the
// revision and reloads if it moved. Own writes whose notification has not
// come back yet stay in force through a reload of an older snapshot, and
// a write that another node's later change undid before the writer
// applied it is not brought back.
//
// When the following connection breaks, the store keeps answering from
// the index as it was, logs one warning, and reconnects with back-off
// (100 ms doubling to 5 s, with jitter); once connected it LISTENs again,
// reloads every claim (the notifications of the outage are lost) and
// logs one info record with the outage's length and the attempts. The
// failed attempts in between are not logged. Add, Remove and List use
// the pool and fail while the database is away. Close stops the follower
// and closes its connection and the pool before it returns.
//
// The revision must only grow: a database restored from a backup with an
// older revision is not noticed until the revision passes the one the
// nodes had, so restart the nodes after a restore.
//
// The tests of this back end run when RTP_TEST_POSTGRES holds a server's
// URL (for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable), each in a
// schema of its own that it drops; without it they skip and say so.
//
// # Index
//
// Contains answers from memory, without allocating. The index is a
// hierarchical grid per world: level k has square cells of 2^(4+2k) blocks
// (16, 64, 256, ...), and a claim lives in the lowest level whose cell edge
// is at least its longer side, so it overlaps at most 2x2 cells of that
// level whatever its size. A lookup visits one cell in each level that
// holds a claim (claims of 8 to 2,048 blocks use five levels) and scans the
// few claims listed there. Add and Remove touch at most four cells.
//
// Design note: a single uniform grid was rejected because a claim much
// larger than a cell fills many cells (a 4,096-block claim covers 65,536
// cells of 16 blocks), and one with large cells puts many small claims in
// one cell; an R-tree or a sorted interval structure would be rebuilt or
// rebalanced on every change and is more code for no gain at these sizes.
// Levels a factor 2 apart cost a third more per lookup than a factor 4
// (more levels to visit); a factor 8 gained nothing more (BenchmarkContains).
package claims
