package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandedOutAllocs pins the hand-out hook's cost on the hot path: no
// allocation with nobody subscribed, nor with a subscriber.
func TestHandedOutAllocs(t *testing.T) {
	e := &Engine{opts: Options{}.withDefaults()}
	loc := Location{Region: "r", X: 1, Y: 2, Z: 3, Sink: "general"}
	if n := testing.AllocsPerRun(100, func() { e.handedOut(loc) }); n != 0 {
		t.Errorf("handedOut with no hook: %v allocations, want 0", n)
	}
	var calls int
	stop := e.OnHandout(func(Location, time.Time) { calls++ })
	defer stop()
	if n := testing.AllocsPerRun(100, func() { e.handedOut(loc) }); n != 0 {
		t.Errorf("handedOut with a hook: %v allocations, want 0", n)
	}
	if calls == 0 {
		t.Error("the hook was not called")
	}
}

// TestHooksConcurrent subscribes and unsubscribes while locations are
// handed out: a hook subscribed throughout sees every hand-out, and no
// hook is called after its stop returned and the hand-outs that were
// under way ended.
func TestHooksConcurrent(t *testing.T) {
	e := &Engine{opts: Options{}.withDefaults()}
	var steady atomic.Int64
	stop := e.OnHandout(func(Location, time.Time) { steady.Add(1) })
	defer stop()
	const workers, each = 4, 500
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				e.handedOut(Location{})
			}
		})
	}
	var churned atomic.Int64
	for range 200 {
		e.OnHandout(func(Location, time.Time) { churned.Add(1) })()
	}
	wg.Wait()
	if n := steady.Load(); n != workers*each {
		t.Errorf("the steady hook saw %d hand-outs, want %d", n, workers*each)
	}
	n := churned.Load()
	e.handedOut(Location{})
	if churned.Load() != n {
		t.Error("a stopped hook was called")
	}
	if p := e.hooks.list.Load(); p == nil || len(*p) != 1 {
		t.Errorf("hooks left: %v, want the steady one", p)
	}
}
