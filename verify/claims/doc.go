// Package claims is the built-in claims store: rectangles of land held by an
// owner, kept by a back end (the embedded SQLite database of package
// sqliteclaims, or a PostgreSQL database that several rtp nodes share, of
// package pgclaims), mirrored in an in-memory spatial index, and the
// verifier (source "claims") that rejects any landing place inside a
// claim.
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
// validation of Add, the locking and ErrClosed are this package's, and
// the back end (the Backend interface: Insert, Remove, List, Close) only
// stores rows. A back end's package opens its database, reads every
// claim, and makes the Store with New (a private back end: one process
// writes the rows) or NewShared (several stores write them; the back end
// keeps the index up to date with the others' writes through the
// Mirror, in revision order). This package links no database driver: a
// program links the back end it opens. database/sql with two dialects
// was not chosen: the SQL is the small part, while what differs is
// around it (SQLite's probe of a foreign file before writing;
// PostgreSQL's advisory-locked migration, revision row and LISTEN, which
// needs a pgx connection of its own that database/sql does not expose),
// and the rest of the project reaches PostgreSQL through pgx already.
//
// Every back end passes the same contract (package claimstest).
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
