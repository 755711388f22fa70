package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Key identifies the configuration a region's locations were verified
// under. Rows carry it; a Persister drops rows of any other key of the same
// region on Load, so a changed seed or configuration never restores
// locations verified under the old one.
type Key string

// NewKey derives the key of a region from its seed and the canonical bytes
// of the configuration that decides what a valid location is (shape, world,
// safety rules, verifiers): "v1-" and 32 hex digits of SHA-256.
func NewKey(seed uint64, config []byte) Key {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h.Write([]byte("rtp/pipeline key v1\x00"))
	h.Write(b[:])
	h.Write(config)
	return Key("v1-" + hex.EncodeToString(h.Sum(nil)[:16]))
}

// Persister writes the locations table of one region under one Key (both
// bound when it is made). The pipeline calls Add at ingress into cold and
// Remove when a location leaves the pipeline (taken by a player, or
// disposed); internal movement calls neither.
//
// Add and Remove are called on request paths (a hot poll fires Remove):
// they must not block. Implementations queue the write and perform it on a
// goroutine of their own; Flush waits for the writes queued before it. A
// location may be added more than once (two draws of one chunk): rows count
// their copies, so each Remove undoes one Add.
//
// A row is cold or hot. Promotion marks a location's row hot (MarkHot)
// and its entry reaches its sink only once that is durable; a clean
// shutdown turns every hot row cold again. After an unclean one (the
// process was killed), Load discards the rows that were hot instead of
// restoring them, since their removal at hand-out may not have reached the
// disk (see Recovery).
//
// Implementations are safe for concurrent use.
type Persister interface {
	// Add records one copy of loc.
	Add(loc Location)
	// Remove forgets one copy of loc; removing an absent row does nothing.
	Remove(loc Location)
	// Load returns the rows of this region and key, one Location per
	// copy, after deleting the region's rows of any other key. The caller
	// owns the slice.
	Load(ctx context.Context) ([]Location, error)
	// Flush waits until every write queued before the call is durable, or
	// ctx ends. It returns the first write error since the last Flush.
	Flush(ctx context.Context) error
	// MarkHot queues marking loc's row hot (any copy, whatever its y) and
	// calls done once that is committed (nil) or the commit failed (the
	// error; the mark is still retried). done is called exactly once, on
	// a goroutine of the Persister or, once it is closed, at once; it must
	// not block. The pipeline's done delivers the promoted entry and may
	// queue writes (Add, Remove): call it holding no lock of the
	// Persister's. Marking an absent row does nothing but call done: with
	// nil, or, from a Persister shared by several nodes, with an error
	// wrapping ErrNotOwned (the row may have been handed out by another
	// node), as for a row another node owns.
	//
	// An urgent mark (its sink runs low) is committed within a few
	// milliseconds; the others may wait for the next batch of writes, a
	// tenth of a second or so. A commit costs much the same whatever
	// number of rows it carries, so marks that ride the batch cost the
	// disk a fraction of commits of a few marks each.
	MarkHot(loc Location, urgent bool, done func(error))
	// Recovery reports what Load found of the previous run; it is the
	// zero Recovery before Load.
	Recovery() Recovery
}
