// Package sqliteclaims keeps a claims store (package claims) in an SQLite
// file that one process writes.
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
package sqliteclaims
