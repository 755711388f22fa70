// Package pgclaims keeps a claims store (package claims) in a PostgreSQL
// database that several rtp nodes share: a claim added or removed through
// one node is in force on every node.
//
// Open(ctx, connString, opts) keeps the claims in a PostgreSQL
// schema that every node of a fleet opens alike: Options.Schema, or the
// first existing schema of the connection's search_path. Schema
// version 1 (claims_meta.version = 1):
//
//	claims_meta(one = true, version, rev)  -- a single row
//	claims(id bigint GENERATED ALWAYS AS IDENTITY, world, owner,
//	       min_x, min_z, max_x, max_z, created timestamptz)
//
// Open creates the tables when the schema has neither, under
// pg_advisory_xact_lock on a hash of "rtp/verify/claims:" and the schema
// name, so nodes starting together migrate once (the others wait for the
// lock and find the tables); it refuses a claims table without
// claims_meta, and a newer version. Ids come from the identity column's
// sequence: unique across the nodes and never reused. A world or owner
// with a NUL byte, which SQLite stores, is refused here with
// claims.ErrInvalidClaim, since PostgreSQL text cannot hold it.
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
package pgclaims
