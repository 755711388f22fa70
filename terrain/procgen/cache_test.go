package procgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
)

// fakeCells returns a compute function that counts calls per key and
// returns a distinct cell for each key.
func fakeCells(calls *sync.Map) func(context.Context, cellKey) (*cell, error) {
	return func(ctx context.Context, k cellKey) (*cell, error) {
		n, _ := calls.LoadOrStore(k, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return &cell{n0x: k.x, n0z: k.z}, nil
	}
}

// TestCellCacheModel drives the cache with random keys and checks it
// against a model LRU after every step: the cached set, and that a hit never
// recomputes while a miss always does.
func TestCellCacheModel(t *testing.T) {
	var calls sync.Map
	const capacity = 4
	c := newCellCache(capacity, fakeCells(&calls))
	var model []cellKey // most recent first
	r := rand.New(rand.NewPCG(3, 4))
	for step := range 2000 {
		k := cellKey{int64(r.IntN(7)), int64(r.IntN(2))}
		before := c.computes.Load()
		cl, err := c.get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if cl.n0x != k.x || cl.n0z != k.z {
			t.Fatalf("step %d: get(%v) returned the cell of (%d,%d)", step, k, cl.n0x, cl.n0z)
		}
		hit := false
		for i, m := range model {
			if m == k {
				hit = true
				model = append(model[:i], model[i+1:]...)
				break
			}
		}
		model = append([]cellKey{k}, model...)
		if len(model) > capacity {
			model = model[:capacity]
		}
		if computed := c.computes.Load() - before; computed != map[bool]int64{true: 0, false: 1}[hit] {
			t.Fatalf("step %d: get(%v) computed %d times, model hit %v", step, k, computed, hit)
		}
		if c.len() != len(model) {
			t.Fatalf("step %d: %d cells cached, model has %d", step, c.len(), len(model))
		}
		c.mu.Lock()
		i := 0
		for got := range c.lru.Backward() { // most recent first, as model
			if got != model[i] {
				c.mu.Unlock()
				t.Fatalf("step %d: recency position %d holds %v, model %v", step, i, got, model[i])
			}
			i++
		}
		c.mu.Unlock()
	}
}

// TestCellCacheSharedMiss checks that concurrent misses for one key share
// one computation, and that a waiter whose context ends stops waiting.
func TestCellCacheSharedMiss(t *testing.T) {
	release := make(chan struct{})
	var computes atomic.Int64
	c := newCellCache(8, func(ctx context.Context, k cellKey) (*cell, error) {
		computes.Add(1)
		<-release
		return &cell{n0x: k.x}, nil
	})
	k := cellKey{1, 2}
	var wg sync.WaitGroup
	results := make([]*cell, 8)
	for i := range results {
		wg.Go(func() {
			cl, err := c.get(context.Background(), k)
			if err != nil {
				t.Error(err)
			}
			results[i] = cl
		})
	}
	// Wait until the computation is in flight, then a waiter that gives up.
	eventually.True(t, 10*time.Second, "the computation in flight", func() bool { return computes.Load() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.get(ctx, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting get with a deadline = %v, want DeadlineExceeded", err)
	}
	close(release)
	wg.Wait()
	if n := computes.Load(); n != 1 {
		t.Errorf("computed %d times, want 1", n)
	}
	for i, cl := range results {
		if cl != results[0] || cl == nil {
			t.Errorf("caller %d got %p, caller 0 got %p", i, cl, results[0])
		}
	}
}

// TestCellCacheComputerGivesUp checks that when the caller that started a
// computation gives up, the computation goes on for the caller still
// waiting, which gets its cell without a second computation; and that once
// every caller has left, the computation is cancelled.
func TestCellCacheComputerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var computes atomic.Int64
		cancelled := make(chan struct{})
		c := newCellCache(8, func(ctx context.Context, k cellKey) (*cell, error) {
			computes.Add(1)
			select {
			case <-release:
				return &cell{n0x: k.x}, nil
			case <-ctx.Done():
				close(cancelled)
				return nil, ctx.Err()
			}
		})
		k := cellKey{5, 5}
		ctx, cancel := context.WithCancel(context.Background())
		var firstErr, waiterErr error
		var got *cell
		var wg sync.WaitGroup
		wg.Go(func() { _, firstErr = c.get(ctx, k) })
		synctest.Wait()
		wg.Go(func() { got, waiterErr = c.get(context.Background(), k) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(release)
		wg.Wait()
		if !errors.Is(firstErr, context.Canceled) {
			t.Errorf("starter got %v, want context.Canceled", firstErr)
		}
		if waiterErr != nil || got == nil || got.n0x != 5 {
			t.Errorf("waiter got %v, %v; want the shared cell", got, waiterErr)
		}
		if n := computes.Load(); n != 1 {
			t.Errorf("computed %d times, want 1 (the starter's cancellation is not the computation's)", n)
		}

		// Every caller leaves: the computation is cancelled, nothing cached.
		k2 := cellKey{6, 6}
		release = make(chan struct{})
		ctx2, cancel2 := context.WithCancel(context.Background())
		wg.Go(func() { _, _ = c.get(ctx2, k2) })
		synctest.Wait()
		cancel2()
		wg.Wait()
		<-cancelled
		synctest.Wait()
		if _, ok := c.lru.Peek(k2); ok {
			t.Error("a cancelled computation was cached")
		}
	})
}
