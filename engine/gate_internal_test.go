package engine

import (
	"runtime"
	"testing"
)

func TestScreenGate(t *testing.T) {
	// The option first (negative: none), then the configuration, then
	// GOMAXPROCS-1.
	if g := refillGate(-1, 5); g != nil {
		t.Errorf("refillGate(-1, 5) = a gate of %d, want none", g.Size())
	}
	if g := refillGate(3, 5); g.Size() != 3 {
		t.Errorf("refillGate(3, 5) admits %d, want 3", g.Size())
	}
	if g := refillGate(0, 5); g.Size() != 5 {
		t.Errorf("refillGate(0, 5) admits %d, want 5", g.Size())
	}
	if g, want := refillGate(0, 0), max(runtime.GOMAXPROCS(0)-1, 1); g.Size() != want {
		t.Errorf("refillGate(0, 0) admits %d, want GOMAXPROCS-1 = %d", g.Size(), want)
	}
}
