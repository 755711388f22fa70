package meshcache

import "github.com/rtpengine/rtp/terrain/mesh"

// node is one entry, linked into lru's list.
type node struct {
	prev, next *node
	key        string
	source     string
	mesh       *mesh.Mesh
	bytes      int64 // mesh.Bytes() when stored
}

// lru is the single-threaded core of Cache: a map from key to node and a
// circular doubly-linked list through root, oldest at root.next and newest
// at root.prev. The zero value is empty and ready to use.
type lru struct {
	root  node // sentinel; its prev/next are nil until first use
	items map[string]*node
	bytes int64 // sum of node.bytes
}

func (l *lru) len() int { return len(l.items) }

// lazyInit makes the zero lru usable.
func (l *lru) lazyInit() {
	if l.root.next == nil {
		l.root.next, l.root.prev = &l.root, &l.root
	}
	if l.items == nil {
		l.items = make(map[string]*node)
	}
}

func (l *lru) unlink(n *node) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
}

func (l *lru) pushBack(n *node) {
	n.prev, n.next = l.root.prev, &l.root
	l.root.prev.next = n
	l.root.prev = n
}

func (l *lru) touch(n *node) {
	if l.root.prev == n {
		return
	}
	l.unlink(n)
	l.pushBack(n)
}

// remove drops n from the map and the list and releases its mesh.
func (l *lru) remove(n *node) {
	l.unlink(n)
	delete(l.items, n.key)
	l.bytes -= n.bytes
	*n = node{}
}

// reset drops every entry. The old map and nodes become garbage at once:
// nothing is walked.
func (l *lru) reset() {
	*l = lru{}
}

// store inserts or replaces key as the newest entry and trims to capacity.
// The caller has already checked admission. It reports whether key is
// cached afterwards, false only when capacity <= 0.
func (l *lru) store(key string, m *mesh.Mesh, source string, size int64, capacity int) bool {
	if capacity <= 0 {
		l.reset()
		return false
	}
	l.lazyInit()
	if n, ok := l.items[key]; ok {
		l.bytes += size - n.bytes
		n.mesh, n.source, n.bytes = m, source, size
		l.touch(n)
	} else {
		var n *node
		if len(l.items) >= capacity {
			// Full: the oldest entry leaves anyway; reuse its node.
			n = l.root.next
			l.remove(n)
		} else {
			n = new(node)
		}
		n.key, n.mesh, n.source, n.bytes = key, m, source, size
		l.items[key] = n
		l.bytes += size
		l.pushBack(n)
	}
	for len(l.items) > capacity {
		l.remove(l.root.next)
	}
	return true
}

// restore returns key's entry and makes it newest. An entry that is no
// longer valid is removed and reported as a miss.
func (l *lru) restore(key string) (Record, bool) {
	n, ok := l.items[key]
	if !ok {
		return Record{}, false
	}
	if !admissible(n.mesh, n.source) {
		l.remove(n)
		return Record{}, false
	}
	l.touch(n)
	return Record{Mesh: n.mesh, Source: n.source}, true
}

// appendEntries appends every entry, oldest first.
func (l *lru) appendEntries(dst []Entry) []Entry {
	if l.root.next == nil {
		return dst
	}
	for n := l.root.next; n != &l.root; n = n.next {
		dst = append(dst, Entry{Key: n.key, Source: n.source})
	}
	return dst
}
