package procworld_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// chunkOfTile returns a chunk of tile i (along x) at tile size 16.
func chunkOfTile(i int) geom.Chunk { return geom.Chunk{X: int64(i), Z: 0} }

// TestTileCacheBounded: the cache holds at most CacheTiles tiles, evicts
// the least recently used, and a neighbouring chunk of a cached tile
// does not reach the source.
func TestTileCacheBounded(t *testing.T) {
	src := &fakeSource{}
	w := newWorld(t, src, procworld.Options{TileSize: 16, CacheTiles: 3})
	for i := range 10 {
		load(t, w, chunkOfTile(i))
		if s := w.Stats(); s.Tiles > 3 || s.Tiles != min(i+1, 3) {
			t.Fatalf("after %d tiles the cache holds %d, want %d", i+1, s.Tiles, min(i+1, 3))
		}
	}
	if n := src.calls.Load(); n != 10 {
		t.Fatalf("%d source calls for 10 tiles", n)
	}
	// Cached now: tiles 7, 8, 9 (9 the most recent). Touch 7, add 10: 8 goes.
	summary(t, w, chunkOfTile(7))
	load(t, w, chunkOfTile(10))
	calls := src.calls.Load()
	for _, i := range []int{7, 9, 10} {
		load(t, w, chunkOfTile(i))
	}
	if n := src.calls.Load(); n != calls {
		t.Fatalf("tiles 7, 9 and 10 should be cached: %d more source calls", n-calls)
	}
	load(t, w, chunkOfTile(8))
	if n := src.calls.Load(); n != calls+1 {
		t.Fatalf("tile 8 should have been evicted: %d more source calls, want 1", n-calls)
	}

	// At the default tile size the 16 chunks of a 64-block tile share one
	// source call.
	src2 := &fakeSource{}
	w2 := newWorld(t, src2, procworld.Options{})
	for z := range int64(4) {
		for x := range int64(4) {
			load(t, w2, geom.Chunk{X: 8 + x, Z: -4 + z})
		}
	}
	if s := w2.Stats(); src2.calls.Load() != 1 || s.TileLoads != 1 || s.TileHits != 15 || s.Tiles != 1 {
		t.Fatalf("16 chunks of one tile: %d source calls, stats %+v", src2.calls.Load(), s)
	}
}

// TestTileCacheSingleFlight: concurrent reads of chunks in one tile make
// one source call.
func TestTileCacheSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{release: make(chan struct{})}
		w := newWorld(t, src, procworld.Options{})
		const readers = 8
		var wg sync.WaitGroup
		results := make([]*world.Chunk, readers)
		errs := make([]error, readers)
		for i := range readers {
			wg.Go(func() {
				pos := geom.Chunk{X: int64(i % 4), Z: int64(i / 4)}
				if i%2 == 0 {
					results[i], errs[i] = w.Load(context.Background(), pos)
				} else {
					results[i], errs[i] = w.Summary(context.Background(), pos)
				}
			})
		}
		synctest.Wait() // every reader is blocked: one in the source, the rest waiting for it
		if n := src.calls.Load(); n != 1 {
			t.Fatalf("%d source calls while %d readers wait for one tile", n, readers)
		}
		close(src.release)
		wg.Wait()
		for i := range readers {
			if errs[i] != nil || results[i] == nil {
				t.Fatalf("reader %d: %v", i, errs[i])
			}
		}
		if s := w.Stats(); src.calls.Load() != 1 || s.TileLoads != 1 || s.TileShared != readers-1 {
			t.Fatalf("%d source calls, stats %+v; want 1 load shared by %d", src.calls.Load(), s, readers-1)
		}
	})
}

func TestCancelledBeforeLoad(t *testing.T) {
	src := &fakeSource{}
	w := newWorld(t, src, procworld.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, fn := range map[string]func(context.Context, geom.Chunk) (*world.Chunk, error){"Load": w.Load, "Summary": w.Summary} {
		if c, err := fn(ctx, geom.Chunk{}); c != nil || err != context.Canceled {
			t.Errorf("%s with a cancelled ctx = %v, %v; want context.Canceled unwrapped", name, c, err)
		}
	}
	if n := src.calls.Load(); n != 0 {
		t.Fatalf("%d source calls with a cancelled ctx", n)
	}
}

// TestCancelDuringLoad: a reader whose ctx ends while its tile loads
// returns ctx's error; nothing is cached.
func TestCancelDuringLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{release: make(chan struct{})}
		w := newWorld(t, src, procworld.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = w.Load(ctx, geom.Chunk{})
		}()
		synctest.Wait()
		cancel()
		<-done
		if err != context.Canceled {
			t.Fatalf("Load = %v, want context.Canceled", err)
		}
		if s := w.Stats(); s.Tiles != 0 || s.TileLoads != 1 {
			t.Fatalf("stats %+v: want one load and nothing cached", s)
		}
	})
}

// TestCancelWaiter: a waiter whose ctx ends leaves; the load goes on for
// the loader.
func TestCancelWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{release: make(chan struct{})}
		w := newWorld(t, src, procworld.Options{})
		var loaderErr, waiterErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, loaderErr = w.Load(context.Background(), geom.Chunk{}) })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		wg.Go(func() { _, waiterErr = w.Load(ctx, geom.Chunk{X: 1}) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if waiterErr != context.Canceled {
			t.Fatalf("cancelled waiter: %v, want context.Canceled", waiterErr)
		}
		close(src.release)
		wg.Wait()
		if loaderErr != nil || src.calls.Load() != 1 || w.Stats().Tiles != 1 {
			t.Fatalf("loader: %v, %d source calls, %d tiles cached", loaderErr, src.calls.Load(), w.Stats().Tiles)
		}
	})
}

// TestCancelLoader: when the ctx of the reader that started the load ends,
// the load goes on for the reader still waiting: one source call, no
// inherited cancellation.
func TestCancelLoader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{release: make(chan struct{})}
		w := newWorld(t, src, procworld.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		var loaderErr, waiterErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, loaderErr = w.Load(ctx, geom.Chunk{}) })
		synctest.Wait()
		wg.Go(func() { _, waiterErr = w.Summary(context.Background(), geom.Chunk{X: 1}) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if loaderErr != context.Canceled || src.calls.Load() != 1 {
			t.Fatalf("loader: %v, %d source calls; want context.Canceled and one call", loaderErr, src.calls.Load())
		}
		close(src.release)
		wg.Wait()
		if waiterErr != nil || src.calls.Load() != 1 || w.Stats().Tiles != 1 {
			t.Fatalf("waiter: %v, %d source calls, %d tiles cached", waiterErr, src.calls.Load(), w.Stats().Tiles)
		}
	})
}

// TestSourceError: a source failure reaches every waiter of the load in a
// PosError and is not cached.
func TestSourceError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		src := &fakeSource{release: make(chan struct{}), err: boom}
		w := newWorld(t, src, procworld.Options{})
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i] = w.Load(context.Background(), geom.Chunk{X: int64(i)}) })
		}
		synctest.Wait()
		close(src.release)
		wg.Wait()
		for i, err := range errs {
			var pe *world.PosError
			if !errors.Is(err, boom) || !errors.As(err, &pe) || pe.Pos != (geom.Chunk{X: int64(i)}) {
				t.Fatalf("reader %d: %v, want boom in a PosError", i, err)
			}
		}
		if n := src.calls.Load(); n != 1 {
			t.Fatalf("%d source calls for one failing tile", n)
		}
		if _, err := w.Load(context.Background(), geom.Chunk{}); !errors.Is(err, boom) || src.calls.Load() != 2 {
			t.Fatalf("after a failure: %v with %d calls; want the source asked again", err, src.calls.Load())
		}
	})
}

// TestInvalidTile: a tile that fails validation is an error, never a
// panic.
func TestInvalidTile(t *testing.T) {
	for name, corrupt := range map[string]func(*terrain.Tile){
		"short elevations": func(t *terrain.Tile) { t.Elevations = t.Elevations[:10] },
		"unknown cover":    func(t *terrain.Tile) { t.Cover[3] = terrain.Cover(200) },
		"wrong request":    func(t *terrain.Tile) { t.Request.OriginX += 16 },
	} {
		w := newWorld(t, &fakeSource{corrupt: corrupt}, procworld.Options{})
		c, err := w.Load(context.Background(), geom.Chunk{X: 2, Z: 3})
		var pe *world.PosError
		if c != nil || !errors.Is(err, terrain.ErrInvalidTile) || !errors.As(err, &pe) {
			t.Errorf("%s: Load = %v, %v; want terrain.ErrInvalidTile in a PosError", name, c, err)
		}
	}
}

// TestSourcePanic: a panicking source crashes nobody: every reader of the
// load gets an error wrapping flight.ErrPanicked, and the tile loads again
// on the next read.
func TestSourcePanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics atomic.Int64
		src := &fakeSource{release: make(chan struct{}), corrupt: func(*terrain.Tile) {
			if panics.Add(1) == 1 {
				panic("source bug")
			}
		}}
		w := newWorld(t, src, procworld.Options{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = w.Load(context.Background(), geom.Chunk{}) })
		synctest.Wait()
		wg.Go(func() { _, errs[1] = w.Load(context.Background(), geom.Chunk{X: 1}) })
		synctest.Wait()
		close(src.release)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, flight.ErrPanicked) || !strings.Contains(err.Error(), "source bug") {
				t.Fatalf("reader %d: %v, want flight.ErrPanicked naming the panic", i, err)
			}
		}
		if _, err := w.Load(context.Background(), geom.Chunk{}); err != nil || src.calls.Load() != 2 {
			t.Fatalf("after the panic: %v with %d source calls; want a fresh load", err, src.calls.Load())
		}
	})
}
