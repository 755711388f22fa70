package stage

import (
	"math"
	"slices"
	"testing"
)

func TestRingSize(t *testing.T) {
	tests := []struct{ n, want int }{
		{-5, 0}, {0, 0}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {1000, 1024},
		{1 << 20, 1 << 20}, {1<<20 + 1, 1 << 21},
		{MaxCapacity - 1, MaxCapacity}, {MaxCapacity, MaxCapacity},
		{MaxCapacity + 1, MaxCapacity}, {math.MaxInt, MaxCapacity},
	}
	for _, tc := range tests {
		if got := ringSize(tc.n); got != tc.want {
			t.Errorf("ringSize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// newRingAt returns a ring whose head and tail start at pos, as if pos
// entries had gone through it, so that tests can cross the wrap-around of
// the position counters at 2^63.
func newRingAt[T any](capacity int, pos uint64) *ring[T] {
	r := newRing[T](capacity)
	r.head.Store(pos)
	r.tail.Store(pos)
	for i := range uint64(capacity) {
		p := (pos + i) & posMask // the first position at or after pos on slot p&mask
		r.slots[p&r.mask].seq.Store(2 * p)
	}
	return r
}

func TestRingPositionWrap(t *testing.T) {
	for _, start := range []uint64{posMask - 5, posMask, 1<<62 + 3} {
		for _, capacity := range []int{1, 2, 8} {
			r := newRingAt[int](capacity, start)
			next, want := 0, 0
			for step := range 64 {
				// Fill, then drain, crossing the wrap.
				for r.length() < capacity {
					if r.enqueue(next) != done {
						t.Fatalf("start %d cap %d step %d: enqueue(%d) = false with length %d", start, capacity, step, next, r.length())
					}
					next++
				}
				if r.enqueue(-1) != bounce {
					t.Fatalf("start %d cap %d: enqueue on a full ring = true", start, capacity)
				}
				for range step%capacity + 1 {
					v, st := r.dequeue()
					if st != done || v != want {
						t.Fatalf("start %d cap %d step %d: dequeue() = %d, %v, want %d, done", start, capacity, step, v, st, want)
					}
					want++
				}
			}
			for want < next {
				v, st := r.dequeue()
				if st != done || v != want {
					t.Fatalf("start %d cap %d: dequeue() = %d, %v, want %d, done", start, capacity, v, st, want)
				}
				want++
			}
			if v, st := r.dequeue(); st != bounce {
				t.Fatalf("start %d cap %d: dequeue on an empty ring = %d, %v", start, capacity, v, st)
			}
		}
	}
}

// TestRingDequeueReleases: a polled slot no longer keeps the entry reachable.
func TestRingDequeueReleases(t *testing.T) {
	s, err := NewRing[*int]("release", 4, Hooks[*int]{})
	if err != nil {
		t.Fatal(err)
	}
	x := 7
	s.Offer(&x)
	s.Poll()
	slots := s.cur.Load().slots
	for i := range slots {
		if v := slots[i].val; v != nil {
			t.Errorf("slot %d still holds %p after Poll", i, v)
		}
	}
}

// TestRingResizeAcrossWrap: sealing, copying and closing a ring whose
// entries straddle the wrap of the position counters.
func TestRingResizeAcrossWrap(t *testing.T) {
	var disposed []int
	s, err := NewRing("wrap", 8, Hooks[int]{OnDispose: func(v int) { disposed = append(disposed, v) }})
	if err != nil {
		t.Fatal(err)
	}
	s.cur.Store(newRingAt[int](8, posMask-2))
	for v := range 8 {
		if !s.Offer(v) {
			t.Fatalf("Offer(%d) = false", v)
		}
	}
	if got := s.Len(); got != 8 {
		t.Fatalf("Len() = %d across the wrap, want 8", got)
	}
	if got := s.Resize(4); got != 4 {
		t.Fatalf("Resize(4) = %d", got)
	}
	if want := []int{4, 5, 6, 7}; !slices.Equal(disposed, want) {
		t.Fatalf("Resize(4) disposed %v, want %v", disposed, want)
	}
	s.Resize(16)
	if v, ok := s.Poll(); !ok || v != 0 {
		t.Fatalf("Poll() = %d, %v, want 0, true", v, ok)
	}
	disposed = nil
	s.Close()
	if want := []int{1, 2, 3}; !slices.Equal(disposed, want) {
		t.Fatalf("Close disposed %v, want %v", disposed, want)
	}
	if got := s.Len(); got != 0 {
		t.Fatalf("Len() after Close = %d", got)
	}
}
