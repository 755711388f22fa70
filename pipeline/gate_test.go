package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
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
			if tc.gate != nil && len(tc.gate.slots) != 0 {
				t.Errorf("gate holds %d slots after every screening ended", len(tc.gate.slots))
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
