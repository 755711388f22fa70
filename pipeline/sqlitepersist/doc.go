// Package sqlitepersist keeps the locations table of the pipeline in an
// embedded SQLite database, through database/sql and
// github.com/mattn/go-sqlite3 (the project's SQLite driver, chosen by
// measurement for the terrain archive; see terrain/archive/sqlitestore).
//
// One DB holds the rows of every region; DB.Region binds a region name and
// a pipeline.Key and returns the pipeline.Persister of that region. The
// table:
//
//	locations(id INTEGER PRIMARY KEY, region, key, world, x, y, z, idx, n)
//	UNIQUE (region, key, world, x, y, z)
//
// n counts the copies of a location in the pipeline (two draws of one
// chunk give two), so each Remove undoes exactly one Add and a live copy
// never loses its row to another's removal. Rows come back in insertion
// order (id).
//
// # Writes
//
// Add and Remove are called on the pipeline's request paths, so they never
// wait for the database: they append to a queue (a mutex and a reused
// slice; no allocation in steady state) and one writer goroutine, owned by
// the DB, applies the queue in batches, one transaction per batch. Flush
// waits until everything queued before it is committed and returns the
// first write error since the previous Flush. The queue is bounded
// (Options.QueueLimit): when the database stalls long enough to fill it,
// further writes are dropped and counted (Stats.Dropped). A dropped Add
// loses a row (the location is not restored after a restart); a dropped
// Remove leaves a row whose location comes back as a cold entry and is
// verified again by its promotion. Neither is unsafe. Close flushes the
// queue, stops the writer and closes the database.
//
// # Connection
//
// As in sqlitestore: WAL journal with synchronous=NORMAL (a commit survives
// a process crash or SIGKILL; only a power loss may lose the last commits,
// never consistency) and a busy timeout, here on every connection through
// the DSN. The DB uses one connection: the writer and Load are serialized
// by database/sql.
//
// # Keys
//
// Load deletes the region's rows of any key but the bound one, in the same
// transaction that reads the rest, so locations verified under another
// seed or configuration never come back.
package sqlitepersist
