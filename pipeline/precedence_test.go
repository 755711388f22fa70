package pipeline

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pacer"
)

// awaitGate waits (yielding the processor, never sleeping) until the
// gate's state satisfies cond, failing the test after a while.
func awaitGate(t *testing.T, g *pacer.Gate, what string, cond func(pacer.State) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := g.State()
		if cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gate state %+v", what, st)
		}
		runtime.Gosched()
	}
}

// TestPromotionsGoFirst pins the scheduling rule: a sink below its quota
// with places in cold is served first. The test holds every lane of a
// gate of one while the work queues up, then lets go: each screening,
// when it gets its turn, finds no short sink with cold places, no
// promotion waiting for a turn and none promised.
// Twice: after a pulse that starts promotions and screenings together,
// and after requests (Take) drain the sink between pulses, whose
// promotions start at once, ahead of screenings queued earlier.
func TestPromotionsGoFirst(t *testing.T) {
	gate := pacer.New(1)
	var (
		mu       sync.Mutex
		log      []string
		checking bool
	)
	record := func(ev string) {
		mu.Lock()
		if checking {
			log = append(log, ev)
		}
		mu.Unlock()
	}
	var e *env
	e = newEnv(t, envConfig{opts: func(o *Options) {
		o.Gate = gate
		o.General = SinkConfig{Capacity: 4}
		o.Budget.Screens, o.Budget.MaxScreens, o.Budget.Candidates = 8, 8, 8
		screen := o.Screen
		o.Screen = func(ctx context.Context, c geom.Chunk) (Screened, error) {
			mu.Lock()
			on := checking
			mu.Unlock()
			if on {
				g := e.p.General()
				if need, cold := g.need(), e.p.cold.Len(); need > 0 && cold > 0 {
					t.Errorf("a screening took a turn while the sink lacked %d places and cold held %d", need, cold)
				}
				if st := gate.State(); st.WaitingUrgent > 0 || st.Promised > 0 {
					t.Errorf("a screening took a turn while %d promotions waited and %d were promised", st.WaitingUrgent, st.Promised)
				}
			}
			record("screen")
			return screen(ctx, c)
		}
	}})
	defer e.shutdown()
	e.rsv.hook = func(geom.Chunk) error {
		record("reserve")
		return nil
	}
	g := e.p.General()
	// Cold fills first, the sink taking nothing.
	g.SetCapacity(0)
	e.fill(20, func() bool { return e.p.cold.Len() >= 24 })
	g.SetCapacity(4)

	ctx := context.Background()
	// hold takes every lane of the gate but the surge ones (the refill
	// does not starve here).
	hold := func() []*pacer.Turn {
		t.Helper()
		var ts []*pacer.Turn
		for range gate.Size() {
			turn, err := gate.Enter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, turn)
		}
		return ts
	}
	release := func(ts []*pacer.Turn) {
		for _, turn := range ts {
			turn.Leave()
		}
	}
	// checkLog verifies that n reservations and some screenings ran. (A
	// promotion and a screening may run at once, on the gate's urgent
	// lane and its other lane, so the log's order is not the rule's: the
	// screening function checks the rule as each screening starts.)
	checkLog := func(phase string, n int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		reserves, screens := 0, 0
		for _, ev := range log {
			switch ev {
			case "reserve":
				reserves++
			case "screen":
				screens++
			}
		}
		if reserves != n || screens == 0 {
			t.Errorf("%s: %d reservations and %d screenings ran, want %d and some (log %v)", phase, reserves, screens, n, log)
		}
		log, checking = nil, false
	}

	// finish lets the held work run with the checks on, waits for it, and
	// checks the log of phase (promotions started) and that the sink is
	// full again.
	finish := func(held []*pacer.Turn, phase string, promotions int) {
		t.Helper()
		mu.Lock()
		checking = true
		mu.Unlock()
		release(held)
		if err := e.p.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		checkLog(phase, promotions)
		if g.Len() != 4 {
			t.Fatalf("%s: the sink holds %d of 4", phase, g.Len())
		}
	}

	// 1. A pulse starts the sink's four promotions and eight screenings
	// while the test holds the lanes.
	held := hold()
	if err := e.p.Pulse(ctx); err != nil {
		t.Fatal(err)
	}
	awaitGate(t, gate, "4 promotions and 8 screenings", func(s pacer.State) bool { return s.WaitingUrgent+s.Promised == 4 && s.WaitingBackground == 8 })
	finish(held, "after a pulse", 4)

	// 2. Screenings queue (the sink is full), then requests take three
	// places: their promotions start at once and go first.
	held = hold()
	if err := e.p.Pulse(ctx); err != nil {
		t.Fatal(err)
	}
	awaitGate(t, gate, "8 screenings", func(s pacer.State) bool { return s.WaitingBackground == 8 })
	for range 3 {
		h, _, err := e.p.Take(ctx, Request{Player: "p"})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	awaitGate(t, gate, "3 promotions", func(s pacer.State) bool { return s.WaitingUrgent+s.Promised == 3 })
	finish(held, "after three takes", 3)
	if !gate.State().Idle() {
		t.Error("the gate holds lanes, waiters or promises once the work is done")
	}
}

// TestReserveWaits: a reservation made while the network pool is empty
// waits for the refill and leases the first entry that lands, counting
// one miss; without a wait, or once the wait has passed, it misses.
func TestReserveWaits(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Network = NetworkConfig{Enabled: true, Capacity: 2, LeaseTTL: time.Minute}
	}})
	defer e.shutdown()
	n := e.p.Network()
	ctx := context.Background()
	if _, _, err := n.ReserveWait(ctx, n.NewToken(), 0, nil, nil); err != ErrMiss {
		t.Fatalf("ReserveWait without a wait on an empty pool = %v, want ErrMiss", err)
	}
	if _, _, err := n.ReserveWait(ctx, n.NewToken(), time.Millisecond, nil, nil); err != ErrMiss {
		t.Fatalf("ReserveWait of 1 ms, nothing refilling = %v, want ErrMiss", err)
	}
	type result struct {
		loc Location
		err error
	}
	tok := n.NewToken()
	got := make(chan result, 1)
	go func() {
		loc, _, err := n.ReserveWait(ctx, tok, time.Hour, nil, nil)
		got <- result{loc, err}
	}()
	// The reservation misses before the refill begins.
	for deadline := time.Now().Add(10 * time.Second); e.p.Stats().Misses < 3; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the waiting reservation never missed")
		}
	}
	// The refill: cycles until the reservation is answered.
	var r result
	for done := false; !done; {
		e.cycle()
		select {
		case r = <-got:
			done = true
		default:
		}
	}
	if r.err != nil {
		t.Fatalf("a waiting reservation = %v, want a lease", r.err)
	}
	if loc, err := n.Reserve(tok); err != nil || loc != r.loc {
		t.Errorf("the token's lease = %v, %v; want %v", loc, err, r.loc)
	}
	if m := e.p.Stats().Misses; m != 3 {
		t.Errorf("misses %d, want 3 (each reservation once)", m)
	}
	// A fresh pipeline refills nothing without pulses: a closed stop
	// ends the wait.
	e2 := newEnv(t, envConfig{opts: func(o *Options) {
		o.Network = NetworkConfig{Enabled: true, Capacity: 2, LeaseTTL: time.Minute}
	}})
	defer e2.shutdown()
	stop := make(chan struct{})
	close(stop)
	n2 := e2.p.Network()
	if _, _, err := n2.ReserveWait(ctx, n2.NewToken(), time.Hour, stop, nil); err != ErrClosed {
		t.Errorf("ReserveWait stopped = %v, want ErrClosed", err)
	}
}

// TestPausedTakeStartsNothing: once Housekeep has run (the region is
// paused), a take starts no promotion between pulses; the next Pulse
// refills again.
func TestPausedTakeStartsNothing(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	g := e.p.General()
	e.fill(20, func() bool { return g.Len() == g.Cap() && e.p.cold.Len() > 0 })
	ctx := context.Background()
	if err := e.p.Housekeep(ctx); err != nil {
		t.Fatal(err)
	}
	h, _, err := e.p.Take(ctx, Request{Player: "p"})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if n := g.pending.Load(); n != 0 {
		t.Fatalf("a take in a paused pipeline started %d promotions", n)
	}
	e.cycle()
	if g.Len() != g.Cap() {
		t.Fatalf("after a pulse the sink holds %d of %d", g.Len(), g.Cap())
	}
}

// TestKickDuringRefillRuns: a kick that finds the refill busy leaves its
// round to the holder (kick never blocks), so the holder must run it once
// it lets go. Requests take two places while the test holds the refill as
// a pulse's round does; once it lets go, the sink is refilled without
// another pulse.
func TestKickDuringRefillRuns(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.General = SinkConfig{Capacity: 4} }})
	defer e.shutdown()
	g := e.p.General()
	g.SetCapacity(0)
	e.fill(20, func() bool { return e.p.cold.Len() >= 8 })
	g.SetCapacity(4)
	e.fill(5, func() bool { return g.Len() == 4 })

	ctx := context.Background()
	// Errors, not Fatal, inside: f runs holding refillMu.
	e.p.underRefill(func() {
		for range 2 {
			h, _, err := e.p.Take(ctx, Request{Player: "p"})
			if err != nil {
				t.Error(err)
				return
			}
			h.Close()
		}
		if n := g.Len(); n != 2 {
			t.Errorf("the sink holds %d after two takes, want 2", n)
		}
	})
	if err := e.p.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := g.Len(); n != 4 {
		t.Fatalf("the sink holds %d of 4 after the refill let go: the kicks that found it busy were lost", n)
	}
}
