package pipeline

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world"
)

// TestGateBoundsScreenings: with a gate, no more screenings run at once
// than it admits, across the pipelines sharing it, and they still run to
// the end; without one, MaxScreens is the bound.
func TestGateBoundsScreenings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gate      *Gate
		pipelines int
		wantMax   int64 // the most at once must equal this (0: more than 3)
	}{
		{"no gate", nil, 1, 0},
		{"gate of 2", NewGate(2), 1, 2},
		{"gate of 3 shared by 2 pipelines", NewGate(3), 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running, most, done atomic.Int64
			var envs []*env
			for range tc.pipelines {
				screen := summaryScreen(flat)
				envs = append(envs, newEnv(t, envConfig{opts: func(o *Options) {
					o.Gate = tc.gate
					// No sink wants anything: the refill never starves,
					// so no surge lane opens (see TestGateSurge).
					o.General.Floor = -1
					o.Budget.Screens, o.Budget.MaxScreens = 8, 8
					o.Budget.Candidates = 16
					o.Screen = func(ctx context.Context, c geom.Chunk) (Screened, error) {
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(5 * time.Millisecond)
						running.Add(-1)
						done.Add(1)
						return screen(ctx, c)
					}
				}}))
			}
			for range 3 {
				for _, e := range envs {
					if err := e.p.Pulse(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				for _, e := range envs {
					if err := e.p.Settle(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch got := most.Load(); {
			case tc.wantMax == 0 && got <= 3:
				t.Errorf("without a gate at most %d screenings ran at once, want more than 3 (MaxScreens 8)", got)
			case tc.wantMax > 0 && got != tc.wantMax:
				t.Errorf("at most %d screenings ran at once, want %d", got, tc.wantMax)
			}
			if want := int64(3 * 8 * tc.pipelines); done.Load() != want {
				t.Errorf("%d screenings ran, want %d", done.Load(), want)
			}
			if tc.gate != nil && !tc.gate.idle() {
				t.Error("the gate holds lanes, waiters or promises after every screening ended")
			}
			for _, e := range envs {
				e.shutdown()
			}
		})
	}
	if NewGate(0).Size() != 1 || NewGate(5).Size() != 5 || (*Gate)(nil).Size() != 0 {
		t.Error("Gate.Size: want at least 1, or 0 for a nil gate")
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
	g := NewPacedGate(n, p)
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
		if !g.idle() {
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
		if g.Stats() != (GateStats{}) {
			t.Error("nil gate has stats")
		}
	})
}

// TestGateBoundsPromotions: promotions load and check their chunks in a
// turn of the gate, so no more run at once than it admits.
func TestGateBoundsPromotions(t *testing.T) {
	var running, most atomic.Int64
	gate := NewGate(1)
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Gate = gate
		o.Budget.MaxPromotions = 8
		check := o.Check
		o.Check = func(r *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			return check(r, b)
		}
	}})
	defer e.shutdown()
	for range 4 {
		if err := e.p.Pulse(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.p.Stats(); st.Promotions < 2 {
		t.Fatalf("%d promotions ran, want several", st.Promotions)
	}
	if got := most.Load(); got != 1 {
		t.Errorf("%d promotion checks ran at once through a gate of 1, want 1", got)
	}
}

// TestGateHurries: a pipeline's emptiest sink sets the gate's level each
// pulse (below its quota, pacing is off) until its sinks are
// refilled, and it lets go while paused (Housekeep) and at Close.
func TestGateHurries(t *testing.T) {
	gate := NewGate(1)
	gate.Request()
	now := gate.since()
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Gate = gate }})
	if !gate.pacing(now) || gate.level.Load() != fullFill {
		t.Fatalf("a gate with a request just now: pacing %v, level %d; want on, full", gate.pacing(now), gate.level.Load())
	}
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := gate.level.Load(); l != 0 || gate.pacing(now) {
		t.Fatalf("after a pulse with empty sinks: level %d, pacing %v; want 0 and off", l, gate.pacing(now))
	}
	// Paused (only Housekeep runs), it refills nothing and lets go.
	if err := e.p.Housekeep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := gate.level.Load(); l != fullFill {
		t.Fatalf("after Housekeep: level %d, want full", l)
	}
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := gate.level.Load(); l > fullFill/2 {
		t.Fatalf("a pulse after Housekeep, sinks still short: level %d", l)
	}
	for range 50 {
		if err := e.p.Pulse(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if gate.level.Load() == fullFill {
			break
		}
	}
	if l := gate.level.Load(); l != fullFill || !gate.pacing(now) {
		t.Fatalf("after the sinks filled: level %d, pacing %v; want full and on", l, gate.pacing(now))
	}
	for _, s := range e.p.singles {
		if s.Len() < s.Quota() {
			t.Fatalf("sink %s holds %d of a quota of %d, yet the level is full", s.name, s.Len(), s.Quota())
		}
	}
	e.shutdown()
	// A second pipeline, short, then closed: Close lets go.
	e2 := newEnv(t, envConfig{opts: func(o *Options) { o.Gate = gate }})
	if err := e2.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := gate.level.Load(); l != 0 {
		t.Fatalf("a new pipeline with empty sinks: level %d, want 0", l)
	}
	e2.shutdown()
	if l := gate.level.Load(); l != fullFill {
		t.Errorf("after Close: level %d, want full", l)
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
		{fullFill, fullFill, []time.Duration{100 * time.Microsecond}},
		{999, fullFill, nil},
		{fullFill, 0, nil},
	} {
		f := &fakePace{now: time.Hour}
		g := pacedGate(1, p, f)
		g.report(a, tc.fa, false)
		g.report(b, tc.fb, false)
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
		g.drop(b)
		if got := g.level.Load(); got != tc.fa {
			t.Errorf("fills %d, %d, the second dropped: level %d, want %d", tc.fa, tc.fb, got, tc.fa)
		}
	}
}
