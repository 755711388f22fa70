// Package pgstore is the archive.Store for fleets: one PostgreSQL schema
// shared by every rtp process of a network, through
// github.com/jackc/pgx/v5 (pgxpool). Limits are exact and least-recently-
// used order is global however many Stores write at once.
//
// # Layout
//
// In Options.Schema (default rtp_archive; created if missing, so tests and
// several archives use schemas of their own):
//
//	meta(id = 1, version, entries, bytes)          -- schema version and counters
//	recency                                        -- a sequence: the global LRU clock
//	records(digest bytea PRIMARY KEY, size, recency, key, payload)
//	records_lru ON records(recency, digest) INCLUDE (size)
//
// Open creates the schema with CREATE ... IF NOT EXISTS inside one
// transaction holding pg_advisory_xact_lock on a key derived from the
// schema name, so Stores of a fleet starting together do not race; in the
// same transaction it checks the version, compares the counters with
// COUNT/SUM (repairing and logging a difference) and trims to its Limits.
//
// # Writes: one serialisation point
//
// Every write transaction (Put, Delete, Clear) starts with SELECT ... FOR
// UPDATE on the meta row. That row lock serialises every write of every
// Store on the schema, so the counters it holds are read and written by
// one transaction at a time, and the limit-enforcement step of a Put (find
// the least recently used records, ORDER BY recency, digest, and delete
// the shortest prefix that brings both limits back) runs alone. Put is one
// statement for the upsert (a data-modifying CTE that also returns the
// replaced size, read from the statement's snapshot), then batches of 64
// candidates, each deleted with one DELETE ... = ANY(...) RETURNING size.
// Drift guard: if a delete removes fewer rows than chosen, or candidates
// run out while the counters exceed a limit, the counters are recounted
// from COUNT/SUM (logged) and eviction goes on from the true figures; a
// second disagreement is an error, so the loop ends. An advisory lock was
// the alternative; the row lock keeps the counters and the lock in one
// place and is released by the database with the transaction.
//
// Writes are serialised fleet-wide, which bounds write throughput to one
// transaction at a time per archive; archive writes are opportunistic and
// never delay a tile, so this buys exactness cheaply.
//
// # Reads: recency committed with the read
//
// Get is one statement, UPDATE ... SET recency = nextval(...) WHERE digest
// = $1 RETURNING key, payload: the hit's recency is committed before Get
// returns, so an eviction in any process afterwards sees it. The sequence
// makes the LRU order global and total across the fleet. Batching touches
// in memory, as the SQLite store does, was rejected here: another process's
// eviction could not see them. The update rewrites only the row's small
// inline part; the TOASTed payload is not copied. A read therefore needs
// write access to the database.
//
// # Bounds
//
// Open is bounded by OpenTimeout (default 1 s): connecting, pinging and
// the schema transaction. Each storage transaction, once it holds one of
// MaxConcurrentTx (default 8) slots of its Store, is bounded by TxTimeout
// (default 5 s), which includes waiting for the meta row lock behind other
// writers of the fleet; time waiting for a slot does not count. The
// connection pool has MaxConcurrentTx connections. A transaction that runs
// out of TxTimeout fails with an error that does not wrap
// context.DeadlineExceeded (a storage failure); a caller's own cancelled or
// expired ctx is returned wrapped.
//
// Scan reads in digest order, in pages of 64 records or 8 MiB, each its
// own statement, and calls fn between pages; a record present for the
// whole Scan is visited exactly once.
//
// # Tests
//
// The tests need a server: they run when RTP_TEST_POSTGRES is set (CI:
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable) and skip
// otherwise. Each uses a fresh schema with a random name and drops it at
// the end. TestSeveralWriters runs four Stores on one schema writing at
// once and checks limits and counters against COUNT/SUM.
package pgstore
