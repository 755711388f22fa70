package pipeline

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
)

// TestHotMarkUrgency: a promotion into a sink holding less than half its
// quota asks for its hot mark urgently; one into a sink above that lets
// the mark ride the writer's next batch.
func TestHotMarkUrgency(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.General = SinkConfig{Capacity: 8}
		// One promotion at a time: each mark sees the fill it was made at.
		o.Budget.PromotionsPerPulse, o.Budget.MaxPromotions = 1, 1
	}})
	defer e.shutdown()
	g := e.p.General()
	// The promotions must run one after the other, each marking once the
	// one before has delivered. A screening landing in cold kicks the
	// refill, which could start a promotion beside that chain (in the
	// moment between a promotion's end and its delivery) and race it
	// for the fill it sees. So cold fills first, with the sink closed,
	// and nothing is drawn afterwards.
	g.SetCapacity(0)
	e.fill(20, func() bool { return e.p.cold.Len() >= 16 })
	e.p.HoldDraws(true)
	e.fill(20, func() bool { return e.p.backlog.Len() == 0 && e.p.screening.Load() == 0 })
	g.SetCapacity(8)
	if err := e.p.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.fill(40, func() bool { return g.Len() == 8 })
	urgent, lazy := e.pers.marks()
	// Marks 1-4 find 0-3 entries (below half of 8), marks 5-8 find 4-7.
	if urgent != 4 || lazy != 4 {
		t.Fatalf("filling 8 places one at a time: %d urgent and %d lazy marks, want 4 and 4", urgent, lazy)
	}

	take := func(n int) {
		for range n {
			h, ok := g.Take()
			if !ok {
				t.Fatal("Take from a sink that should hold places failed")
			}
			h.Close()
		}
	}
	take(1) // 7 of 8 left: the refill's mark may wait
	e.fill(5, func() bool { return g.Len() == 8 })
	if u, l := e.pers.marks(); u != urgent || l != lazy+1 {
		t.Fatalf("refilling a sink at 7 of 8: urgent %d->%d, lazy %d->%d; want one more lazy mark", urgent, u, lazy, l)
	}
	// 2 of 8 left: the marks made at 2 and 3 are urgent, at 4-7 lazy.
	// The takes' kicks must start nothing (a paused region's do not:
	// Housekeep), or a promotion started after the first take would see
	// whatever fill the later ones left.
	if err := e.p.Housekeep(t.Context()); err != nil {
		t.Fatal(err)
	}
	take(6)
	e.cycle()
	if g.Len() != 8 {
		t.Fatalf("after a cycle the sink holds %d of 8", g.Len())
	}
	if u, l := e.pers.marks(); u != urgent+2 || l != lazy+5 {
		t.Fatalf("refilling a sink from 2 of 8: urgent %d->%d, lazy %d->%d; want two more urgent, four more lazy", urgent, u, lazy+1, l)
	}
}

// TestSettleFreesPromotionSlot: a promotion waiting for its hot mark to be
// committed does not hold its slot of Budget.MaxPromotions, so the
// promotions behind it go on; the sink's need counts the waiting ones, so
// no more are started than it lacks, and they all arrive once the marks
// are committed.
func TestSettleFreesPromotionSlot(t *testing.T) {
	store := &memStore{}
	e := newEnv(t, envConfig{store: store, opts: func(o *Options) {
		o.General = SinkConfig{Capacity: 4}
		o.Budget.MaxPromotions = 1
	}})
	defer e.shutdown()
	g := e.p.General()
	holdFourMarks(t, e, store, g)
	for range 5 {
		if err := e.p.Pulse(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.pending.Load(); n != 4 || g.Len() != 0 {
		t.Fatalf("before the commit: %d pending, %d in the sink; want 4 waiting, none served", n, g.Len())
	}
	close(store.hold)
	if err := e.p.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g.Len() != 4 || g.pending.Load() != 0 || e.p.Stats().Demotions != 0 {
		t.Fatalf("after the commit: fill %d, pending %d, demotions %d; want 4, 0, 0", g.Len(), g.pending.Load(), e.p.Stats().Demotions)
	}
}

// TestSettleHoldsNoGoroutine: a promotion waiting for its hot mark holds
// no goroutine (the mark's commit delivers it), yet the wait is work of
// the pipeline: Settle waits for it, and Close ends it by demoting the
// entries, closing their reservations, without waiting for the commit.
func TestSettleHoldsNoGoroutine(t *testing.T) {
	store := &memStore{}
	e := newEnv(t, envConfig{store: store, opts: func(o *Options) {
		o.General = SinkConfig{Capacity: 4}
	}})
	defer e.shutdown()
	g := e.p.General()
	holdFourMarks(t, e, store, g)
	defer close(store.hold)
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "pipeline.(*Pipeline).startSingle.func") {
		t.Fatalf("a goroutine of a promotion waits for its hot mark:\n%s", stacks)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := e.p.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle with 4 marks not committed = %v, want it to wait (DeadlineExceeded)", err)
	}
	if err := e.p.Close(t.Context()); err != nil {
		t.Fatalf("Close with marks not committed: %v", err)
	}
	if g.pending.Load() != 0 || g.Len() != 0 || e.p.Stats().Demotions != 4 {
		t.Fatalf("after Close: pending %d, fill %d, demotions %d; want 0, 0, 4", g.pending.Load(), g.Len(), e.p.Stats().Demotions)
	}
	if n := e.rsv.openCount(); n != 0 {
		t.Fatalf("%d reservations open after Close", n)
	}
}

// holdFourMarks fills cold while g (of capacity 4 in e, whose Persister
// is store's) takes nothing, then keeps the hot marks from being
// committed (the caller closes store.hold) and lets g take 4: it returns
// once 4 promotions wait for their marks and none is still running.
func holdFourMarks(t *testing.T, e *env, store *memStore, g *Sink) {
	t.Helper()
	g.SetCapacity(0)
	e.fill(10, func() bool { return e.p.cold.Len() >= 8 })
	store.mu.Lock()
	store.hold = make(chan struct{})
	store.mu.Unlock()
	g.SetCapacity(4)
	if _, ok := eventually.Within(10*time.Second, func() bool {
		if e.p.promoting.Load() == 0 {
			if err := e.p.Pulse(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		return g.pending.Load() >= 4 && e.p.promoting.Load() == 0
	}); !ok {
		t.Fatalf("%d promotions wait for their marks, want 4 (stats %+v)", g.pending.Load(), e.p.Stats())
	}
}
