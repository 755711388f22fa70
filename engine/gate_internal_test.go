package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/rtpengine/rtp/pacer"
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

// TestRefillStats: Refill reports the gate's size and its rests.
func TestRefillStats(t *testing.T) {
	e := &Engine{gate: pacer.NewWithPacing(2, pacer.Pacing{Quantum: time.Nanosecond, Rest: time.Microsecond, Linger: time.Hour})}
	if st := e.Refill(); st.Lanes != 2 || st.Rests != 0 || st.Rested != 0 {
		t.Fatalf("Refill of a new gate = %+v, want 2 lanes, no rests", st)
	}
	e.gate.Request()
	turn, err := e.gate.Enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // past the quantum: Leave rests
	turn.Leave()
	if st := e.Refill(); st.Rests != 1 || st.Rested <= 0 {
		t.Errorf("Refill after a paced unit = %+v, want one rest", st)
	}
	if st := (&Engine{}).Refill(); st != (RefillStats{}) {
		t.Errorf("Refill without a gate = %+v, want zero", st)
	}
}

// TestLocationsWithoutDatabase: an engine whose database is not open
// reports no writes.
func TestLocationsWithoutDatabase(t *testing.T) {
	if w := (&Engine{}).Locations(); w != (LocationWrites{}) {
		t.Errorf("Locations without a database = %+v, want zero", w)
	}
}
