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
// lap. Positions count modulo 2^63 (the top bit of head and tail is the
// sealed bit below); 2*pos is then exact modulo 2^64, so the sequence
// arithmetic survives the wrap. Producers and consumers never wait for each
// other: a slot not yet in the state a producer needs means the ring is full,
// and for a consumer that it is empty, even when the operation that will
// change it is half done. Such a spurious full (or empty) happens only while
// a concurrent operation on that very slot is under way, and the seed makes
// capacity advisory; the full case is still a clean overflow (the entry is
// disposed, never lost).
//
// Resize and Close are the writers, one at a time under mu. A masked ring
// cannot change size in place, so Resize builds a new ring, copies the
// entries over in order and publishes it. To copy safely it needs the old
// ring to itself. It gets it by sealing: it sets the sealed bit of tail, then
// of head, with atomic Or. From then on every CAS on either counter fails
// (the bit is part of the value), so no operation can claim a position, and
// an operation that loads a sealed counter leaves the ring, waits on its
// replaced channel, and starts again on the ring that replaced it (or finds
// the stage closed). Operations that claimed a position before the seal are
// still writing their slot; the writer waits for each slot to reach its final
// state (full for the positions in [head, tail), empty for the next lap
// elsewhere), which takes at most the few instructions those operations have
// left. Then it owns the ring, copies the entries, stores the new ring and
// closes the replaced channel. No hook ever runs between a claim and its
// slot write, so a hook may call Resize or Close without deadlock. The fast
// path pays nothing for all this: the sealed bit rides on the counters it
// already reads and CASes. Operations block only during a migration, which
// is O(capacity) and rare.
//
// Rejected alternatives:
//   - A gate word per ring (sealed bit plus a count of operations inside),
//     entered and left by every operation: simple, and what this design
//     replaced, but two more contended atomic adds per operation made a
//     serial Offer+Poll about twice as slow as the mutex-guarded Queue.
//   - sync.RWMutex around the ring: the same two atomic adds on the fast
//     path, and a reader waits behind any writer that is merely queued.
//   - Letting operations run on the new ring while the old one is drained (a
//     linked list of rings, LCRQ-style): no blocking at all, but a consumer
//     must finish the old ring before the new one for FIFO order, capacity
//     must be counted across rings, and surplus disposal on a shrink races
//     with producers. Much more code for an operation that runs on a config
//     reload or an allocator pulse, not per request.
//   - A mutex-protected ring: simple (see Queue), but every operation of
//     every goroutine then serialises on one lock.
//   - An atomic count of entries beside the ring, for Len: a second contended
//     word written on every operation; Len is derived from head and tail.

const (
	sealedBit = 1 << 63       // set in head and tail by a writer
	posMask   = sealedBit - 1 // positions count modulo 2^63
)

// cacheLinePad keeps the contended words of a ring on separate cache lines
// (128 bytes covers adjacent-line prefetching).
type cacheLinePad [128]byte

type slot[T any] struct {
	seq atomic.Uint64
	val T
}

// ring is one fixed-size array queue. Its size never changes.
type ring[T any] struct {
	_    cacheLinePad
	tail atomic.Uint64 // sealed bit | next position to write
	_    cacheLinePad
	head atomic.Uint64 // sealed bit | next position to read
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

// status is the result of one attempt on a ring.
type status uint8

const (
	done   status = iota // stored or removed
	bounce               // full (enqueue) or empty (dequeue)
	moved                // the ring is sealed: go to its successor
)

// enqueue stores v if there is room.
func (r *ring[T]) enqueue(v T) status {
	if len(r.slots) == 0 {
		return bounce
	}
	pos := r.tail.Load()
	for {
		if pos&sealedBit != 0 {
			return moved
		}
		s := &r.slots[pos&r.mask]
		d := int64(s.seq.Load() - 2*pos)
		switch {
		case d == 0:
			if r.tail.CompareAndSwap(pos, (pos+1)&posMask) {
				s.val = v
				s.seq.Store(2*pos + 1)
				return done
			}
		case d < 0:
			return bounce // the slot still holds (or awaits) the last lap
		}
		pos = r.tail.Load() // another producer took pos, or a writer sealed
	}
}

// dequeue removes the oldest entry.
func (r *ring[T]) dequeue() (v T, st status) {
	if len(r.slots) == 0 {
		return v, bounce
	}
	pos := r.head.Load()
	for {
		if pos&sealedBit != 0 {
			return v, moved
		}
		s := &r.slots[pos&r.mask]
		d := int64(s.seq.Load() - (2*pos + 1))
		switch {
		case d == 0:
			if r.head.CompareAndSwap(pos, (pos+1)&posMask) {
				v = s.val
				var zero T
				s.val = zero // do not keep the entry reachable
				s.seq.Store(2 * (pos + uint64(len(r.slots))))
				return v, done
			}
		case d < 0:
			return v, bounce
		}
		pos = r.head.Load() // another consumer took pos, or a writer sealed
	}
}

// length is the number of claimed positions, clamped to the capacity.
func (r *ring[T]) length() int {
	h := r.head.Load() // head first: the later tail is at least this head
	t := r.tail.Load()
	return int(min((t-h)&posMask, uint64(len(r.slots))))
}

// seal stops all operations on r and waits until those that had claimed a
// position have finished with their slot. It returns the final head and
// tail. The caller holds the stage's mu and owns the ring when seal returns.
func (r *ring[T]) seal() (head, tail uint64) {
	tail = r.tail.Or(sealedBit) & posMask
	head = r.head.Or(sealedBit) & posMask
	n := (tail - head) & posMask
	for i := range uint64(len(r.slots)) {
		pos := (head + i) & posMask
		want := 2 * pos // free for this lap
		if i < n {
			want++ // holds the entry written at pos
		}
		for r.slots[pos&r.mask].seq.Load() != want {
			runtime.Gosched()
		}
	}
	return head, tail
}

// Ring is a Stage backed by a lock-free array queue whose capacity is 0 or a
// power of two. Offer, Poll and their silent variants take no lock and do not
// allocate; Resize allocates a new ring and migrates the entries in order.
// See the design note in ring.go.
//
// Operations that arrive while Resize migrates wait for the new ring, except
// that Offer checks for room against the ring being replaced: an Offer racing
// with a Resize that grows a full Ring may still overflow.
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
	for {
		r := s.cur.Load()
		switch r.enqueue(v) {
		case done:
			return true
		case moved:
			<-r.replaced
			if !s.closed.Load() {
				continue
			}
		}
		s.hooks.end(v)
		return false
	}
}

// Poll implements Stage.
func (s *Ring[T]) Poll() (T, bool) {
	v, ok := s.PollSilent()
	if ok {
		s.hooks.remove(v)
	}
	return v, ok
}

// PollSilent implements Stage.
func (s *Ring[T]) PollSilent() (T, bool) {
	for {
		r := s.cur.Load()
		v, st := r.dequeue()
		switch st {
		case done:
			return v, true
		case moved:
			<-r.replaced
			if !s.closed.Load() {
				continue
			}
		}
		return v, false
	}
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
	head, tail := old.seal()
	// Copy rather than dequeue, so that Len and the overflow check of Offer,
	// which read the old ring until the swap, see its true length.
	next := newRing[T](n)
	var surplus []T
	for pos := head; pos != tail; pos = (pos + 1) & posMask {
		v := old.slots[pos&old.mask].val
		if next.enqueue(v) != done {
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
	head, tail := r.seal() // for good: a closed stage keeps its sealed ring
	s.closed.Store(true)
	var drained []T
	var zero T
	for pos := head; pos != tail; pos = (pos + 1) & posMask {
		sl := &r.slots[pos&r.mask]
		drained = append(drained, sl.val)
		sl.val = zero
	}
	r.head.Store(sealedBit | tail) // Len is now 0
	close(r.replaced)
	s.mu.Unlock()
	s.hooks.endAll(drained)
}
