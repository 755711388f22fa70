package stage

import (
	"sync"
	"sync/atomic"
)

// Queue is a Stage backed by a mutex-guarded circular buffer with an exact
// capacity. Its buffer grows on demand (doubling, up to the capacity), so a
// large capacity that is rarely filled costs nothing until it is used; a
// steady Offer/Poll does not allocate.
//
// Queue is the simple implementation: every operation takes one short lock,
// never while a hook runs. Prefer Ring on paths contended by many goroutines.
//
// A Queue is safe for concurrent use. Its zero value is not usable: make one
// with NewQueue.
type Queue[T any] struct {
	name  string
	hooks Hooks[T]

	// Mirrors of n, capacity and closed, written under mu, read without it
	// by Len, Cap and the overflow check of Offer.
	size   atomic.Int64
	limit  atomic.Int64
	closed atomic.Bool

	mu sync.Mutex
	// mu protects the following fields.
	buf      []T // circular; len(buf) <= capacity
	head     int // index of the oldest entry in buf
	n        int // number of entries
	capacity int
	shut     bool
}

var _ Stage[int] = (*Queue[int])(nil)

// NewQueue returns an empty Queue with exactly the given capacity, which must
// be in [0, MaxCapacity].
func NewQueue[T any](name string, capacity int, hooks Hooks[T]) (*Queue[T], error) {
	if err := checkCapacity(capacity); err != nil {
		return nil, err
	}
	q := &Queue[T]{name: name, hooks: hooks, capacity: capacity}
	q.limit.Store(int64(capacity))
	return q, nil
}

// Name implements Stage.
func (q *Queue[T]) Name() string { return q.name }

// Len implements Stage.
func (q *Queue[T]) Len() int { return int(q.size.Load()) }

// Cap implements Stage.
func (q *Queue[T]) Cap() int { return int(q.limit.Load()) }

// Offer implements Stage.
func (q *Queue[T]) Offer(v T) bool { return q.offer(v, false) }

// OfferSilent implements Stage.
func (q *Queue[T]) OfferSilent(v T) bool { return q.offer(v, true) }

func (q *Queue[T]) offer(v T, silent bool) bool {
	if q.closed.Load() || q.size.Load() >= q.limit.Load() {
		if silent {
			q.hooks.remove(v)
		}
		q.hooks.dispose(v)
		return false
	}
	if !silent {
		q.hooks.add(v) // before any poller can see v and fire OnRemove
	}
	q.mu.Lock()
	ok := q.pushLocked(v)
	q.mu.Unlock()
	if !ok {
		q.hooks.end(v)
	}
	return ok
}

// pushLocked appends v if the queue is open and has room.
func (q *Queue[T]) pushLocked(v T) bool {
	if q.shut || q.n >= q.capacity {
		return false
	}
	if q.n == len(q.buf) {
		q.growLocked()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
	q.size.Store(int64(q.n))
	return true
}

// growLocked doubles the buffer (at least 8, at most the capacity),
// unwrapping the entries to the front.
func (q *Queue[T]) growLocked() {
	next := make([]T, min(max(2*len(q.buf), 8), q.capacity))
	q.copyOutLocked(next)
	q.buf, q.head = next, 0
}

// copyOutLocked copies the first min(n, len(dst)) entries, oldest first.
func (q *Queue[T]) copyOutLocked(dst []T) int {
	c := min(q.n, len(dst))
	for i := range c {
		dst[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	return c
}

func (q *Queue[T]) popLocked() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	var zero T
	v, q.buf[q.head] = q.buf[q.head], zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	q.size.Store(int64(q.n))
	return v, true
}

// Poll implements Stage.
func (q *Queue[T]) Poll() (T, bool) {
	v, ok := q.PollSilent()
	if ok {
		q.hooks.remove(v)
	}
	return v, ok
}

// PollSilent implements Stage.
func (q *Queue[T]) PollSilent() (T, bool) {
	q.mu.Lock()
	v, ok := q.popLocked()
	q.mu.Unlock()
	return v, ok
}

// Dispose implements Stage.
func (q *Queue[T]) Dispose(v T) { q.hooks.end(v) }

// Resize implements Stage. The applied capacity is n clamped to
// [0, MaxCapacity].
func (q *Queue[T]) Resize(n int) int {
	n = clampCapacity(n)
	q.mu.Lock()
	if q.shut || n == q.capacity {
		c := q.capacity
		q.mu.Unlock()
		return c
	}
	var surplus []T
	if n < q.n {
		surplus = make([]T, q.n-n)
		for i := range surplus {
			surplus[i] = q.buf[(q.head+n+i)%len(q.buf)]
		}
	}
	if n < len(q.buf) {
		// Reallocate so that the buffer releases the memory (and the
		// references) beyond the new capacity.
		next := make([]T, min(max(q.n, 8), n))
		q.n = q.copyOutLocked(next)
		q.buf, q.head = next, 0
	}
	q.capacity = n
	q.size.Store(int64(q.n))
	q.limit.Store(int64(n))
	q.mu.Unlock()
	q.hooks.endAll(surplus)
	return n
}

// Close implements Stage.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	if q.shut {
		q.mu.Unlock()
		return
	}
	q.shut = true
	q.closed.Store(true)
	drained := make([]T, q.n)
	q.copyOutLocked(drained)
	q.buf, q.head, q.n = nil, 0, 0
	q.size.Store(0)
	q.mu.Unlock()
	q.hooks.endAll(drained)
}
