// Package claims is the built-in claims store: rectangles of land held by an
// owner, kept in the embedded SQLite database and mirrored in an in-memory
// spatial index, and the verifier (source "claims") that rejects any
// landing place inside a claim.
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
// lock), so unlike an out-of-process callback it is not extrinsic.
//
// # Database
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
