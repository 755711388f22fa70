package procworld

// lru is a plain least-recently-used map bounded by entries: the
// single-threaded core of tileCache. Get changes recency, Peek never does.
//
// The zero value is not usable; see newLRU. Not safe for concurrent use.
type lru[K comparable, V any] struct {
	capacity int
	nodes    map[K]*lruNode[K, V]
	root     lruNode[K, V] // sentinel: root.next is the most recent, root.prev the least
}

type lruNode[K comparable, V any] struct {
	prev, next *lruNode[K, V]
	key        K
	val        V
}

// newLRU returns an empty lru holding at most capacity entries (at least
// one).
func newLRU[K comparable, V any](capacity int) *lru[K, V] {
	l := &lru[K, V]{capacity: max(capacity, 1), nodes: make(map[K]*lruNode[K, V])}
	l.root.prev, l.root.next = &l.root, &l.root
	return l
}

// Get returns the value of k and makes it the most recently used.
func (l *lru[K, V]) Get(k K) (V, bool) {
	n, ok := l.nodes[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.unlink(n)
	l.pushFront(n)
	return n.val, true
}

// Peek returns the value of k without changing recency.
func (l *lru[K, V]) Peek(k K) (V, bool) {
	n, ok := l.nodes[k]
	if !ok {
		var zero V
		return zero, false
	}
	return n.val, true
}

// Add sets k to v as the most recently used entry and evicts the least
// recently used ones beyond capacity.
func (l *lru[K, V]) Add(k K, v V) {
	if n, ok := l.nodes[k]; ok {
		n.val = v
		l.unlink(n)
		l.pushFront(n)
		return
	}
	n := &lruNode[K, V]{key: k, val: v}
	l.nodes[k] = n
	l.pushFront(n)
	for len(l.nodes) > l.capacity {
		old := l.root.prev
		l.unlink(old)
		delete(l.nodes, old.key)
	}
}

// Len returns the number of entries.
func (l *lru[K, V]) Len() int { return len(l.nodes) }

// Keys returns the keys from the most to the least recently used.
func (l *lru[K, V]) Keys() []K {
	out := make([]K, 0, len(l.nodes))
	for n := l.root.next; n != &l.root; n = n.next {
		out = append(out, n.key)
	}
	return out
}

func (l *lru[K, V]) unlink(n *lruNode[K, V]) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
}

func (l *lru[K, V]) pushFront(n *lruNode[K, V]) {
	n.prev, n.next = &l.root, l.root.next
	l.root.next.prev = n
	l.root.next = n
}
