// Package sqlitestore is the embedded archive.Store: one SQLite database
// file (by default rtp-data/archive.db, chosen by the caller), bounded by
// entries and payload bytes with exact least-recently-used eviction, safe
// for concurrent use by one process or several sharing the file.
//
// # Layout
//
// Schema version 1 (PRAGMA user_version = 1):
//
//	records(id INTEGER PRIMARY KEY, digest BLOB UNIQUE, size, recency, key, payload)
//	records_lru ON records(recency, digest, size)   -- covers eviction and COUNT/SUM
//	meta(id = 1, entries, bytes, seq)               -- counters and the recency sequence
//
// size is Record.Size (key plus payload). recency is a strictly increasing
// sequence drawn from meta.seq inside write transactions, so LRU order is
// total and deterministic (ties, which cannot occur, would fall to digest).
// A rowid table keeps blobs in overflow pages and the small columns first,
// so neither the LRU index nor COUNT/SUM reads a blob page; a WITHOUT ROWID
// table was rejected because its b-tree pages would hold 64 KB rows.
//
// # Concurrency
//
// All writes (Put, Delete, Clear, recency updates) are executed by one
// goroutine that owns the only writing connection; callers hand it an
// operation and wait for its result or their ctx. Get, Scan and Stats use
// a pool of read-only (mode=ro, query_only) connections; in WAL mode they
// never wait for the writer. A semaphore of MaxConcurrentTx (default 8)
// slots is shared by reads and writes: every storage transaction, including
// the writer's, takes a slot first, and its TxTimeout (default 5 s) starts
// only once it holds one, so time spent waiting for admission is not
// charged to the transaction. Open is bounded by OpenTimeout (default 1 s).
// SQLite's busy wait cannot see a context, so the writing connection's
// busy_timeout is set to the time Open has left, then to TxTimeout; every
// write begins with BEGIN IMMEDIATE, so writers of other processes queue on
// the database lock instead of failing to upgrade a read lock.
//
// A transaction that runs out of TxTimeout fails with an error that does
// not wrap context.DeadlineExceeded (it is a storage failure, which the
// archive counts and regenerates around); a caller's own cancelled or
// expired ctx is returned wrapped, so errors.Is(err, ctx.Err()) holds.
//
// # Recency updates from reads
//
// A hit does not write. Get queues the digest in a buffer of pending
// touches before it returns, and the writer applies them, in the order the
// hits happened (a digest hit twice counts at its later hit), as the first
// step of a write transaction. The precise rule:
//
//   - every write transaction (Put, Delete, and the recency flush itself)
//     first applies every pending touch, in the same transaction: at least
//     every touch queued before the operation was handed to the writer, so
//     an eviction decision sees every hit that returned before Put was
//     called;
//   - with no write, pending touches are applied TouchDelay (default 50 ms)
//     after the first of them, or at once when 256 are pending;
//   - Close applies what is pending; Clear drops it (there is nothing left
//     to touch);
//   - a transaction that fails puts its touches back, behind none of the
//     newer ones, and the next write applies them first.
//
// The limits are therefore exact: only writes evict, and a write sees
// every earlier hit of this process. Across processes sharing a file, a
// hit becomes visible to another process's evictions within TouchDelay.
// Writing the recency on every hit was rejected: it turns every read into
// a write transaction (one WAL commit, measured 225 K instructions with
// the chosen driver, more than four 64 KB reads) and makes reads queue
// behind the single writer.
//
// # Limits, counters and their drift guard
//
// Put inserts or replaces the record with the next recency, then deletes
// the least recently used other records, ORDER BY recency, digest, until
// both Limits hold, all in one transaction; a record larger than MaxBytes
// is not stored. Of each batch of candidates it deletes the shortest
// prefix that brings both limits back, one DELETE per record. The
// counters live in meta and change in the same transactions as the rows,
// so Stats is one indexed read. They are guarded against drift: deletes
// that remove fewer records than chosen, or candidates that run out while
// the counters still exceed a limit, make the writer recount from
// COUNT/SUM (logging the repair) and continue from the true figures; a
// second disagreement in one transaction is an error, so the loop always
// ends. Open compares the counters with COUNT/SUM and repairs
// them (logged), and trims the store to its Limits.
//
// # Durability: WAL with synchronous=NORMAL
//
// A transaction is committed once its frames are in the WAL file, which is
// written with write(2) before COMMIT returns; the WAL is synced at
// checkpoints. A process crash or SIGKILL therefore loses nothing that was
// committed: the data is in the kernel's page cache and reaches the file.
// Only a power loss or kernel crash can lose the last commits, and even then
// the database stays consistent (SQLite's WAL recovery discards an
// incomplete tail). synchronous=FULL would add an fsync to every commit to
// protect those last commits against power loss, for a cache whose every
// record can be regenerated: rejected. TestSIGKILL re-executes the test
// binary as a writer, kills it with SIGKILL at random moments six times, and
// checks integrity_check, counters against COUNT/SUM, every row against its
// key, and that the last acknowledged write survived.
//
// # Opening and damaged files
//
// Open creates missing parent directories, reads the header and schema
// version before writing anything (so a foreign or newer file is left as
// it is), runs PRAGMA quick_check, switches to WAL and creates the schema in
// one BEGIN IMMEDIATE transaction (concurrent openers do not race). Any
// failure is one error "sqlitestore: open PATH: REASON", for example
// "sqlitestore: open rtp-data/archive.db: file is not a database" or
// "...: database disk image is malformed: quick_check: ...". quick_check
// reads every page (measured 0.35-0.46 s for 512 MiB with a warm page
// cache), so it gets QuickCheckBudget (default half of OpenTimeout): a
// check that finds damage fails Open, one cut short by its budget is logged
// and Open goes on, so a large archive stays usable; damage it did not
// reach surfaces later as storage errors on the records it affects.
//
// # Driver: github.com/ncruces/go-sqlite3, by measurement
//
// The SQLite driver is the one internal/sqlitedb registers:
// github.com/ncruces/go-sqlite3, pure Go (SQLite compiled to Wasm and
// translated to Go), so the module builds with CGO_ENABLED=0 and without a
// C compiler. It replaced the cgo driver github.com/mattn/go-sqlite3 after
// interleaved runs of this package's benchmarks, the archive's and
// sqlitepersist's against it and modernc.org/sqlite: it was as fast or
// faster on reads and persistence and within 5% on BenchmarkStorePut, and
// allocates half as much per 64 KB read (database/sql no longer copies a
// blob the driver copied out of C). docs/sqlite-driver.md has the table and
// the commands. An earlier comparison counted user-space instructions
// (callgrind), where mattn executed the fewest; the choice rests on time
// and allocation in the store, measured on one machine in one run.
//
// # Reads through a memory map
//
// SQLite reads a blob's overflow pages with one pread(2) each (16 for
// 64 KB with 4 KiB pages; counted with strace). With PRAGMA mmap_size on the
// read connections they become memory copies: in the driver benchmark,
// interleaved runs, a 64 KB read went from 224 µs to 131 µs (-42%, p=0.002,
// n=6) and a 200 KB read from 882 µs to 484 µs. In the store itself the
// gain was within the shared machine's noise (BenchmarkStoreRead against
// BenchmarkStoreReadNoMmap: 135 against 139 µs, then 157 against 200 µs;
// strace: 0.2 against 1.8 preads per Get, the page cache serving the rest),
// and it costs nothing measurable elsewhere. Read connections therefore
// map up to MmapSize (default 1 GiB, the ceiling of the driver's SQLite); the
// writing connection does not. The file only grows (no VACUUM, no
// auto_vacuum), so a mapping never outlives the file's end.
//
// # Benchmarks
//
// BenchmarkStoreRead is the raw Get of one 64 KB record from a store of
// 256; package archive pairs it with its hit benchmark over a Store from
// Open. BenchmarkBareSelect is the floor (the same prepared SELECT with no
// admission, bound or touch); BenchmarkStoreReadNoMmap the map's
// comparison; BenchmarkStorePut a write with one eviction.
//
// # Scan
//
// Scan reads records in digest order in pages (64 records or 8 MiB, each
// page one read transaction) and calls fn between pages, outside any
// transaction: a record present for the whole Scan is visited exactly
// once, and a long Scan holds neither a connection nor a slot while fn
// runs.
package sqlitestore
