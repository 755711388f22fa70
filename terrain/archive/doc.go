// Package archive is a persistent, bounded, disposable cache of generated
// terrain tiles. Wrap puts an Archive in front of any terrain.Source; the
// records live in a Store (SQLite by default, PostgreSQL for fleets, memory
// for tests), whose contract is defined here and checked against every
// implementation by package archivetest.
//
// Identity. A record's key is the canonical encoding (see key.go) of the
// source's producer name and version, every field of its Params struct and
// every field of the terrain.Request, derived by reflection so that a new
// field changes identity without a hand-kept list. Stores index records by
// the key's SHA-256 (Digest) and keep the full key beside the payload.
//
// Validity. A hit needs the stored key to equal the request's byte for
// byte and the payload (see payload.go) to pass its CRC-32C checksum and
// every check of (*terrain.Tile).Validate against the request. Anything
// else is deleted, counted and generated again; no storage failure ever
// reaches a caller.
//
// Delivery. A generated tile is returned before it is written: one
// background writer per Archive applies queued writes, Flush waits for
// them, Clear starts a new epoch so that nothing generated earlier is
// written back, and Close drains the writer and closes the store, after
// which the Archive passes every request straight to its source.
package archive
