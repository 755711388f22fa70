package archive

import (
	"context"
	"errors"
)

// Digest is the SHA-256 of a record's full canonical key. Stores index by it;
// a digest match alone never makes a record valid (the archive compares the
// full key and validates the payload).
type Digest [32]byte

// Record is one archived tile as a store holds it.
//
// Key is the full canonical input (request, parameters, producer namespace
// and version). Payload is the encoded tile with its checksum. A store treats
// both as opaque bytes: it neither parses nor validates them.
type Record struct {
	Digest  Digest
	Key     []byte
	Payload []byte
}

// Size is the number of bytes the record counts against a store's byte
// limit: the payload plus the key.
func (r Record) Size() int64 { return int64(len(r.Key) + len(r.Payload)) }

// StoreStats is what a store retains.
type StoreStats struct {
	Entries int64 // records retained
	Bytes   int64 // sum of Record.Size over retained records
	Limits  Limits
}

// Limits bound a store. A zero field means the store's default.
type Limits struct {
	MaxEntries int64 // default 65,536
	MaxBytes   int64 // default 4 GiB
}

// Default limits.
const (
	DefaultMaxEntries = 65536
	DefaultMaxBytes   = 4 << 30
)

// WithDefaults returns l with zero fields replaced by the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// ErrStoreClosed is returned by every Store method called after Close.
var ErrStoreClosed = errors.New("archive: store closed")

// Store persists records, bounded by entries and bytes with least-recently-
// used eviction. Implementations are safe for concurrent use.
//
// Contract (checked by package archivetest against every implementation):
//   - Get returns the record with that digest and true, or false when there
//     is none. A hit makes the record the most recently used (the update may
//     be batched, but must be applied before any later eviction decision
//     that could observe it). The returned slices belong to the caller.
//   - Put inserts or replaces the record, makes it the most recently used,
//     and evicts least-recently-used records until both limits hold, all in
//     one transaction: after Put returns, Entries <= MaxEntries and
//     Bytes <= MaxBytes. A record larger than MaxBytes is not stored (Put
//     returns nil and the store is unchanged, even when it holds a record
//     with the same digest). Eviction
//     order is deterministic: least recently used first, ties by digest.
//   - Delete removes the record if present (no error when absent).
//   - Clear removes every record.
//   - Scan calls fn for every record in an unspecified order, stopping at the
//     first error fn returns (which Scan returns). fn must not call the store.
//   - Stats reports what is retained; Entries and Bytes match the records.
//   - Recency is a strict order of operations (a counter, not a clock), so
//     eviction follows exactly the order of the last Put or Get of each
//     record. A store that can only stamp coarsely breaks ties by ascending
//     digest. Scan, Stats and a Get that misses change no recency.
//   - Methods that block honour ctx. A method called with a ctx that is
//     already done returns an error wrapping ctx.Err() and changes nothing
//     (Scan calls no fn). After Close, every method returns ErrStoreClosed;
//     Close is idempotent: later calls return nil.
//   - Errors other than ErrStoreClosed and ctx errors are storage failures:
//     the archive counts them and regenerates; it never fails a request.
type Store interface {
	Get(ctx context.Context, d Digest) (Record, bool, error)
	Put(ctx context.Context, r Record) error
	Delete(ctx context.Context, d Digest) error
	Clear(ctx context.Context) error
	Scan(ctx context.Context, fn func(Record) error) error
	Stats(ctx context.Context) (StoreStats, error)
	Close() error
}
