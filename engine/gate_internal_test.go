package engine

import (
	"runtime"
	"testing"
)

func TestScreenGate(t *testing.T) {
	if g := screenGate(-1); g != nil {
		t.Errorf("screenGate(-1) = a gate of %d, want none", g.Size())
	}
	if g := screenGate(3); g.Size() != 3 {
		t.Errorf("screenGate(3) admits %d", g.Size())
	}
	if g, want := screenGate(0), max(runtime.GOMAXPROCS(0)-1, 1); g.Size() != want {
		t.Errorf("screenGate(0) admits %d, want GOMAXPROCS-1 = %d", g.Size(), want)
	}
}
