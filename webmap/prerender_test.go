package webmap

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/bubble"
)

// TestPrerenderPlan checks the plan: coarsest zoom first, each tile over
// a region's box, no zoom with more than ViewTiles tiles for a region, and
// the bound.
func TestPrerenderPlan(t *testing.T) {
	m := newMap(t, newFake(), Options{})
	plan := m.PrerenderPlan(100, 4)
	if len(plan) == 0 {
		t.Fatal("empty plan")
	}
	perZoom := map[[2]any]int{}
	for i, p := range plan {
		if i > 0 && p.Zoom > plan[i-1].Zoom {
			t.Fatalf("plan %v: zoom %d after %d", plan, p.Zoom, plan[i-1].Zoom)
		}
		box := intersect(tileChunkRect(p.Zoom, p.TX, p.TZ), ChunkRect{MinX: -64, MinZ: -64, MaxX: 63, MaxZ: 63})
		if box.Len() == 0 {
			t.Fatalf("tile %+v misses the regions", p)
		}
		perZoom[[2]any{p.World, p.Zoom}]++
	}
	for k, n := range perZoom {
		if n > 4 {
			t.Errorf("%v: %d tiles, above the view's 4", k, n)
		}
	}
	// The regions span chunks -64..63, across the origin: 2 x 2 tiles at
	// every zoom from 8 to 1 (64 chunks a tile), 4 x 4 at zoom 0 (too
	// many); two worlds.
	if last := plan[len(plan)-1]; last.Zoom != 1 {
		t.Errorf("finest zoom %d, want 1", last.Zoom)
	}
	if got, want := len(plan), 8*4*2; got != want {
		t.Errorf("plan of %d tiles, want %d", got, want)
	}
	if got := m.PrerenderPlan(5, 4); len(got) != 5 {
		t.Errorf("bounded plan of %d tiles, want 5", len(got))
	}
}

// TestPrerenderYields checks that Prerender starts no tile while Busy
// holds or a tile request is being served, renders the plan once idle,
// and stops when its context ends.
func TestPrerenderYields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		m := newMap(t, f, Options{})
		var busy atomic.Bool
		busy.Store(true)
		type result struct {
			n   int
			err error
		}
		res := make(chan result, 1)
		go func() {
			n, err := m.Prerender(context.Background(), PrerenderOptions{Busy: busy.Load, MaxTiles: 6, ViewTiles: 4})
			res <- result{n, err}
		}()
		bubble.Advance(10 * time.Second) // fake time: ten polls
		if r := f.reads.Load() + f.reliefs.Load(); r != 0 || m.Stats().TileRenders != 0 {
			t.Fatalf("rendered while busy: %d reads, %d renders", r, m.Stats().TileRenders)
		}
		// Idle engine, but a tile request in progress.
		m.serving.Add(1)
		busy.Store(false)
		bubble.Advance(10 * time.Second)
		if n := m.Stats().TileRenders; n != 0 {
			t.Fatalf("rendered %d tiles while serving", n)
		}
		m.serving.Add(-1)
		r := <-res
		if r.err != nil || r.n != 6 {
			t.Fatalf("Prerender = %d, %v; want 6, nil", r.n, r.err)
		}
		for _, p := range m.PrerenderPlan(6, 4) {
			k := tileKey{tileID: tileID{world: p.World, zoom: p.Zoom, tx: p.TX, tz: p.TZ}, producer: m.worlds[p.World].Producer, renderer: RendererVersion}
			if _, ok := m.cachedTile(k); !ok {
				t.Errorf("tile %+v not cached", p)
			}
		}
		if st := m.Stats(); st.Prerendered != 6 {
			t.Errorf("Prerendered %d, want 6", st.Prerendered)
		}

		// Shutdown: a cancelled context ends a waiting Prerender.
		busy.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			n, err := m.Prerender(ctx, PrerenderOptions{Busy: busy.Load})
			res <- result{n, err}
		}()
		synctest.Wait()
		cancel()
		if r := <-res; !errors.Is(r.err, context.Canceled) || r.n != 0 {
			t.Fatalf("cancelled Prerender = %d, %v", r.n, r.err)
		}
	})
}

// TestPrerenderPreempted checks that a render in progress is abandoned
// within a Watch (not a Poll) once Busy holds, and the tile rendered again once idle.
func TestPrerenderPreempted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		started := make(chan struct{})
		var blocked atomic.Bool
		blocked.Store(true)
		f.hook = func(ctx context.Context) error {
			if blocked.CompareAndSwap(true, false) {
				close(started)
				<-ctx.Done() // a render that would go on until abandoned
				return ctx.Err()
			}
			return nil
		}
		m := newMap(t, f, Options{})
		var busy atomic.Bool
		type result struct {
			n   int
			err error
		}
		res := make(chan result, 1)
		go func() {
			n, err := m.Prerender(context.Background(), PrerenderOptions{Busy: busy.Load, MaxTiles: 2, ViewTiles: 4})
			res <- result{n, err}
		}()
		<-started
		busy.Store(true)
		bubble.Advance(DefaultPrerenderWatch) // one watch, fake time
		if st := m.Stats(); st.Preempted != 1 || st.TileRenders != 0 {
			t.Fatalf("after Busy: preempted %d, rendered %d; want 1 and 0", st.Preempted, st.TileRenders)
		}
		busy.Store(false)
		r := <-res
		if r.err != nil || r.n != 2 {
			t.Fatalf("Prerender = %d, %v; want 2, nil", r.n, r.err)
		}
		if st := m.Stats(); st.TileRenders != 2 || st.RenderErrors != 0 {
			t.Errorf("renders %d, errors %d; want 2 and 0", st.TileRenders, st.RenderErrors)
		}
	})
}
