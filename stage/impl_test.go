package stage_test

import (
	"testing"

	"github.com/rtpengine/rtp/stage"
)

func TestNewCapacityErrors(t *testing.T) {
	for _, n := range []int{-1, stage.MaxCapacity + 1} {
		if s, err := stage.NewRing("bad", n, stage.Hooks[int]{}); err == nil || s != nil {
			t.Errorf("NewRing(capacity %d) = %v, %v, want an error", n, s, err)
		}
		if s, err := stage.NewQueue("bad", n, stage.Hooks[int]{}); err == nil || s != nil {
			t.Errorf("NewQueue(capacity %d) = %v, %v, want an error", n, s, err)
		}
	}
}

// The seed: resize returns the power-of-two-rounded capacity for the ring and
// the exact value for the simple implementation.
func TestAppliedCapacity(t *testing.T) {
	ring, err := stage.NewRing("ring", 5, stage.Hooks[int]{})
	if err != nil {
		t.Fatal(err)
	}
	queue, err := stage.NewQueue("queue", 5, stage.Hooks[int]{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ring.Cap(); got != 8 {
		t.Errorf("NewRing(5).Cap() = %d, want 8", got)
	}
	if got := queue.Cap(); got != 5 {
		t.Errorf("NewQueue(5).Cap() = %d, want 5", got)
	}
	tests := []struct{ n, ring, queue int }{
		{1, 1, 1}, {3, 4, 3}, {100, 128, 100}, {0, 0, 0}, {-3, 0, 0}, {64, 64, 64},
	}
	for _, tc := range tests {
		if got := ring.Resize(tc.n); got != tc.ring {
			t.Errorf("Ring.Resize(%d) = %d, want %d", tc.n, got, tc.ring)
		}
		if got := queue.Resize(tc.n); got != tc.queue {
			t.Errorf("Queue.Resize(%d) = %d, want %d", tc.n, got, tc.queue)
		}
	}
	// A Queue allocates on demand, so the clamp is cheap to check on it.
	if got := queue.Resize(stage.MaxCapacity + 10); got != stage.MaxCapacity {
		t.Errorf("Queue.Resize(MaxCapacity+10) = %d, want %d", got, stage.MaxCapacity)
	}
}
