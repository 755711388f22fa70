package stage

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// Design note: Ring
//
// Storage is a bounded multi-producer multi-consumer array queue in the style
// of Dmitry Vyukov's: every slot carries a sequence number, and producers and
// consumers claim positions with one CAS on a shared tail or head counter. The
// sequence number says what a slot is waiting for, counted in half-steps so
// that a ring of one slot works too (the textbook encoding cannot tell "full,
// written at pos" from "empty, waiting for pos+1" when the ring has one slot):
//
//	seq == 2*pos     the slot is empty and waits for the producer of pos
//	seq == 2*pos+1   the slot holds the entry written at pos
//
// A consumer that takes pos leaves 2*(pos+size), the empty state of the next
// lap. Producers and consumers never wait for each other: a slot not yet in
// the state a producer needs means the ring is full, and for a consumer that
// it is empty, even when the operation that will change it is half done.
// Such a spurious full (or empty) happens only while the concurrent operation
// on that very slot is under way, and the seed makes capacity advisory; the
// full case is still a clean overflow (the entry is disposed, never lost).
//
// Resize and Close are the writers. A masked ring cannot change size in place,
// so Resize builds a new ring, moves the entries over in order and publishes
// it. To move entries safely it needs the old ring to itself, which the gate
// of each ring provides: an atomic word holding a sealed bit and the number of
// operations inside the ring. An operation adds one to enter and subtracts one
// to leave; if it finds the ring sealed it leaves at once, waits on the ring's
// replaced channel, and starts again on the ring that replaced it (or sees
// that the stage is closed). A writer, one at a time under mu, sets the sealed
// bit, waits for the count to drain to zero (operations inside are short and
// never wait for anything, so this is a brief spin), and then owns the old
// ring outright: it moves the entries, stores the new ring, and closes the
// replaced channel. No hook ever runs inside the gate, so a hook may call
// Resize or Close without deadlock. An operation pays two atomic adds on the
// gate; it blocks only during a migration, which is O(capacity) and rare.
//
// Rejected alternatives:
//   - sync.RWMutex around the ring: the same two atomic adds on the fast path,
//     but it names the fast path a lock, and a reader waits behind any writer
//     that is merely queued; the gate here makes waiting explicit and scoped
//     to a ring that is already being replaced.
//   - Letting operations run on the new ring while the old one is drained (a
//     linked list of rings, LCRQ-style): lock-free throughout, but a consumer
//     must finish the old ring before the new one for FIFO order, capacity
//     must be counted across rings, and surplus disposal on a shrink races
//     with producers. Much more code for an operation that runs on a config
//     reload or an allocator pulse, not per request.
//   - A mutex-protected ring: simple (see Queue), but every operation of
//     every goroutine then serialises on one lock, which is what the hot path
//     of a busy server cannot afford.
//   - One atomic counter of entries kept beside the ring for Len: a second
//     contended word written on every operation; Len is derived from the head
//     and tail counters instead.

// sealed is the gate bit that closes a ring to new operations.
const sealed = 1 << 62

// cacheLinePad keeps the contended words of a ring on separate cache lines
// (128 bytes covers adjacent-line prefetching).
type cacheLinePad [128]byte

type slot[T any] struct {
	seq atomic.Uint64
	val T
}

// ring is one fixed-size array queue with its gate. Its size never changes.
type ring[T any] struct {
	_    cacheLinePad
	tail atomic.Uint64 // next position to write
	_    cacheLinePad
	head atomic.Uint64 // next position to read
	_    cacheLinePad
	gate atomic.Int64 // sealed bit | operations inside
	_    cacheLinePad

	mask     uint64
	slots    []slot[T]     // len is the capacity: 0 or a power of two
	replaced chan struct{} // closed once a writer is done with this ring
}

func newRing[T any](capacity int) *ring[T] {
	r := &ring[T]{replaced: make(chan struct{})}
	if capacity > 0 {
		r.slots = make([]slot[T], capacity)
		r.mask = uint64(capacity - 1)
		for i := range r.slots {
			r.slots[i].seq.Store(2 * uint64(i))
		}
	}
	return r
}

// enqueue stores v and reports whether there was room.
func (r *ring[T]) enqueue(v T) bool {
	if len(r.slots) == 0 {
		return false
	}
	pos := r.tail.Load()
	for {
		s := &r.slots[pos&r.mask]
		d := int64(s.seq.Load() - 2*pos)
		switch {
		case d == 0:
			if r.tail.CompareAndSwap(pos, pos+1) {
				s.val = v
				s.seq.Store(2*pos + 1)
				return true
			}
			pos = r.tail.Load()
		case d < 0:
			return false // the slot still holds (or awaits) the last lap
		default:
			pos = r.tail.Load() // another producer took pos
		}
	}
}

// dequeue removes the oldest entry.
func (r *ring[T]) dequeue() (v T, ok bool) {
	if len(r.slots) == 0 {
		return v, false
	}
	pos := r.head.Load()
	for {
		s := &r.slots[pos&r.mask]
		d := int64(s.seq.Load() - (2*pos + 1))
		switch {
		case d == 0:
			if r.head.CompareAndSwap(pos, pos+1) {
				v = s.val
				var zero T
				s.val = zero // do not keep the entry reachable
				s.seq.Store(2 * (pos + uint64(len(r.slots))))
				return v, true
			}
			pos = r.head.Load()
		case d < 0:
			return v, false
		default:
			pos = r.head.Load() // another consumer took pos
		}
	}
}

// length is the number of claimed positions, clamped to the capacity.
func (r *ring[T]) length() int {
	h := r.head.Load() // head first: the later tail is at least this head
	t := r.tail.Load()
	return int(min(t-h, uint64(len(r.slots))))
}

// seal closes the gate and waits until no operation is inside. The caller
// holds the stage's mu and owns the ring when seal returns.
func (r *ring[T]) seal() {
	r.gate.Or(sealed)
	for r.gate.Load() != sealed {
		runtime.Gosched()
	}
}

// Ring is a Stage backed by a lock-free array queue whose capacity is 0 or a
// power of two. Offer, Poll and their silent variants take no lock and do not
// allocate; Resize allocates a new ring and migrates the entries in order.
// See the design note in ring.go.
//
// A Ring is safe for concurrent use. Its zero value is not usable: make one
// with NewRing.
type Ring[T any] struct {
	name  string
	hooks Hooks[T]

	cur    atomic.Pointer[ring[T]]
	closed atomic.Bool

	mu sync.Mutex // serialises the writers, Resize and Close
}

var _ Stage[int] = (*Ring[int])(nil)

// NewRing returns an empty Ring. Its capacity is capacity rounded up to a
// power of two (0 stays 0); capacity must be in [0, MaxCapacity].
func NewRing[T any](name string, capacity int, hooks Hooks[T]) (*Ring[T], error) {
	if err := checkCapacity(capacity); err != nil {
		return nil, err
	}
	s := &Ring[T]{name: name, hooks: hooks}
	s.cur.Store(newRing[T](ringSize(capacity)))
	return s, nil
}

// ringSize is the size a Ring applies for a requested capacity.
func ringSize(n int) int {
	n = clampCapacity(n)
	if n <= 1 {
		return n
	}
	return 1 << bits.Len(uint(n-1))
}

// Name implements Stage.
func (s *Ring[T]) Name() string { return s.name }

// Len implements Stage.
func (s *Ring[T]) Len() int { return s.cur.Load().length() }

// Cap implements Stage.
func (s *Ring[T]) Cap() int { return len(s.cur.Load().slots) }

// enter returns the current ring with the caller inside its gate, or nil when
// the stage is closed.
func (s *Ring[T]) enter() *ring[T] {
	for {
		r := s.cur.Load()
		if r.gate.Add(1)&sealed == 0 {
			return r
		}
		r.gate.Add(-1)
		<-r.replaced
		if s.closed.Load() {
			return nil
		}
	}
}

func (r *ring[T]) exit() { r.gate.Add(-1) }

// Offer implements Stage.
func (s *Ring[T]) Offer(v T) bool { return s.offer(v, false) }

// OfferSilent implements Stage.
func (s *Ring[T]) OfferSilent(v T) bool { return s.offer(v, true) }

func (s *Ring[T]) offer(v T, silent bool) bool {
	// Refuse before admission when the stage is visibly closed or full, so
	// the common overflow costs no persistence round trip.
	if r := s.cur.Load(); s.closed.Load() || r.length() >= len(r.slots) {
		if silent {
			s.hooks.remove(v)
		}
		s.hooks.dispose(v)
		return false
	}
	if !silent {
		s.hooks.add(v) // before any poller can see v and fire OnRemove
	}
	ok := false
	if r := s.enter(); r != nil {
		ok = r.enqueue(v)
		r.exit()
	}
	if !ok {
		s.hooks.end(v)
	}
	return ok
}

// Poll implements Stage.
func (s *Ring[T]) Poll() (T, bool) {
	v, ok := s.poll()
	if ok {
		s.hooks.remove(v)
	}
	return v, ok
}

// PollSilent implements Stage.
func (s *Ring[T]) PollSilent() (T, bool) { return s.poll() }

func (s *Ring[T]) poll() (v T, ok bool) {
	r := s.enter()
	if r == nil {
		return v, false
	}
	v, ok = r.dequeue()
	r.exit()
	return v, ok
}

// Dispose implements Stage.
func (s *Ring[T]) Dispose(v T) { s.hooks.end(v) }

// Resize implements Stage. The applied capacity is n clamped to
// [0, MaxCapacity] and rounded up to a power of two.
func (s *Ring[T]) Resize(n int) int {
	n = ringSize(n)
	s.mu.Lock()
	old := s.cur.Load()
	if s.closed.Load() || len(old.slots) == n {
		s.mu.Unlock()
		return len(old.slots)
	}
	old.seal()
	// Copy rather than dequeue, so that Len and the overflow check of Offer,
	// which read the old ring until the swap, see its true length.
	next := newRing[T](n)
	var surplus []T
	for pos, tail := old.head.Load(), old.tail.Load(); pos != tail; pos++ {
		v := old.slots[pos&old.mask].val
		if !next.enqueue(v) {
			surplus = append(surplus, v) // the newest entries
		}
	}
	s.cur.Store(next)
	close(old.replaced)
	s.mu.Unlock()
	s.hooks.endAll(surplus)
	return n
}

// Close implements Stage.
func (s *Ring[T]) Close() {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	r := s.cur.Load()
	r.seal() // for good: a closed stage keeps its sealed ring
	s.closed.Store(true)
	var drained []T
	for {
		v, ok := r.dequeue()
		if !ok {
			break
		}
		drained = append(drained, v)
	}
	close(r.replaced)
	s.mu.Unlock()
	s.hooks.endAll(drained)
}
