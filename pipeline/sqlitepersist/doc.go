// Package sqlitepersist keeps the locations table of the pipeline in an
// embedded SQLite database, through database/sql and the project's SQLite
// driver, which internal/sqlitedb registers (pure Go; docs/sqlite-driver.md
// says which and why).
//
// One DB holds the rows of every region; DB.Region binds a region name and
// a pipeline.Key and returns the pipeline.Persister of that region. The
// tables:
//
//	spaces(id INTEGER PRIMARY KEY, region, key, world)  UNIQUE (region, key, world)
//	locations(space, x, z, y, seq, idx, n, hot)  PRIMARY KEY (space, x, z, y) WITHOUT ROWID
//
// n counts the copies of a location in the pipeline (two draws of one
// chunk give two), so each Remove undoes exactly one Add and a live copy
// never loses its row to another's removal. Rows come back in insertion
// order (seq, which the writer numbers). A space stands for a region, a
// key and a world, so that a row's key is four integers: the writes of a
// hand-out (a hot mark, a removal) each find their row in one b-tree
// without comparing strings, and a commit writes one page per row it
// changes, where a table with a rowid and a separate unique index wrote
// two. BenchmarkLifecycle and BenchmarkServeMix measure it.
//
// # Hot rows, runs and the journal
//
// A row is hot (column hot) from the commit of its MarkHot, which
// promotion waits for before its entry reaches a sink. The writer commits
// urgent hot marks (their sink runs low) without BatchDelay, each waiting
// HotDelay for the marks that follow it, in small transactions of their
// own rows: the other writes wait for their batch, so that a row change
// of a busy table is not written once per mark. The other hot marks ride
// the batch. The meta row "state" is "running" from Open to Close, which
// after its final commit turns every hot row cold and writes "clean". An
// Open that finds "running" (the last process was killed) deletes the hot
// rows, which may have been handed out after the last commit, logs how
// many, and reports them by region (Region.Recovery).
//
// Region also implements pipeline.Journal through the same writer and
// transactions: memory_journal(seq, region, idx, cause, source, at) holds
// the rejections recorded since the memory file was saved (Trim deletes
// those a save covers) and spots(seq, region, x, z, at) the columns handed
// out: a log, appended to at each claim, of which reading keeps a
// column's latest time, indexed by (region, at) so that TrimSpots deletes
// from its old end. Schema version 2 added the journal, version 3 the
// spaces and the log, and version 4 the leases; Open upgrades a database
// of any earlier version in one transaction, which changes nothing if it
// fails.
//
// # Network leases
//
// DB.Leases is a lease.Journal over leases(token, lease, expires, forget,
// redeemed), in which a single node's lease/local store keeps its network
// leases and the tokens redeemed. Unlike the locations' writes, each of
// its writes is a transaction of its own, committed before the call
// returns: the network sink answers a reservation or a redemption only
// once it is on disk, so that after a restart or a SIGKILL a redeemed
// token is still refused and a reserved one still redeemable.
//
// # Writes
//
// Add and Remove are called on the pipeline's request paths, so they never
// wait for the database: they compose the write into the pending change
// of its row (a mutex and a reused map and slice; no allocation in steady
// state) and one writer goroutine, owned by the DB, commits the pending
// changes in batches, one transaction per batch. Writes to one row
// coalesce: any run of them comes down to some Removes followed by some
// Adds, so an Add undone by a Remove before either is committed costs
// nothing (Stats.Coalesced), and the memory held is one change per row,
// however many writes. Rows inserted afresh still get ids in the order of
// their Adds. Flush waits until everything queued before it is committed.
// The queue and the writer are pipeline/internal/rowqueue, shared with
// pgpersist; this package gives them the commit of a batch in one SQLite
// transaction.
//
// The pending work is bounded (Options.QueueLimit, in rows; at most twice
// that is held, half gathering while the writer commits the other half).
// Past the bound the oldest rows are dropped and counted (Stats.Dropped),
// with a log line at most once a minute; Add and Remove never block. A
// dropped Add loses a row (the location is not restored after a
// restart); a dropped Remove leaves a row whose location comes back as a
// cold entry and is verified again by its promotion. Neither is unsafe.
//
// # Failures
//
// A batch that fails to commit (a full disk, an I/O error, a lock held
// past the busy timeout) is kept, and the writes queued meanwhile merge
// into it. The writer tries again after Options.RetryMin (100 ms), doubling
// the wait with each failure up to Options.RetryMax (10 s), less a random
// part of up to half; Flush asks for a try at once. So once the disk has
// room again no write is lost, other than those past the bound. The log
// holds a warning with the error at the first failure, at most one line a
// minute while the failures go on (how many, how much is pending), and one
// line "writes resumed after N failures, T" at the first commit that works
// again. Stats tells the same: Failures, Retries, Failing, LastError.
//
// Flush returns an error when the commit it asked for failed (the writes
// are kept and retried), and nil once they are committed: a failure that
// was recovered from is not reported later, by Flush or by Close. Close
// commits what is pending, once; if that fails it gives the writes up and
// returns an error that says how many were lost.
//
// # Connection
//
// internal/sqlitedb opens the database; a data directory or database file
// that cannot be written fails Open with an error that says so. As in
// sqlitestore: WAL journal with synchronous=NORMAL (a commit survives
// a process crash or SIGKILL; only a power loss may lose the last commits,
// never consistency) and a busy timeout, set on every connection as it is
// opened. The DB uses one connection: the writer and Load are serialized
// by database/sql.
//
// # Keys
//
// Load deletes the region's rows of any key but the bound one, in the same
// transaction that reads the rest, so locations verified under another
// seed or configuration never come back.
package sqlitepersist
