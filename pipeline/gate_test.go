package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/world"
)

// TestGateBoundsScreenings: with a gate, no more screenings run at once
// than it admits, across the pipelines sharing it, and they still run to
// the end; without one, MaxScreens is the bound.
func TestGateBoundsScreenings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gate      *pacer.Gate
		pipelines int
		wantMax   int64 // the most at once must equal this (0: more than 3)
	}{
		{"no gate", nil, 1, 0},
		{"gate of 2", pacer.New(2), 1, 2},
		{"gate of 3 shared by 2 pipelines", pacer.New(3), 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running, most, done atomic.Int64
			var envs []*env
			for range tc.pipelines {
				screen := summaryScreen(flat)
				envs = append(envs, newEnv(t, envConfig{opts: func(o *Options) {
					o.Gate = tc.gate
					// No sink wants anything: the refill never starves,
					// so no surge lane opens (see pacer.TestGateSurge).
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
			if tc.gate != nil && !tc.gate.State().Idle() {
				t.Error("the gate holds lanes, waiters or promises after every screening ended")
			}
			for _, e := range envs {
				e.shutdown()
			}
		})
	}
}

// TestGateBoundsPromotions: promotions load and check their chunks in a
// turn of the gate, so no more run at once than it admits.
func TestGateBoundsPromotions(t *testing.T) {
	var running, most atomic.Int64
	gate := pacer.New(1)
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
// pulse (below its quota, pacing is off: see pacer.TestGateFollowsFill)
// until its sinks are refilled, and it lets go while paused (Housekeep)
// and at Close.
func TestGateHurries(t *testing.T) {
	gate := pacer.New(1)
	level := func() int32 { return gate.State().Level }
	// Promotions wait at their check until the sinks' shortness has been
	// seen, one at a time: otherwise those the first screenings kick
	// could fill the sinks before the pulse after Housekeep looks.
	hold := make(chan struct{})
	var released atomic.Bool
	release := func() {
		if released.CompareAndSwap(false, true) {
			close(hold)
		}
	}
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Gate = gate
		o.Budget.MaxPromotions = 1
		check := o.Check
		o.Check = func(r *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
			<-hold
			return check(r, b)
		}
	}})
	defer release() // before the env's shutdown, deferred in newEnv's cleanup
	if l := level(); l != pacer.Full {
		t.Fatalf("a gate no pipeline reported to yet: level %d, want full", l)
	}
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := level(); l != 0 {
		t.Fatalf("after a pulse with empty sinks: level %d, want 0", l)
	}
	// Paused (only Housekeep runs), it refills nothing and lets go.
	if err := e.p.Housekeep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := level(); l != pacer.Full {
		t.Fatalf("after Housekeep: level %d, want full", l)
	}
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := level(); l > pacer.Full/2 {
		t.Fatalf("a pulse after Housekeep, sinks still short: level %d", l)
	}
	release()
	for range 50 {
		if err := e.p.Pulse(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if level() == pacer.Full {
			break
		}
	}
	if l := level(); l != pacer.Full {
		t.Fatalf("after the sinks filled: level %d, want full", l)
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
	if l := level(); l != 0 {
		t.Fatalf("a new pipeline with empty sinks: level %d, want 0", l)
	}
	e2.shutdown()
	if l := level(); l != pacer.Full {
		t.Errorf("after Close: level %d, want full", l)
	}
}
