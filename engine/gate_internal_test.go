package engine

import (
	"runtime"
	"testing"
)

func TestScreenGate(t *testing.T) {
	// The option first (negative: none), then the configuration, then
	// GOMAXPROCS-1.
	if g := screenGate(-1, 5); g != nil {
		t.Errorf("screenGate(-1, 5) = a gate of %d, want none", g.Size())
	}
	if g := screenGate(3, 5); g.Size() != 3 {
		t.Errorf("screenGate(3, 5) admits %d, want 3", g.Size())
	}
	if g := screenGate(0, 5); g.Size() != 5 {
		t.Errorf("screenGate(0, 5) admits %d, want 5", g.Size())
	}
	if g, want := screenGate(0, 0), max(runtime.GOMAXPROCS(0)-1, 1); g.Size() != want {
		t.Errorf("screenGate(0, 0) admits %d, want GOMAXPROCS-1 = %d", g.Size(), want)
	}
}
