package meshcache

import (
	"github.com/rtpengine/rtp/internal/lru"
	"github.com/rtpengine/rtp/terrain/mesh"
)

// item is one cached entry.
type item struct {
	source string
	mesh   *mesh.Mesh
	bytes  int64 // mesh.Bytes() when stored
}

// cache is the single-threaded core of Cache: an lru.Map in recency order
// plus the byte total. The zero value is empty and ready to use.
type cache struct {
	m     lru.Map[string, item]
	bytes int64 // sum of item.bytes
}

func (l *cache) len() int { return l.m.Len() }

// reset drops every entry. The old map and nodes become garbage at once:
// nothing is walked.
func (l *cache) reset() { *l = cache{} }

// store inserts or replaces key as the newest entry and trims to capacity.
// The caller has already checked admission. It reports whether key is
// cached afterwards, false only when capacity <= 0.
func (l *cache) store(key string, m *mesh.Mesh, source string, size int64, capacity int) bool {
	if capacity <= 0 {
		l.reset()
		return false
	}
	if l.m.Len() >= capacity {
		if _, ok := l.m.Peek(key); !ok {
			// Full: the oldest entry leaves first, so the map reuses
			// its node for key.
			l.evictOldest()
		}
	}
	if old, replaced := l.m.Put(key, item{source: source, mesh: m, bytes: size}); replaced {
		l.bytes -= old.bytes
	}
	l.bytes += size
	for l.m.Len() > capacity {
		l.evictOldest()
	}
	return true
}

func (l *cache) evictOldest() {
	if _, it, ok := l.m.RemoveOldest(); ok {
		l.bytes -= it.bytes
	}
}

// restore returns key's entry and makes it newest. An entry that is no
// longer valid is removed and reported as a miss.
func (l *cache) restore(key string) (Record, bool) {
	it, ok := l.m.Get(key)
	if !ok {
		return Record{}, false
	}
	if !admissible(it.mesh, it.source) {
		l.m.Remove(key)
		l.bytes -= it.bytes
		return Record{}, false
	}
	return Record{Mesh: it.mesh, Source: it.source}, true
}

// appendEntries appends every entry, oldest first.
func (l *cache) appendEntries(dst []Entry) []Entry {
	for k, it := range l.m.All() {
		dst = append(dst, Entry{Key: k, Source: it.source})
	}
	return dst
}
