package sqlitestore

import (
	"slices"
	"sync"

	"github.com/rtpengine/rtp/terrain/archive"
)

// touch is one pending recency update: the digest of a record a Get found,
// and the order of that hit among all hits of this Store.
type touch struct {
	digest archive.Digest
	order  uint64
}

// touchSet is the single-threaded core of the pending-touch buffer: the
// digests hit since the last write transaction, each with the order of its
// latest hit. A digest hit twice is pending once, at its later position.
//
// The zero value is an empty set.
type touchSet struct {
	next uint64                    // order of the next hit
	m    map[archive.Digest]uint64 // digest -> order of its latest hit
}

// add records a hit of d, later than every hit recorded before.
func (t *touchSet) add(d archive.Digest) {
	if t.m == nil {
		t.m = make(map[archive.Digest]uint64)
	}
	t.next++
	t.m[d] = t.next
}

// len reports how many digests are pending.
func (t *touchSet) len() int { return len(t.m) }

// take removes and returns every pending touch, oldest hit first.
func (t *touchSet) take() []touch {
	if len(t.m) == 0 {
		return nil
	}
	out := make([]touch, 0, len(t.m))
	for d, o := range t.m {
		out = append(out, touch{digest: d, order: o})
	}
	clear(t.m)
	slices.SortFunc(out, func(a, b touch) int {
		switch {
		case a.order < b.order:
			return -1
		case a.order > b.order:
			return 1
		}
		return 0
	})
	return out
}

// restore puts back touches taken by a transaction that did not commit. A
// digest hit again since take keeps its newer position.
func (t *touchSet) restore(batch []touch) {
	if len(batch) == 0 {
		return
	}
	if t.m == nil {
		t.m = make(map[archive.Digest]uint64)
	}
	for _, tc := range batch {
		if _, newer := t.m[tc.digest]; !newer {
			t.m[tc.digest] = tc.order
		}
	}
}

// touches is the concurrent wrapper around touchSet shared by readers (add)
// and the writer goroutine (take, restore). It signals the writer when the
// first touch becomes pending and when the buffer reaches its batch size.
type touches struct {
	signal chan struct{} // capacity 1; a pending wake-up for the writer
	batch  int           // pending count at which the writer flushes at once

	mu  sync.Mutex // protects set
	set touchSet
}

func newTouches(batch int) *touches {
	return &touches{signal: make(chan struct{}, 1), batch: batch}
}

// add records a hit and wakes the writer if needed. It never blocks.
func (t *touches) add(d archive.Digest) {
	t.mu.Lock()
	t.set.add(d)
	n := t.set.len()
	t.mu.Unlock()
	if n == 1 || n >= t.batch {
		select {
		case t.signal <- struct{}{}:
		default:
		}
	}
}

func (t *touches) take() []touch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set.take()
}

func (t *touches) restore(batch []touch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set.restore(batch)
}

func (t *touches) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set.len()
}
