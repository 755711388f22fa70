package pacer

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

// awaitGate waits (yielding the processor, never sleeping) until the
// gate's state satisfies cond, failing the test after a while.
func awaitGate(t *testing.T, g *Gate, what string, cond func(State) bool) {
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

// fakePace is a gate's clock and sleep under a test's control: work
// advances the clock, and a rest advances it by the rest and is recorded.
type fakePace struct {
	now   time.Duration
	rests []time.Duration // when each rest began
	asked []time.Duration // how long each rest was asked to be
	late  time.Duration   // how much longer than asked each rest lasts
}

func pacedGate(n int, p Pacing, f *fakePace) *Gate {
	g := NewWithPacing(n, p)
	g.since = func() time.Duration { return f.now }
	g.sleep = func(d time.Duration) {
		f.rests = append(f.rests, f.now)
		f.asked = append(f.asked, d)
		f.now += d + f.late
	}
	return g
}

// TestGatePacing: while requests come, a lane rests once it has run its
// quantum in a row, at Yield and at Leave, and only then; without
// requests, or a Linger after the last, or with pacing off, it never
// rests; a lane idle for a rest starts a fresh stretch.
func TestGatePacing(t *testing.T) {
	p := Pacing{Quantum: 200 * time.Microsecond, Rest: 100 * time.Microsecond, Linger: time.Second}
	ctx := context.Background()
	// work runs steps of d in a turn, yielding after each.
	work := func(t *testing.T, f *fakePace, turn *Turn, steps int, d time.Duration) {
		t.Helper()
		for range steps {
			f.now += d
			if err := turn.Yield(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("paced while requests come", func(t *testing.T) {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.Request()
		turn, err := g.Enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := f.now
		work(t, f, turn, 10, 50*time.Microsecond) // 500 us of work
		// A rest after every 200 us of work: at 200 and 400 us of it.
		want := []time.Duration{start + 200*time.Microsecond, start + 400*time.Microsecond + 100*time.Microsecond}
		if len(f.rests) != len(want) || f.rests[0] != want[0] || f.rests[1] != want[1] {
			t.Fatalf("rests began at %v (from %v), want %v", f.rests, start, want)
		}
		f.now += 150 * time.Microsecond // 250 us since the last rest
		turn.Leave()
		if len(f.rests) != 3 {
			t.Errorf("Leave after 250 us of work since the last rest: %d rests in all, want 3", len(f.rests))
		}
		// Each rest in proportion to its stretch: 200, 200 then 250 us
		// of work, Rest 100 us for each Quantum of 200.
		if st := g.Stats(); st.Rests != 3 || st.Rested != 325*time.Microsecond {
			t.Errorf("Stats = %+v, want 3 rests, 325us rested", st)
		}
	})
	t.Run("a long unit rests in proportion", func(t *testing.T) {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.Request()
		turn, _ := g.Enter(ctx)
		f.now += 600 * time.Microsecond // one step, three quanta long
		turn.Leave()
		if len(f.asked) != 1 || f.asked[0] != 300*time.Microsecond {
			t.Errorf("rests asked after a 600 us unit: %v, want [300us]", f.asked)
		}
	})
	t.Run("a late rest earns the next stretch more work", func(t *testing.T) {
		f := &fakePace{now: time.Hour, late: 40 * time.Microsecond}
		g := pacedGate(1, p, f)
		g.Request()
		turn, _ := g.Enter(ctx)
		start := f.now
		// First stretch 200 us, its rest 100 + 40 late: the 40 us late
		// earn 80 us of work (the share is 200 of work per 100 of rest),
		// so the next rest comes after 280 us of work, not 200.
		work(t, f, turn, 12, 40*time.Microsecond)
		second := start + 200*time.Microsecond + 140*time.Microsecond + 280*time.Microsecond
		if len(f.rests) < 2 || f.rests[1] != second {
			t.Fatalf("rests began at %v, want the second at %v", f.rests, second)
		}
		turn.Leave()
		// A very late rest earns at most one more quantum.
		f = &fakePace{now: time.Hour, late: 500 * time.Microsecond}
		g = pacedGate(1, p, f)
		g.Request()
		turn, _ = g.Enter(ctx)
		work(t, f, turn, 8, 100*time.Microsecond)
		if len(f.rests) < 2 {
			t.Fatalf("rests began at %v, want two", f.rests)
		}
		if ran := f.rests[1] - f.rests[0] - 600*time.Microsecond; ran != 400*time.Microsecond {
			t.Errorf("after a rest 500 us late, the next stretch ran %v, want 400us", ran)
		}
		turn.Leave()
	})
	t.Run("a lane idle for a rest starts afresh", func(t *testing.T) {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.Request()
		turn, _ := g.Enter(ctx)
		work(t, f, turn, 3, 50*time.Microsecond)
		turn.Leave() // 150 us: no rest
		f.now += 100 * time.Microsecond
		turn, _ = g.Enter(ctx)
		work(t, f, turn, 3, 50*time.Microsecond)
		turn.Leave()
		if len(f.rests) != 0 {
			t.Errorf("two stretches of 150 us a rest apart: rests at %v, want none", f.rests)
		}
		// Back at once: the stretch goes on.
		turn, _ = g.Enter(ctx)
		work(t, f, turn, 1, 50*time.Microsecond)
		turn.Leave()
		if len(f.rests) != 1 {
			t.Errorf("a third unit entered at once after 150 us, 50 us more: %d rests, want 1", len(f.rests))
		}
	})
	for _, tc := range []struct {
		name    string
		pace    Pacing
		request func(g *Gate, f *fakePace)
	}{
		{"no request yet", p, func(*Gate, *fakePace) {}},
		{"a linger after the last request", p, func(g *Gate, f *fakePace) {
			g.Request()
			f.now += time.Second
		}},
		{"pacing off", Pacing{Quantum: -1}, func(g *Gate, _ *fakePace) { g.Request() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePace{now: time.Hour}
			g := pacedGate(2, tc.pace, f)
			tc.request(g, f)
			turn, _ := g.Enter(ctx)
			work(t, f, turn, 100, 50*time.Microsecond)
			turn.Leave()
			if len(f.rests) != 0 {
				t.Errorf("%d rests, want none", len(f.rests))
			}
		})
	}
	t.Run("a unit stops once ctx ends", func(t *testing.T) {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.Request()
		turn, _ := g.Enter(ctx)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		f.now += time.Millisecond
		if err := turn.Yield(cctx); err != context.Canceled {
			t.Errorf("Yield with an ended ctx = %v, want context.Canceled", err)
		}
		if len(f.rests) != 1 {
			t.Errorf("%d rests, want 1 (the quantum was run)", len(f.rests))
		}
		turn.Leave()
		if !g.State().Idle() {
			t.Error("the lane was not given back")
		}
	})
	t.Run("nil", func(t *testing.T) {
		var g *Gate
		g.Request()
		turn, err := g.Enter(ctx)
		if turn != nil || err != nil {
			t.Fatalf("nil gate: Enter = %v, %v; want nil, nil", turn, err)
		}
		if err := turn.Yield(ctx); err != nil {
			t.Error(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := turn.Yield(cctx); err != context.Canceled {
			t.Errorf("nil turn: Yield with an ended ctx = %v, want context.Canceled", err)
		}
		turn.Leave()
		if g.Stats() != (Stats{}) {
			t.Error("nil gate has stats")
		}
	})
}

// TestGateSurge: a gate of one admits one background unit at a time, and
// two while a pipeline holding it reports starving.
func TestGateSurge(t *testing.T) {
	ctx := context.Background()
	g := New(1)
	key := new(int)
	first, err := g.EnterBackground(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan *Turn, 1)
	go func() {
		turn, err := g.EnterBackground(ctx)
		if err != nil {
			t.Error(err)
		}
		entered <- turn
	}()
	awaitGate(t, g, "a second background unit waiting", func(s State) bool { return s.WaitingBackground == 1 })
	// Starving: the surge lane opens for the waiting unit.
	g.Report(key, 0, true)
	second := <-entered
	// Not starving: the surge lane, once given back, stays shut.
	g.Report(key, 0, false)
	go func() {
		turn, err := g.EnterBackground(ctx)
		if err != nil {
			t.Error(err)
		}
		entered <- turn
	}()
	awaitGate(t, g, "a third background unit waiting", func(s State) bool { return s.WaitingBackground == 1 })
	second.Leave()
	if st := g.State(); st.WaitingUrgent != 0 || st.WaitingBackground != 1 {
		t.Fatalf("after a surge lane came back, not starving: %d urgent and %d background waiting, want the background unit still waiting", st.WaitingUrgent, st.WaitingBackground)
	}
	first.Leave()
	(<-entered).Leave()
	if !g.State().Idle() {
		t.Error("the gate is not idle at the end")
	}
}

// TestGatePromise: from Promise to its Enter or Cancel, no background
// unit is admitted, though lanes are free; a promise's turn is urgent.
func TestGatePromise(t *testing.T) {
	ctx := context.Background()
	g := New(1)
	for _, end := range []string{"cancel", "enter"} {
		promised := g.Promise()
		entered := make(chan *Turn, 1)
		go func() {
			turn, err := g.EnterBackground(ctx)
			if err != nil {
				t.Error(err)
			}
			entered <- turn
		}()
		awaitGate(t, g, "a background unit waiting behind the promise", func(s State) bool { return s.WaitingBackground == 1 && s.Promised == 1 })
		select {
		case <-entered:
			t.Fatalf("%s: a background unit was admitted while a promotion was promised", end)
		default:
		}
		if end == "cancel" {
			promised.Cancel()
			promised.Cancel() // a second Cancel does nothing
		} else {
			turn, err := promised.Enter(ctx)
			if err != nil || turn.back {
				t.Fatalf("a promised Enter = %+v, %v; want an urgent turn", turn, err)
			}
			turn.Leave()
		}
		(<-entered).Leave()
		if !g.State().Idle() {
			t.Fatalf("%s: the gate is not idle", end)
		}
	}
	var nilGate *Gate
	if p := nilGate.Promise(); p != nil {
		t.Error("a nil gate's Promise is not nil")
	} else if turn, err := p.Enter(ctx); turn != nil || err != nil {
		t.Errorf("a nil promise's Enter = %v, %v", turn, err)
	}
}

// TestGateFollowsFill: lanes rest only while every pipeline holding the
// gate reports its sinks at their quotas; the level is the minimum over
// the pipelines.
func TestGateFollowsFill(t *testing.T) {
	p := Pacing{Quantum: 200 * time.Microsecond, Rest: 100 * time.Microsecond, Linger: time.Second}
	ctx := context.Background()
	a, b := new(int), new(int) // two pipelines' keys
	for _, tc := range []struct {
		fa, fb int32
		want   []time.Duration // rests asked after 200 us of work
	}{
		{Full, Full, []time.Duration{100 * time.Microsecond}},
		{999, Full, nil},
		{Full, 0, nil},
	} {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.Report(a, tc.fa, false)
		g.Report(b, tc.fb, false)
		g.Request()
		turn, _ := g.Enter(ctx)
		f.now += 200 * time.Microsecond
		turn.Leave()
		if !slices.Equal(f.asked, tc.want) {
			t.Errorf("fills %d, %d: rests asked %v, want %v", tc.fa, tc.fb, f.asked, tc.want)
		}
		// A promotion's turn rests as the others do.
		promised := g.Promise()
		turn, _ = promised.Enter(ctx)
		f.now += 200 * time.Microsecond
		turn.Leave()
		if want := append(slices.Clone(tc.want), tc.want...); !slices.Equal(f.asked, want) {
			t.Errorf("fills %d, %d: after a promotion's turn, rests asked %v, want %v", tc.fa, tc.fb, f.asked, want)
		}
		g.Forget(b)
		if got := g.State().Level; got != tc.fa {
			t.Errorf("fills %d, %d, the second dropped: level %d, want %d", tc.fa, tc.fb, got, tc.fa)
		}
	}
}

// TestGateSize: a gate admits at least one unit at once; a nil gate has
// no bound.
func TestGateSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{{-1, 1}, {0, 1}, {1, 1}, {5, 5}} {
		if got := New(c.n).Size(); got != c.want {
			t.Errorf("New(%d).Size() = %d, want %d", c.n, got, c.want)
		}
	}
	if got := (*Gate)(nil).Size(); got != 0 {
		t.Errorf("nil gate: Size() = %d, want 0", got)
	}
}

// TestGateState: State counts the lanes held (and those held by
// background units), the units waiting and promised, and the fill
// reported, as they come and go.
func TestGateState(t *testing.T) {
	ctx := context.Background()
	g := New(1)
	if st := g.State(); !st.Idle() || st.Level != Full || st.Starved {
		t.Fatalf("a new gate: State() = %+v, want idle, level Full, not starved", st)
	}
	urgent, err := g.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	promised := g.Promise()
	entered := make(chan *Turn, 2)
	for range 2 {
		go func() {
			turn, err := g.EnterBackground(ctx)
			if err != nil {
				t.Error(err)
			}
			entered <- turn
		}()
	}
	awaitGate(t, g, "two background units waiting", func(s State) bool { return s.WaitingBackground == 2 })
	want := State{Held: 1, WaitingBackground: 2, Promised: 1, Level: Full}
	if st := g.State(); st != want || st.Idle() {
		t.Fatalf("one urgent unit in, one promised, two background waiting: State() = %+v, want %+v", st, want)
	}
	// Background units wait while a promise is out, surge lanes
	// included: once it is cancelled, starving opens the surge lane to
	// one of them.
	promised.Cancel()
	g.Report(g, 0, true)
	back := <-entered
	want = State{Held: 2, Background: 1, WaitingBackground: 1, Level: 0, Starved: true}
	if st := g.State(); st != want {
		t.Fatalf("starving, one background unit on the surge lane: State() = %+v, want %+v", st, want)
	}
	urgent.Leave()
	back2 := <-entered
	back.Leave()
	back2.Leave()
	g.Forget(g)
	if st := g.State(); !st.Idle() || st.Level != Full || st.Starved {
		t.Fatalf("every lane given back, the client gone: State() = %+v, want idle, level Full, not starved", st)
	}
	if st := (*Gate)(nil).State(); st != (State{}) {
		t.Errorf("nil gate: State() = %+v, want the zero State", st)
	}
}

// TestGateQuiet: a gate is quiet until its first request, not within d of
// the last one, and quiet again d after it; a nil gate is always quiet.
func TestGateQuiet(t *testing.T) {
	f := &fakePace{now: time.Hour}
	g := pacedGate(1, Pacing{}, f)
	if !g.Quiet(time.Second) {
		t.Error("a gate never asked is not quiet")
	}
	g.Request()
	f.now += 999 * time.Millisecond
	if g.Quiet(time.Second) {
		t.Error("quiet 999 ms after a request, want busy for 1 s")
	}
	if !g.Quiet(500 * time.Millisecond) {
		t.Error("not quiet for 500 ms 999 ms after a request")
	}
	f.now += time.Millisecond
	if !g.Quiet(time.Second) {
		t.Error("not quiet 1 s after the last request")
	}
	var nilGate *Gate
	nilGate.Request()
	if !nilGate.Quiet(time.Second) {
		t.Error("a nil gate is not quiet")
	}
}
