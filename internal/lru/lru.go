// Package lru provides Map, the one least-recently-used map of the module:
// a hash map whose entries are also linked in recency order, so that Get,
// Put, Remove and RemoveOldest are O(1).
//
// Map holds no bound of its own. Each owner states its bound where it
// stores (an entry count passed per call, a byte budget, both) by calling
// RemoveOldest until it is within it, and keeps any per-entry accounting in
// the value. That is what lets one type serve caches bounded by a count
// fixed at construction, by a count that changes with every call, and by
// entries and bytes together.
//
// # Allocation
//
// Entries are nodes of an intrusive doubly-linked list. A node freed by
// Remove, RemoveOldest or the replacing of an evicted entry is kept (one
// at a time) and reused by the next Put of a new key, so a full cache that
// stores one new entry and evicts one old one per call allocates nothing
// in steady state. A generic list that allocates an element per insert
// (container/list, or the list inside github.com/hashicorp/golang-lru/v2)
// cannot give that guarantee.
//
// Map is single-threaded: its owners put it behind their own mutex, which
// they need anyway to keep the map and their accounting consistent.
package lru

import "iter"

// Map is a least-recently-used map from K to V.
//
// The zero value is an empty map ready to use. A Map is not safe for
// concurrent use and must not be copied after first use (its list links
// point into it).
type Map[K comparable, V any] struct {
	items map[K]*node[K, V]
	root  node[K, V] // sentinel: root.next is the oldest, root.prev the newest
	spare *node[K, V]
}

type node[K comparable, V any] struct {
	prev, next *node[K, V]
	key        K
	val        V
}

func (m *Map[K, V]) lazyInit() {
	if m.root.next == nil {
		m.root.next, m.root.prev = &m.root, &m.root
	}
	if m.items == nil {
		m.items = make(map[K]*node[K, V])
	}
}

// Len returns the number of entries.
func (m *Map[K, V]) Len() int { return len(m.items) }

// Get returns k's value and makes k the newest entry.
func (m *Map[K, V]) Get(k K) (V, bool) {
	n, ok := m.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	m.touch(n)
	return n.val, true
}

// Peek returns k's value without changing recency.
func (m *Map[K, V]) Peek(k K) (V, bool) {
	n, ok := m.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	return n.val, true
}

// Put sets k to v and makes k the newest entry. When k was present it
// returns the value it replaces and true.
func (m *Map[K, V]) Put(k K, v V) (old V, replaced bool) {
	m.lazyInit()
	if n, ok := m.items[k]; ok {
		old, n.val = n.val, v
		m.touch(n)
		return old, true
	}
	n := m.spare
	if n != nil {
		m.spare = nil
	} else {
		n = new(node[K, V])
	}
	n.key, n.val = k, v
	m.items[k] = n
	m.pushBack(n)
	return old, false
}

// Remove deletes k and returns its value, reporting whether it was
// present.
func (m *Map[K, V]) Remove(k K) (V, bool) {
	n, ok := m.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	v := n.val
	m.drop(n)
	return v, true
}

// Oldest returns the least recently used entry without changing recency.
// It reports false when the map is empty.
func (m *Map[K, V]) Oldest() (K, V, bool) {
	if len(m.items) == 0 {
		var (
			k K
			v V
		)
		return k, v, false
	}
	n := m.root.next
	return n.key, n.val, true
}

// RemoveOldest deletes the least recently used entry and returns it. It
// reports false when the map is empty.
func (m *Map[K, V]) RemoveOldest() (K, V, bool) {
	k, v, ok := m.Oldest()
	if ok {
		m.drop(m.root.next)
	}
	return k, v, ok
}

// Clear deletes every entry. Nothing is walked: the old map and nodes
// become garbage at once, values included.
func (m *Map[K, V]) Clear() { *m = Map[K, V]{} }

// All returns the entries from the oldest to the newest. The map must not
// be changed during the iteration.
func (m *Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.root.next == nil {
			return
		}
		for n := m.root.next; n != &m.root; n = n.next {
			if !yield(n.key, n.val) {
				return
			}
		}
	}
}

// Backward returns the entries from the newest to the oldest. The map
// must not be changed during the iteration.
func (m *Map[K, V]) Backward() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.root.prev == nil {
			return
		}
		for n := m.root.prev; n != &m.root; n = n.prev {
			if !yield(n.key, n.val) {
				return
			}
		}
	}
}

func (m *Map[K, V]) touch(n *node[K, V]) {
	if m.root.prev == n {
		return
	}
	m.unlink(n)
	m.pushBack(n)
}

func (m *Map[K, V]) unlink(n *node[K, V]) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
}

func (m *Map[K, V]) pushBack(n *node[K, V]) {
	n.prev, n.next = m.root.prev, &m.root
	m.root.prev.next = n
	m.root.prev = n
}

// drop unlinks n, forgets its key and keeps the cleared node for reuse.
func (m *Map[K, V]) drop(n *node[K, V]) {
	m.unlink(n)
	delete(m.items, n.key)
	*n = node[K, V]{} // release the key and value
	m.spare = n
}
