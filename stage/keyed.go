package stage

import (
	"fmt"
	"sync"
)

// Factory makes the stage of one partition of a Keyed stage. It may close
// over the key, for example to tag the rows its hooks write.
type Factory[K comparable, T any] func(key K, capacity int) (Stage[T], error)

// Keyed is a stage partitioned by key: one Stage per key (a per-player
// bucket, a per-profile subspace cache), each with its own capacity and
// hooks. Keys are opened explicitly; closing a key disposes its entries.
//
// A Keyed is safe for concurrent use. Its zero value is not usable: make one
// with NewKeyed.
type Keyed[K comparable, T any] struct {
	name    string
	factory Factory[K, T]

	mu sync.Mutex
	// mu protects the following fields.
	parts  map[K]Stage[T]
	closed bool
}

// NewKeyed returns an empty keyed stage whose partitions factory makes.
func NewKeyed[K comparable, T any](name string, factory Factory[K, T]) (*Keyed[K, T], error) {
	if factory == nil {
		return nil, fmt.Errorf("stage: keyed stage %q has no factory", name)
	}
	return &Keyed[K, T]{name: name, factory: factory, parts: make(map[K]Stage[T])}, nil
}

// Name is the keyed stage's name.
func (k *Keyed[K, T]) Name() string { return k.name }

// Open returns the partition of key, making it with the given capacity if it
// does not exist. Open is idempotent: on an existing partition it returns
// that partition unchanged and ignores capacity (use Resize on it to change
// its capacity). It fails with ErrClosed once the keyed stage is closed, and
// with the factory's error, wrapped.
//
// The factory runs outside the keyed stage's lock. When two Opens of a new
// key race, both may run it; one partition wins and the other, still empty,
// is closed.
func (k *Keyed[K, T]) Open(key K, capacity int) (Stage[T], error) {
	k.mu.Lock()
	s, ok := k.parts[key]
	closed := k.closed
	k.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case ok:
		return s, nil
	}

	made, err := k.factory(key, capacity)
	if err != nil {
		return nil, fmt.Errorf("stage: keyed stage %q: opening %v: %w", k.name, key, err)
	}
	if made == nil {
		return nil, fmt.Errorf("stage: keyed stage %q: factory returned no stage for %v", k.name, key)
	}

	k.mu.Lock()
	s, ok = k.parts[key]
	closed = k.closed
	if !ok && !closed {
		k.parts[key] = made
	}
	k.mu.Unlock()
	switch {
	case closed:
		made.Close()
		return nil, ErrClosed
	case ok:
		made.Close() // lost the race; it holds nothing
		return s, nil
	}
	return made, nil
}

// Get returns the partition of key, if it is open.
func (k *Keyed[K, T]) Get(key K) (Stage[T], bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.parts[key]
	return s, ok
}

// Poll polls the partition of key (firing its OnRemove); it reports false
// when the key is not open or its partition is empty.
func (k *Keyed[K, T]) Poll(key K) (v T, ok bool) {
	s, open := k.Get(key)
	if !open {
		return v, false
	}
	return s.Poll()
}

// CloseKey removes the partition of key and closes it, disposing its
// entries. It reports whether the key was open. A producer still holding the
// partition after CloseKey offers into a closed stage, which disposes.
func (k *Keyed[K, T]) CloseKey(key K) bool {
	k.mu.Lock()
	s, ok := k.parts[key]
	delete(k.parts, key)
	k.mu.Unlock()
	if ok {
		s.Close()
	}
	return ok
}

// Keys returns the open keys, in no particular order.
func (k *Keyed[K, T]) Keys() []K {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := make([]K, 0, len(k.parts))
	for key := range k.parts {
		keys = append(keys, key)
	}
	return keys
}

// Len is the number of entries stored over all partitions; a snapshot, as
// for Stage.Len.
func (k *Keyed[K, T]) Len() int {
	n := 0
	for _, s := range k.snapshot() {
		n += s.Len()
	}
	return n
}

func (k *Keyed[K, T]) snapshot() []Stage[T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	parts := make([]Stage[T], 0, len(k.parts))
	for _, s := range k.parts {
		parts = append(parts, s)
	}
	return parts
}

// Close closes every partition, disposing all entries, and makes later Opens
// fail with ErrClosed. It is idempotent. Every partition is closed even if a
// hook panics while one of them is; the first panic is raised again.
func (k *Keyed[K, T]) Close() {
	k.mu.Lock()
	k.closed = true
	parts := make([]Stage[T], 0, len(k.parts))
	for _, s := range k.parts {
		parts = append(parts, s)
	}
	clear(k.parts)
	k.mu.Unlock()
	closeAll(parts)
}

// closeAll closes every stage of parts even if one of them panics, then
// raises the first panic.
func closeAll[T any](parts []Stage[T]) {
	i := 0
	defer func() {
		if i >= len(parts) {
			return
		}
		r := recover()
		func() {
			defer func() { _ = recover() }()
			closeAll(parts[i+1:])
		}()
		if r != nil {
			panic(r)
		}
	}()
	for ; i < len(parts); i++ {
		parts[i].Close()
	}
}
