package meshcache

import (
	"sync"

	"github.com/rtpengine/rtp/terrain/mesh"
)

// Record is what Restore returns: a fresh value the caller owns, holding
// the cached mesh (shared, not copied) and its source.
type Record struct {
	Mesh   *mesh.Mesh
	Source string
}

// Entry describes one cached entry in a Snapshot.
type Entry struct {
	Key    string
	Source string
}

// Snapshot is a detached description of a Cache: the caller owns it, later
// cache operations do not change it, and it holds no mesh reference.
type Snapshot struct {
	Count   int     // number of entries
	Entries []Entry // oldest first, newest last; never nil
	// RetainedBytes is the sum of mesh.Mesh.Bytes over the entries, as
	// measured when each was stored.
	RetainedBytes int64
}

// Cache is a bounded least-recently-used cache of full-quality terrain
// meshes, keyed by tile key.
//
// The zero value is an empty cache ready to use; New returns one too. A
// Cache is safe for concurrent use by multiple goroutines and must not be
// copied after first use. Keys and sources are kept as given (Go strings
// are immutable, so this is a copy; clone a key sliced from a large buffer
// to avoid pinning it). Cached meshes are shared: nobody may modify a mesh
// after storing it.
type Cache struct {
	mu sync.Mutex
	// mu protects the following fields.
	l cache
}

// New returns an empty cache.
func New() *Cache { return new(Cache) }

// admissible reports whether an entry of m from source may be cached.
func admissible(m *mesh.Mesh, source string) bool {
	return m != nil && m.TriangleCount() > 0 && m.Quality != mesh.Low && Admitted(source)
}

// Store caches m from source under key as the newest entry, replacing any
// entry key already had, then evicts oldest entries until at most capacity
// remain (all of them when capacity <= 0).
//
// It returns false, changing nothing, when key is empty, m is nil, has no
// triangles or is mesh.Low, or source is not Admitted; and false, after
// emptying the cache, when capacity <= 0. Otherwise it returns true.
func (c *Cache) Store(key string, m *mesh.Mesh, source string, capacity int) bool {
	if key == "" || !admissible(m, source) {
		return false
	}
	size := m.Bytes()
	c.mu.Lock()
	ok := c.l.store(key, m, source, size, capacity)
	c.mu.Unlock()
	return ok
}

// Restore returns key's entry and makes it the newest. It reports false
// when key is not cached; an entry that is no longer admissible (its mesh
// lost its triangles after it was stored, in breach of the no-modification
// rule) is removed and reported as a miss.
func (c *Cache) Restore(key string) (Record, bool) {
	c.mu.Lock()
	r, ok := c.l.restore(key)
	c.mu.Unlock()
	return r, ok
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	n := c.l.len()
	c.mu.Unlock()
	return n
}

// Clear drops every entry and every mesh reference. It is idempotent.
func (c *Cache) Clear() {
	c.mu.Lock()
	c.l.reset()
	c.mu.Unlock()
}

// Snapshot returns a detached description of the cache.
func (c *Cache) Snapshot() Snapshot {
	entries := []Entry{}
	for {
		c.mu.Lock()
		n := c.l.len()
		if n <= cap(entries) {
			s := Snapshot{Count: n, Entries: c.l.appendEntries(entries), RetainedBytes: c.l.bytes}
			c.mu.Unlock()
			return s
		}
		c.mu.Unlock()
		// Allocate outside the lock, then check the count again.
		entries = make([]Entry, 0, n)
	}
}
