// Package memstore is an in-memory archive.Store: bounded by entries and
// bytes, least-recently-used eviction in O(1) per operation. It backs tests
// and runs that keep no archive on disk; its records vanish with the process.
package memstore

import (
	"bytes"
	"context"
	"sync"

	"github.com/rtpengine/rtp/internal/lru"
	"github.com/rtpengine/rtp/terrain/archive"
)

// Store is an in-memory archive.Store. Create one with New; the zero value
// is not usable. A Store is safe for concurrent use.
type Store struct {
	mu     sync.Mutex // protects following fields
	lru    records
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
	r, ok := s.lru.m.Get(d)
	if !ok {
		return archive.Record{}, false, nil
	}
	return copyRecord(r), true, nil
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
	for _, r := range s.lru.m.All() {
		snapshot = append(snapshot, r) // records are immutable once stored
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

// records is the single-threaded core: an lru.Map from digest to record in
// recency order, the byte total and the limits. The zero value holds no
// records and zero limits; init sets them.
type records struct {
	limits archive.Limits
	m      lru.Map[archive.Digest, archive.Record]
	bytes  int64
}

// init empties c and sets its limits.
func (c *records) init(l archive.Limits) { *c = records{limits: l} }

func (c *records) len() int { return c.m.Len() }

func (c *records) put(r archive.Record) {
	if old, replaced := c.m.Put(r.Digest, r); replaced {
		c.bytes -= old.Size()
	}
	c.bytes += r.Size()
	// With a strict recency order there are no ties, so the list order is
	// the whole eviction order.
	for int64(c.m.Len()) > c.limits.MaxEntries || c.bytes > c.limits.MaxBytes {
		_, old, _ := c.m.RemoveOldest()
		c.bytes -= old.Size()
	}
}

func (c *records) remove(d archive.Digest) {
	if old, ok := c.m.Remove(d); ok {
		c.bytes -= old.Size()
	}
}
