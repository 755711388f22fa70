package pipeline

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stage"
)

// drainAll takes every entry out of s silently and puts them back, and
// returns them (an inventory without persistence side effects).
func drainAll[T any](s stage.Stage[T]) []T {
	var out []T
	for {
		v, ok := s.PollSilent()
		if !ok {
			break
		}
		out = append(out, v)
	}
	for _, v := range out {
		s.OfferSilent(v)
	}
	return out
}

// inventory counts the locations held anywhere in the pipeline.
func (p *Pipeline) inventory() map[Location]int {
	inv := map[Location]int{}
	for _, l := range drainAll[Location](p.cold) {
		inv[l]++
	}
	sinks := append([]*Sink(nil), p.singles...)
	if p.network != nil {
		sinks = append(sinks, p.network.pool)
		for _, l := range p.network.leasedLocations() {
			inv[l]++
		}
	}
	for _, s := range sinks {
		for _, h := range drainAll[*Hot](s.ring) {
			inv[h.Location]++
		}
	}
	if p.personal != nil {
		for _, k := range p.personal.keyed.Keys() {
			if st, ok := p.personal.keyed.Get(k); ok {
				for _, h := range drainAll(st) {
					inv[h.Location]++
				}
			}
		}
	}
	// A group subspace is held, and has its row, as its anchor.
	for _, g := range p.groups {
		for _, s := range drainAll(g.stage) {
			inv[s.Anchor]++
		}
	}
	return inv
}

// checkRows asserts that the rows are exactly the pipeline's inventory.
func (e *env) checkRows(when string) {
	e.t.Helper()
	e.checkRowsLeased(when, nil)
}

// checkRowsLeased asserts that the rows are the pipeline's inventory, but
// for the locations of leased, network leases granted since they entered
// the pipeline: a grant removes the row (the lease holds the location),
// and it stays without one if it comes back (see NetworkSink). Such a
// location has either no row or, having left and entered the pipeline
// again since, exactly its rows. No row is ever kept for a location the
// pipeline does not hold.
func (e *env) checkRowsLeased(when string, leased map[Location]bool) {
	e.t.Helper()
	inv, rows := e.p.inventory(), e.pers.counts()
	for l, n := range rows {
		if inv[l] == 0 {
			e.t.Fatalf("%s: location %+v has %d rows and is not in the pipeline", when, l, n)
		}
	}
	for l, n := range inv {
		if rows[l] != n && !(leased[l] && rows[l] == 0) {
			e.t.Fatalf("%s: location %+v held %d times, has %d rows", when, l, n, rows[l])
		}
	}
}

// checkHeld asserts the double-delivery guard on a settled pipeline: no
// chunk has two locations in it, and the guard holds exactly the chunks of
// the backlog, cold, the sinks and the leases.
func (e *env) checkHeld(when string) {
	e.t.Helper()
	p := e.p
	want := map[int64]int{}
	for _, c := range drainAll[Candidate](p.backlog) {
		want[c.Index]++
	}
	for l, n := range p.inventory() {
		want[l.Index] += n
	}
	for i, n := range want {
		if n > 1 {
			e.t.Fatalf("%s: chunk %d has %d locations in the pipeline, want at most 1", when, i, n)
		}
		if !p.held.has(i) {
			e.t.Fatalf("%s: chunk %d is in the pipeline but not held by the guard", when, i)
		}
	}
	if got := p.held.len(); got != len(want) {
		e.t.Fatalf("%s: the guard holds %d chunks, the pipeline %d", when, got, len(want))
	}
}

func TestHotStageContract(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.General.Capacity = 4 }})
	defer e.shutdown()
	g := e.p.General()
	mk := func(i int) *Hot {
		h := e.hot(geom.Block{X: int64(i) * 16, Z: 5})
		e.p.rowAdd(h.Location) // as its cold ingress did
		return h
	}

	t.Run("OverflowDisposesOnce", func(t *testing.T) {
		var hs []*Hot
		for i := range 5 {
			h := mk(i)
			hs = append(hs, h)
			g.ring.OfferSilent(h)
		}
		over := hs[4]
		if !over.Res.Closed() || !over.released.Load() {
			t.Fatal("the entry refused by a full hot stage still holds its reservation")
		}
		if e.pers.counts()[over.Location] != 0 {
			t.Fatal("the refused entry left the pipeline but kept its row")
		}
		if st := e.p.Stats().Reservations; st.Released != 1 || st.DoubleReleases != 0 {
			t.Fatalf("releases after one overflow: %+v, want exactly one", st)
		}
		for _, h := range hs[:4] {
			if h.Res.Closed() {
				t.Fatal("a stored entry lost its reservation")
			}
		}
	})

	t.Run("PollTransfersOwnership", func(t *testing.T) {
		h, ok := g.Take()
		if !ok {
			t.Fatal("miss")
		}
		clearStage[*Hot](g.ring) // disposes the rest
		if h.Res.Closed() {
			t.Fatal("disposing the stage closed a reservation it no longer owned")
		}
		h.Close()
		if !h.Res.Closed() {
			t.Fatal("Hot.Close did not close the reservation")
		}
	})

	t.Run("ResizeDownDisposesSurplus", func(t *testing.T) {
		var hs []*Hot
		for i := range 4 {
			hs = append(hs, mk(10+i))
			g.ring.OfferSilent(hs[i])
		}
		before := e.p.Stats().Reservations.Released
		if got := g.ring.Resize(1); got != 1 {
			t.Fatalf("Resize(1) = %d", got)
		}
		if got := e.p.Stats().Reservations.Released - before; got != 3 {
			t.Fatalf("Resize down released %d reservations, want the 3 surplus", got)
		}
		open := 0
		for _, h := range hs {
			if !h.Res.Closed() {
				open++
			}
		}
		if open != 1 || g.Len() != 1 {
			t.Fatalf("after Resize(1): %d reservations open, %d entries stored; want 1 and 1", open, g.Len())
		}
		// (Which entry a Ring keeps is the stage contract suite's business.)
		clearStage[*Hot](g.ring)
		g.ring.Resize(4)
	})

	t.Run("CloseDisposesEveryEntry", func(t *testing.T) {
		s, err := newSink(e.p, "scratch", KindGeneral, 8, 0, Criteria{})
		if err != nil {
			t.Fatal(err)
		}
		var hs []*Hot
		for i := range 6 {
			hs = append(hs, mk(20+i))
			s.ring.OfferSilent(hs[i])
		}
		coldBefore := e.p.cold.Len()
		s.ring.Close()
		s.ring.Close()
		for _, h := range hs {
			if !h.Res.Closed() {
				t.Fatal("Close left a reservation open")
			}
		}
		if e.p.cold.Len() != coldBefore {
			t.Fatal("Close recycled entries into cold")
		}
	})
	clearStage[*Hot](g.ring)
}

// TestSilentMoves: promotion, demotion and transfer write no row; ingress
// and terminal removal do; the rows always equal the pipeline's inventory.
func TestSilentMoves(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2}
		o.MinResidence = -1
	}})
	defer e.shutdown()
	ctx := context.Background()

	// Ingress: screening into cold fires one Add per location.
	e.fill(20, func() bool { return e.p.General().Len() == 10 && e.p.Login().Len() == 2 })
	e.checkRows("after fill")
	login := e.p.Login()
	joined, _ := login.Take() // room in the login reserve for a promotion
	joined.Close()

	ops := func() (int, int) { return e.pers.ops() }
	a0, r0 := ops()

	// Promotion: silent.
	loc, ok := e.p.cold.PollSilent()
	if !ok {
		t.Fatal("cold is empty")
	}
	h, ok := e.p.promoteOne(ctx, loc, nil)
	if !ok {
		t.Fatal("promotion failed")
	}
	settled := make(chan bool, 1)
	e.p.settle(loc, h, true, func(served bool) { settled <- served })
	if !<-settled {
		t.Fatal("promotion failed to settle")
	}
	e.p.deliverSingle(login.Sink, h)
	if a, r := ops(); a != a0 || r != r0 || login.Len() != 2 {
		t.Fatalf("promotion wrote rows: adds %d->%d, removes %d->%d", a0, a, r0, r)
	}

	// Transfer: silent (a login quota of 0 leaves a surplus; general is
	// short one).
	taken, _ := e.p.General().Take()
	a0, r0 = ops()
	login.quota.Store(0)
	e.p.transferSingles(e.p.clock(), 10)
	if login.Len() != 1 || e.p.General().Len() != 10 {
		t.Fatalf("transfer did not move a login entry: login %d, general %d", login.Len(), e.p.General().Len())
	}
	if a, r := ops(); a != a0 || r != r0 {
		t.Fatalf("transfer wrote rows")
	}

	// Demotion (draining the login reserve): silent, and the row stays.
	n := login.drain()
	if n != 1 {
		t.Fatalf("Drain demoted %d, want 1", n)
	}
	if a, r := ops(); a != a0 || r != r0 {
		t.Fatalf("demotion wrote rows")
	}
	e.checkRows("after demotion")

	// Terminal removal: a Take (earlier) removed one row; a disposal
	// removes one.
	if e.pers.counts()[taken.Location] != 0 {
		t.Fatal("the taken location kept its row")
	}
	taken.Close()
	d, _ := e.p.General().ring.PollSilent()
	e.p.General().ring.Dispose(d)
	if _, r := ops(); r != r0+1 {
		t.Fatalf("disposal removed %d rows, want 1", r-r0)
	}
	e.checkRows("after disposal")
}

// TestCompositeKeyRace is the LoginCacheTask regression: two copies of one
// location in the pipeline; demoting one (draining the login reserve) must
// not delete the row the other still needs.
func TestCompositeKeyRace(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Login = LoginConfig{Enabled: true, PlayerCap: 1} }})
	defer e.shutdown()
	h := e.hot(geom.Block{X: 8, Z: 8})
	// Copy 1 in cold (ingress), copy 2 hot in the login reserve (its own
	// ingress, then promoted silently).
	e.p.cold.Offer(h.Location)
	e.p.rowAdd(h.Location)
	e.p.Login().deliver(h, e.p.clock())
	if got := e.pers.counts()[h.Location]; got != 2 {
		t.Fatalf("rows = %d, want 2", got)
	}
	e.p.Login().drain()
	if got := e.pers.counts()[h.Location]; got != 2 {
		t.Fatalf("after draining the login copy rows = %d, want 2 (both copies live in cold)", got)
	}
	l, _ := e.p.cold.Poll()
	if got := e.pers.counts()[l]; got != 1 {
		t.Fatalf("after one copy left rows = %d, want 1", got)
	}
	e.checkRows("end")
}

func TestDisposalTerminality(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.ColdCapacity = 3 }})
	defer e.shutdown()
	g := e.p.General()

	t.Run("HotDisposeClosesAndRecyclesNothing", func(t *testing.T) {
		h := e.hot(geom.Block{X: 1, Z: 1})
		g.deliver(h, e.p.clock())
		coldBefore := e.p.cold.Len()
		v, _ := g.ring.PollSilent()
		g.ring.Dispose(v)
		if !h.Res.Closed() {
			t.Fatal("OnDispose did not close the reservation")
		}
		if e.p.cold.Len() != coldBefore || g.Len() != 0 {
			t.Fatal("disposal re-offered the entry")
		}
	})

	t.Run("DemotionIntoFullCold", func(t *testing.T) {
		for i := range 3 {
			e.p.cold.Offer(Location{World: "overworld", X: int64(100 + i), Z: 3, Y: 65})
		}
		h := e.hot(geom.Block{X: 40, Z: 40})
		e.p.rowAdd(h.Location)
		g.deliver(h, e.p.clock())
		_, r0 := e.pers.ops()
		rel0 := e.p.Stats().Reservations.Released
		v, _ := g.ring.PollSilent()
		e.p.demote(v, g.ring)
		if !h.Res.Closed() {
			t.Fatal("demotion did not close the reservation")
		}
		if e.p.cold.Len() != 3 || g.Len() != 0 {
			t.Fatalf("cold %d, general %d after demoting into a full cold", e.p.cold.Len(), g.Len())
		}
		if _, r := e.pers.ops(); r != r0+1 {
			t.Fatalf("the surplus location's row was removed %d times, want once", r-r0)
		}
		if got := e.p.Stats().Reservations.Released - rel0; got != 1 {
			t.Fatalf("released %d reservations, want 1", got)
		}
		clearStage[Location](e.p.cold)
	})

	t.Run("CloseRecyclesNothing", func(t *testing.T) {
		for i := range 3 {
			g.deliver(e.hot(geom.Block{X: int64(16 * i), Z: 100}), e.p.clock())
		}
		st0 := e.p.Stats()
		if err := e.p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := e.p.Stats()
		if st.Demotions != st0.Demotions || st.RowRemoves != st0.RowRemoves || st.Cold.Fill != 0 {
			t.Fatalf("Close demoted or removed rows: before %+v after %+v", st0, st)
		}
		if e.rsv.openCount() != 0 {
			t.Fatal("Close left reservations open")
		}
	})
}
