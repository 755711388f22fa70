// Package memstore is an in-memory archive.Store: bounded by entries and
// bytes, least-recently-used eviction in O(1) per operation. It backs tests
// and runs that keep no archive on disk; its records vanish with the process.
package memstore

import (
	"bytes"
	"context"
	"sync"

	"github.com/rtpengine/rtp/terrain/archive"
)

// Store is an in-memory archive.Store. Create one with New; the zero value
// is not usable. A Store is safe for concurrent use.
type Store struct {
	mu     sync.Mutex // protects following fields
	lru    lru
	closed bool
}

var _ archive.Store = (*Store)(nil)

// New returns an empty store with the given limits (zero fields take the
// archive defaults).
func New(limits archive.Limits) *Store {
	s := new(Store)
	s.lru.init(limits.WithDefaults())
	return s
}

// begin checks ctx and the closed flag, and locks s on success.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return archive.ErrStoreClosed
	}
	return nil
}

// Get returns a copy of the record with digest d and makes it the most
// recently used.
func (s *Store) Get(ctx context.Context, d archive.Digest) (archive.Record, bool, error) {
	if err := s.begin(ctx); err != nil {
		return archive.Record{}, false, err
	}
	defer s.mu.Unlock()
	e := s.lru.get(d)
	if e == nil {
		return archive.Record{}, false, nil
	}
	return copyRecord(e.rec), true, nil
}

// Put stores a copy of r as the most recently used record, evicting the
// least recently used ones until both limits hold. A record larger than
// MaxBytes is ignored.
func (s *Store) Put(ctx context.Context, r archive.Record) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if r.Size() > s.lru.limits.MaxBytes {
		return nil
	}
	s.lru.put(copyRecord(r))
	return nil
}

// Delete removes the record with digest d, if any.
func (s *Store) Delete(ctx context.Context, d archive.Digest) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.lru.remove(d)
	return nil
}

// Clear removes every record.
func (s *Store) Clear(ctx context.Context) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.lru.init(s.lru.limits)
	return nil
}

// Scan calls fn with a copy of every record, from the least to the most
// recently used, without changing recency. fn runs without the store's lock
// held, on a snapshot taken when Scan starts; Scan stops early when ctx ends.
func (s *Store) Scan(ctx context.Context, fn func(archive.Record) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	snapshot := make([]archive.Record, 0, s.lru.len())
	for e := s.lru.head.newer; e != &s.lru.head; e = e.newer {
		snapshot = append(snapshot, e.rec) // records are immutable once stored
	}
	s.mu.Unlock()
	for _, r := range snapshot {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(copyRecord(r)); err != nil {
			return err
		}
	}
	return nil
}

// Stats reports the retained entries and bytes and the limits.
func (s *Store) Stats(ctx context.Context) (archive.StoreStats, error) {
	if err := s.begin(ctx); err != nil {
		return archive.StoreStats{}, err
	}
	defer s.mu.Unlock()
	return archive.StoreStats{Entries: int64(s.lru.len()), Bytes: s.lru.bytes, Limits: s.lru.limits}, nil
}

// Close releases the records. Later calls to other methods return
// archive.ErrStoreClosed; Close itself always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.lru.init(s.lru.limits)
	return nil
}

func copyRecord(r archive.Record) archive.Record {
	return archive.Record{Digest: r.Digest, Key: bytes.Clone(r.Key), Payload: bytes.Clone(r.Payload)}
}

// lru is the single-threaded core: a map from digest to entry plus a
// doubly-linked recency list (head.newer is the oldest, head.older the
// newest), so get, put and remove are O(1).
type lru struct {
	limits archive.Limits
	items  map[archive.Digest]*entry
	head   entry // sentinel
	bytes  int64
}

type entry struct {
	rec          archive.Record
	older, newer *entry
}

// init empties c and sets its limits. It works in place: the sentinel
// links point into c itself, so an lru must not be copied.
func (c *lru) init(l archive.Limits) {
	c.limits, c.items, c.bytes = l, make(map[archive.Digest]*entry), 0
	c.head.older, c.head.newer = &c.head, &c.head
}

func (c *lru) len() int { return len(c.items) }

func (c *lru) unlink(e *entry) {
	e.older.newer = e.newer
	e.newer.older = e.older
	e.older, e.newer = nil, nil
}

// pushNewest links e as the most recently used entry.
func (c *lru) pushNewest(e *entry) {
	last := c.head.older
	e.older, e.newer = last, &c.head
	last.newer = e
	c.head.older = e
}

func (c *lru) get(d archive.Digest) *entry {
	e := c.items[d]
	if e == nil {
		return nil
	}
	c.unlink(e)
	c.pushNewest(e)
	return e
}

func (c *lru) put(r archive.Record) {
	if e := c.items[r.Digest]; e != nil {
		c.bytes -= e.rec.Size()
		c.unlink(e)
		e.rec = r
		c.bytes += r.Size()
		c.pushNewest(e)
	} else {
		e := &entry{rec: r}
		c.items[r.Digest] = e
		c.bytes += r.Size()
		c.pushNewest(e)
	}
	// With a strict recency order there are no ties, so the list order is
	// the whole eviction order.
	for int64(len(c.items)) > c.limits.MaxEntries || c.bytes > c.limits.MaxBytes {
		c.remove(c.head.newer.rec.Digest)
	}
}

func (c *lru) remove(d archive.Digest) {
	e := c.items[d]
	if e == nil {
		return
	}
	c.unlink(e)
	delete(c.items, d)
	c.bytes -= e.rec.Size()
}
