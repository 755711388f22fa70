package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world"
)

// groupEnv is a pipeline with the group sink enabled with the given
// profiles (the default one when none), and entries movable at once.
func groupEnv(t *testing.T, cfg envConfig, profiles ...GroupProfile) *env {
	t.Helper()
	opts := cfg.opts
	cfg.opts = func(o *Options) {
		o.MinResidence = -1
		o.Group = GroupConfig{Enabled: true, Profiles: profiles}
		if opts != nil {
			opts(o)
		}
	}
	return newEnv(t, cfg)
}

// fillGroups cycles until every group sink holds its capacity.
func (e *env) fillGroups() {
	e.t.Helper()
	e.fill(60, func() bool {
		for _, g := range e.p.Groups() {
			if g.Len() < g.Cap() {
				return false
			}
		}
		return true
	})
}

// checkSubspace asserts what every subspace of profile pr holds: Size
// distinct places of its anchor's chunk, within the radius of their
// centroid, each on an open reservation of its own, at the y the check
// reads on that reservation's chunk.
func checkSubspace(t *testing.T, s *Subspace, pr Profile) {
	t.Helper()
	if len(s.Places) != pr.Size {
		t.Fatalf("subspace of %v has %d places", pr, len(s.Places))
	}
	if !Fits(s.Places, pr.Radius) {
		t.Fatalf("subspace of %v does not fit its radius: %v", pr, blocksOf(s.Places))
	}
	seen := map[*world.Reservation]bool{}
	for _, h := range s.Places {
		if h.Chunk() != s.Anchor.Chunk() || h.Index != s.Anchor.Index {
			t.Fatalf("place %v outside the anchor's chunk %v", h.Block(), s.Anchor.Chunk())
		}
		if !h.live() || seen[h.Res] {
			t.Fatalf("place %v: reservation open %v, shared %v", h.Block(), h.live(), seen[h.Res])
		}
		seen[h.Res] = true
		if y, _, ok := fakeCheck(h.Res, h.Block()); !ok || int64(y) != h.Y {
			t.Fatalf("place %v at y %d: the check on its chunk says y %d, ok %v", h.Block(), h.Y, y, ok)
		}
	}
}

func blocksOf(hs []*Hot) []geom.Block {
	out := make([]geom.Block, len(hs))
	for i, h := range hs {
		out[i] = h.Block()
	}
	return out
}

func TestProfileValidate(t *testing.T) {
	for _, tc := range []struct {
		pr Profile
		ok bool
	}{
		{Profile{8, 8}, true},
		{Profile{1, 1}, true},
		{Profile{5, 2}, true},  // radius 1 around the centre: 5 columns
		{Profile{6, 2}, false}, // ... not 6
		{Profile{9, 3}, true},  // radius 1.5: 9 columns
		{Profile{10, 3}, false},
		{Profile{MaxGroupSize, MaxGroupRadius}, true},
		{Profile{0, 8}, false},
		{Profile{MaxGroupSize + 1, 8}, false},
		{Profile{8, 0}, false},
		{Profile{8, MaxGroupRadius + 1}, false},
	} {
		if err := tc.pr.Validate(); (err == nil) != tc.ok {
			t.Errorf("Profile%+v.Validate() = %v, want ok %v", tc.pr, err, tc.ok)
		}
	}
	if s := (Profile{8, 16}).String(); s != "8@16" {
		t.Errorf("String() = %q", s)
	}
	opts := Options{Group: GroupConfig{Enabled: true, Profiles: []GroupProfile{{Profile: Profile{4, 8}}, {Profile: Profile{4, 8}}, {Profile: Profile{6, 2}}}}}
	err := opts.Validate()
	for _, want := range []string{"duplicate group profile 4@8", "radius 2 leaves room for 5 places"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

// TestChooseAnySubsetFits is the construction's invariant: places within
// radius/2 of one point fit the radius around their own centroid in every
// subset, so choose finds k of them for every k; and a set that does not
// fit is refused, never returned.
func TestChooseAnySubsetFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		radius := 2 + rng.IntN(30)
		offs := diskOffsets(radius)
		n := 1 + rng.IntN(min(len(offs), 24))
		rng.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		places := make([]*Hot, n)
		for i := range places {
			places[i] = &Hot{Location: Location{X: 1000 + int64(offs[i][0]), Z: -40 + int64(offs[i][1])}}
		}
		// A random subset fits, whatever it is.
		sub := slices.Clone(places)
		rng.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
		if k := 1 + rng.IntN(n); !Fits(sub[:k], radius) {
			t.Fatalf("trial %d: %d places within %d/2 of a point, subset of %d does not fit: %v", trial, n, radius, k, blocksOf(sub[:k]))
		}
		for k := 1; k <= n; k++ {
			idx := choose(places, k, radius)
			if len(idx) != k || !slices.IsSorted(idx) {
				t.Fatalf("trial %d: choose(%d of %d, radius %d) = %v", trial, k, n, radius, idx)
			}
			pick := make([]*Hot, k)
			for i, j := range idx {
				pick[i] = places[j]
			}
			if !Fits(pick, radius) {
				t.Fatalf("trial %d: choose returned places that do not fit: %v", trial, blocksOf(pick))
			}
		}
		if choose(places, n+1, radius) != nil || choose(places, 0, radius) != nil {
			t.Fatalf("trial %d: choose of an impossible size returned places", trial)
		}
	}
	// Two places 10 blocks apart fit radius 5 around their centroid, not 4;
	// a column twice is never a fit.
	a := &Hot{Location: Location{X: 0, Z: 0}}
	b := &Hot{Location: Location{X: 10, Z: 0}}
	if !Fits([]*Hot{a, b}, 5) || Fits([]*Hot{a, b}, 4) || choose([]*Hot{a, b}, 2, 4) != nil {
		t.Error("Fits or choose misjudged two places 10 blocks apart")
	}
	if Fits([]*Hot{a, {Location: Location{X: 0, Z: 0}}}, 8) {
		t.Error("one column twice fits")
	}
}

// TestGroupPromotion: the group sink fills after the single-target
// sinks, each subspace Size places of its anchor's chunk within the
// radius, one row and one guard entry per subspace.
func TestGroupPromotion(t *testing.T) {
	e := groupEnv(t, envConfig{})
	defer e.shutdown()
	e.fillGroups()
	gs := e.p.Groups()
	if len(gs) != 1 || gs[0].Profile() != (Profile{DefaultGroupSize, DefaultGroupRadius}) || gs[0].Name() != "group/8@8" {
		t.Fatalf("group sinks %+v, want one of the default profile", gs)
	}
	g := gs[0]
	if g.Cap() != DefaultGroupCapacity || g.Places() != DefaultGroupCapacity*DefaultGroupSize {
		t.Fatalf("capacity %d, places %d", g.Cap(), g.Places())
	}
	if e.p.General().Len() != e.p.General().Cap() {
		t.Fatalf("the group sink filled before the general sink: general %d of %d", e.p.General().Len(), e.p.General().Cap())
	}
	for _, s := range drainAll(g.stage) {
		checkSubspace(t, s, g.Profile())
	}
	e.checkRows("filled")
	e.checkHeld("filled")
	st := e.p.Stats()
	var gst *SinkStats
	for i := range st.Sinks {
		if st.Sinks[i].Kind == "group" {
			gst = &st.Sinks[i]
		}
	}
	if gst == nil || gst.Group == nil || gst.Fill != g.Cap() || gst.Group.Places != g.Places() || gst.Group.Size != 8 || gst.Group.Radius != 8 || gst.Promotions != uint64(g.Cap()) {
		t.Fatalf("group sink stats %+v", gst)
	}
}

// TestSubsumptionServesSmallerGroups: an N-place subspace serves a request
// of any size k <= N, with k distinct places that fit the radius, and
// never one of size k > N.
func TestSubsumptionServesSmallerGroups(t *testing.T) {
	e := groupEnv(t, envConfig{}, GroupProfile{Profile: Profile{Size: 8, Radius: 8}, Capacity: 8})
	defer e.shutdown()
	ctx := context.Background()
	for k := 1; k <= 8; k++ {
		e.fillGroups()
		hs, sink, err := e.p.TakeGroup(ctx, GroupRequest{Size: k})
		if err := e.p.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		if err != nil || len(hs) != k || sink != "group/8@8" {
			t.Fatalf("TakeGroup(%d) = %d places from %q, %v", k, len(hs), sink, err)
		}
		if !Fits(hs, 8) {
			t.Fatalf("TakeGroup(%d): places do not fit radius 8: %v", k, blocksOf(hs))
		}
		for _, h := range hs {
			if !h.live() {
				t.Fatalf("TakeGroup(%d) handed out a closed place", k)
			}
			h.Close()
		}
	}
	for _, k := range []int{9, 0, -1} {
		if hs, _, err := e.p.TakeGroup(ctx, GroupRequest{Size: k}); !errors.Is(err, ErrGroupSize) || hs != nil {
			t.Errorf("TakeGroup(%d) = %d places, %v; want ErrGroupSize", k, len(hs), err)
		}
	}
	if err := e.p.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkRows("end")
	e.checkHeld("end")
}

// TestSubsumptionAcrossProfiles: a request goes to the smallest profile
// that holds it, and, when that one is empty, to a larger one (superset
// caching); never to a smaller one.
func TestSubsumptionAcrossProfiles(t *testing.T) {
	e := groupEnv(t, envConfig{},
		GroupProfile{Profile: Profile{Size: 4, Radius: 8}, Capacity: 1},
		GroupProfile{Profile: Profile{Size: 8, Radius: 8}, Capacity: 2})
	defer e.shutdown()
	ctx := context.Background()
	e.fillGroups()
	small, large := e.p.Groups()[0], e.p.Groups()[1]
	e.p.cold.Resize(0) // no refill between the takes
	take := func(k int) string {
		t.Helper()
		hs, sink, err := e.p.TakeGroup(ctx, GroupRequest{Size: k})
		if err != nil || len(hs) != k {
			t.Fatalf("TakeGroup(%d) = %d places, %v", k, len(hs), err)
		}
		for _, h := range hs {
			h.Close()
		}
		return sink
	}
	if s := take(3); s != small.Name() {
		t.Errorf("a group of 3 came from %q, want the best fit %q", s, small.Name())
	}
	if s := take(3); s != large.Name() {
		t.Errorf("a group of 3 with the 4-place profile empty came from %q, want %q", s, large.Name())
	}
	if s := take(6); s != large.Name() {
		t.Errorf("a group of 6 came from %q, want %q", s, large.Name())
	}
	// Only the small profile holds a subspace: a group of 6 must not take
	// it, and waits.
	e.p.cold.Resize(64)
	e.fillGroups()
	for large.Len() > 0 {
		s, _ := large.stage.PollSilent()
		large.stage.Dispose(s)
	}
	e.p.cold.Resize(0) // no refill of the large profile meanwhile
	hs, _, err := e.p.TakeGroup(ctx, GroupRequest{Size: 6, Wait: 20 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || hs != nil || small.Len() != 1 {
		t.Errorf("a group of 6 with only a 4-place subspace ready: %d places, %v, small profile holds %d", len(hs), err, small.Len())
	}
	if st := findGroupStatsOf(e.p.Stats(), large.Name()); st.Groups != 2 {
		t.Errorf("large profile served %d groups, want 2", st.Groups)
	}
	e.p.cold.Resize(64)
}

// TestSubsumptionNeverAuthorizesARejectedTransfer: rule 0 (subsumption)
// authorizes the size comparison only. A subspace the destination's
// Accepts rejects is never transferred, the reverse direction fails rule
// 0, and a certified transfer trims the subspace to the destination's
// Size and disposes the remainder once.
func TestSubsumptionNeverAuthorizesARejectedTransfer(t *testing.T) {
	// Only columns 3 blocks apart (on the grid of the chunk's centre) are
	// safe. The 8@12 profile finds 8 of them within 6 blocks of the
	// centre; the 4@2 profile needs 4 within 2 blocks of their centroid,
	// which no 4 columns of that grid are (a square of them reaches
	// 2.12 blocks).
	grid := func(c *world.Chunk) {
		for z := range 16 {
			for x := range 16 {
				if (x+1)%3 != 0 || (z+1)%3 != 0 {
					c.Columns[z*world.ChunkSize+x].Ground = lava
				}
			}
		}
	}
	e := groupEnv(t, envConfig{columns: grid},
		GroupProfile{Profile: Profile{Size: 4, Radius: 2}, Capacity: 2},
		GroupProfile{Profile: Profile{Size: 8, Radius: 12}, Capacity: 2})
	defer e.shutdown()
	narrow, wide := e.p.Groups()[0], e.p.Groups()[1]
	e.fill(60, func() bool { return wide.Len() == wide.Cap() })
	wide.floor.Store(-1) // from now on it lends what demand does not need
	if narrow.Len() != 0 {
		t.Fatalf("the 4@2 profile filled on terrain where it cannot: %d", narrow.Len())
	}
	sub, _ := wide.stage.PollSilent()
	if got := pairEligible[*Subspace](wide, narrow); got != ineligibleUncertified {
		t.Fatalf("rule 0 from 8 places to 4: %v, want the preconditions to hold", got)
	}
	if narrow.Accepts(sub) {
		t.Fatalf("4@2 accepts a subspace of %v", blocksOf(sub.Places))
	}
	if got := eligible[*Subspace](wide, narrow, sub); got.certified() {
		t.Fatalf("eligible(8@12 -> 4@2) = %v for a subspace the destination rejects", got)
	}
	if got := eligible[*Subspace](narrow, wide, sub); got != ineligibleFootprint {
		t.Fatalf("eligible(4@2 -> 8@12) = %v, want %v", got, ineligibleFootprint)
	}
	rel0 := e.p.Stats().Reservations.Released
	if moved := e.p.transferGroup(wide, narrow, sub, e.p.clock()); moved || narrow.Len() != 0 || !sub.live() || e.p.Stats().Reservations.Released != rel0 {
		t.Fatalf("transferGroup of a rejected subspace: moved %v, destination %d, subspace live %v", moved, narrow.Len(), sub.live())
	}
	wide.stage.OfferSilent(sub)
	// The pulse's transfers leave it too: the wide profile has no floor,
	// so with no demand it is over its quota, and the narrow one short.
	for range 3 {
		e.cycle()
	}
	if narrow.Len() != 0 || narrow.c.transfersIn.Load() != 0 || wide.Len() != wide.Cap() {
		t.Fatalf("after pulses: narrow %d (transfers in %d), wide %d", narrow.Len(), narrow.c.transfersIn.Load(), wide.Len())
	}
}

// TestTrimDisposesRemainderOnce: a subspace trimmed to k places, by a
// take or by a transfer, disposes the other places exactly once through
// the source stage's OnDispose: their reservations closed once, no
// reservation of the kept places touched, the anchor's row removed once
// (at the take) or kept (a transfer is silent), the guard entry released
// once.
func TestTrimDisposesRemainderOnce(t *testing.T) {
	t.Run("Take", func(t *testing.T) {
		e := groupEnv(t, envConfig{})
		defer e.shutdown()
		e.fillGroups()
		g := e.p.Groups()[0]
		const k = 3
		oldest := drainAll(g.stage)[0]
		st0 := e.p.Stats()
		_, r0 := e.pers.ops()
		hs, _, err := e.p.TakeGroup(context.Background(), GroupRequest{Size: k})
		if err != nil {
			t.Fatal(err)
		}
		kept := map[*Hot]bool{}
		for _, h := range hs {
			kept[h] = true
		}
		closed := 0
		for _, h := range oldest.Places {
			switch {
			case kept[h] && h.Res.Closed():
				t.Fatal("a place handed out had its reservation closed")
			case !kept[h] && !h.Res.Closed():
				t.Fatal("a place of the remainder kept its reservation")
			case !kept[h]:
				closed++
			}
		}
		st := e.p.Stats()
		if closed != DefaultGroupSize-k || st.Reservations.Released-st0.Reservations.Released != uint64(DefaultGroupSize-k) || st.Reservations.DoubleReleases != 0 {
			t.Fatalf("remainder: %d closed, %d released, %d double releases; want %d, %d, 0",
				closed, st.Reservations.Released-st0.Reservations.Released, st.Reservations.DoubleReleases, DefaultGroupSize-k, DefaultGroupSize-k)
		}
		if _, r := e.pers.ops(); r != r0+1 {
			t.Fatalf("the take removed %d rows, want the anchor's one", r-r0)
		}
		if e.pers.counts()[oldest.Anchor] != 0 || e.p.held.has(oldest.Anchor.Index) {
			t.Fatal("the anchor kept its row or its guard entry after the take")
		}
		if gs := findGroupStats(st); gs.Trimmed != uint64(DefaultGroupSize-k) || gs.Groups != 1 || gs.Players != k {
			t.Fatalf("group stats %+v", gs)
		}
		for _, h := range hs {
			h.Close()
		}
		if err := e.p.Settle(context.Background()); err != nil { // the refill the take started
			t.Fatal(err)
		}
		if got := e.p.Stats().Reservations.Released - st0.Reservations.Released; got != DefaultGroupSize {
			t.Fatalf("after closing the places handed out: %d released, want %d", got, DefaultGroupSize)
		}
		e.checkRows("after the take")
		e.checkHeld("after the take")
	})

	t.Run("Transfer", func(t *testing.T) {
		e := groupEnv(t, envConfig{},
			GroupProfile{Profile: Profile{Size: 3, Radius: 8}, Capacity: 1},
			GroupProfile{Profile: Profile{Size: 8, Radius: 8}, Capacity: 1})
		defer e.shutdown()
		small, large := e.p.Groups()[0], e.p.Groups()[1]
		e.fill(60, func() bool { return large.Len() == 1 })
		large.floor.Store(-1) // from now on it lends what demand does not need
		// Make room in the small profile and keep the refill off it.
		for small.Len() > 0 {
			s, _ := small.stage.PollSilent()
			small.stage.Dispose(s)
		}
		e.p.cold.Resize(0)
		sub := drainAll(large.stage)[0]
		st0 := e.p.Stats()
		a0, r0 := e.pers.ops()
		e.cycle() // the large profile is over its quota (no demand, no floor)
		if small.Len() != 1 || large.Len() != 0 {
			t.Fatalf("after the pulse: small %d, large %d; want the subspace moved", small.Len(), large.Len())
		}
		moved := drainAll(small.stage)[0]
		checkSubspace(t, moved, small.Profile())
		if moved.Anchor != sub.Anchor {
			t.Fatal("the moved subspace lost its anchor")
		}
		st := e.p.Stats()
		if got := st.Reservations.Released - st0.Reservations.Released; got != 5 || st.Reservations.DoubleReleases != 0 {
			t.Fatalf("the transfer released %d reservations, want the 5 of the remainder", got)
		}
		if a, r := e.pers.ops(); a != a0 || r != r0 {
			t.Fatalf("the transfer wrote rows: adds %d, removes %d", a-a0, r-r0)
		}
		if !e.p.held.has(sub.Anchor.Index) {
			t.Fatal("the transfer released the guard entry")
		}
		if gs := findGroupStatsOf(st, large.Name()); gs.Trimmed != 5 {
			t.Fatalf("source stats %+v, want 5 trimmed", gs)
		}
		if st.Transfers != st0.Transfers+1 {
			t.Fatalf("transfers %d -> %d", st0.Transfers, st.Transfers)
		}
		e.checkRows("after the transfer")
		e.checkHeld("after the transfer")
		e.p.cold.Resize(64)
	})
}

func findGroupStats(st Stats) GroupStats {
	for _, s := range st.Sinks {
		if s.Group != nil {
			return *s.Group
		}
	}
	return GroupStats{}
}

func findGroupStatsOf(st Stats, name string) GroupStats {
	for _, s := range st.Sinks {
		if s.Name == name && s.Group != nil {
			return *s.Group
		}
	}
	return GroupStats{}
}

// TestGroupNoRoom: where a chunk holds too few safe columns near its
// anchor, no subspace is made: the anchor goes back to cold (it is still
// a good single place), nothing is remembered, every reservation is
// closed, and the group refill backs off.
func TestGroupNoRoom(t *testing.T) {
	// One safe column per chunk: its centre.
	lonely := func(c *world.Chunk) {
		for i := range c.Columns {
			if i != 8*16+8 {
				c.Columns[i].Ground = lava
			}
		}
	}
	e := groupEnv(t, envConfig{columns: lonely})
	defer e.shutdown()
	g := e.p.Groups()[0]
	e.fill(60, func() bool { return g.g.noRoom.Load() > 0 })
	if g.Len() != 0 || g.backoff.Load() == 0 {
		t.Fatalf("group sink %d subspaces, backoff %d", g.Len(), g.backoff.Load())
	}
	e.mem.Rebuild()
	if n := e.mem.Stats().BadCount; n != 0 {
		t.Fatalf("memory holds %d chunks bad after promotions that found no room", n)
	}
	// The backoff grows while it keeps failing, and bounds the attempts.
	fails0 := g.g.noRoom.Load()
	for range 40 {
		e.cycle()
	}
	if got := g.g.noRoom.Load() - fails0; got > 8 {
		t.Fatalf("%d more promotions found no room in 40 pulses, want the backoff to keep them few", got)
	}
	e.checkRows("no room")
	e.checkHeld("no room")
}

// TestGroupRefillComesLast: while a single-target sink lacks entries and
// cold cannot fill it, no group promotion starts.
func TestGroupRefillComesLast(t *testing.T) {
	e := groupEnv(t, envConfig{opts: func(o *Options) {
		o.ColdCapacity = 4
		o.Budget.Candidates = 1
		o.Budget.Screens = 1
	}})
	defer e.shutdown()
	g := e.p.Groups()[0]
	for range 9 { // fewer pulses than the general sink's capacity (10)
		e.cycle()
		if e.p.General().Len() < e.p.General().Cap() && (g.Len() > 0 || g.c.promotions.Load() > 0) {
			t.Fatalf("a group promotion ran while the general sink held %d of %d", e.p.General().Len(), e.p.General().Cap())
		}
	}
	e.fillGroups()
}

// groupAdmitFunc adapts a func to a GroupAdmitter.
type groupAdmitFunc func([]*Hot) bool

func (f groupAdmitFunc) AdmitGroup(hs []*Hot) bool { return f(hs) }

// TestTakeGroupAdmitAndWait: places the admission refuses are closed and
// the next subspace is tried; an empty sink makes the request wait for
// the next subspace to land.
func TestTakeGroupAdmitAndWait(t *testing.T) {
	e := groupEnv(t, envConfig{realTime: true})
	defer e.shutdown()
	e.fillGroups()
	g := e.p.Groups()[0]
	ctx := context.Background()
	var refused []*Hot
	calls := 0
	hs, _, err := e.p.TakeGroup(ctx, GroupRequest{Size: 4, Admit: groupAdmitFunc(func(hs []*Hot) bool {
		calls++
		if calls == 1 {
			refused = hs
			return false
		}
		return true
	})})
	if err != nil || len(hs) != 4 || calls != 2 {
		t.Fatalf("TakeGroup = %d places, %v after %d admissions", len(hs), err, calls)
	}
	for _, h := range refused {
		if !h.Res.Closed() {
			t.Fatal("a refused place kept its reservation")
		}
	}
	if e.p.Stats().Refused != 4 {
		t.Fatalf("Refused = %d, want 4", e.p.Stats().Refused)
	}
	for _, h := range hs {
		h.Close()
	}

	// Empty the sink; a waiting request is served by the next promotion.
	for g.Len() > 0 {
		s, _ := g.stage.PollSilent()
		g.stage.Dispose(s)
	}
	var served atomic.Bool
	done := make(chan error, 1)
	go func() {
		hs, _, err := e.p.TakeGroup(ctx, GroupRequest{Size: 8, Wait: time.Minute})
		for _, h := range hs {
			h.Close()
		}
		served.Store(len(hs) == 8)
		done <- err
	}()
	for range 200 {
		e.cycle()
		select {
		case err := <-done:
			if err != nil || !served.Load() {
				t.Fatalf("the waiting group request: %v, served %v", err, served.Load())
			}
			return
		default:
		}
	}
	t.Fatal("the waiting group request was not served in 200 pulses")
}

// TestGroupChangedAndClear: a subspace with a place on a changed chunk is
// dropped (DropChanged), and Clear disposes every subspace, deleting
// their rows; nothing leaks (see shutdown).
func TestGroupChangedAndClear(t *testing.T) {
	e := groupEnv(t, envConfig{})
	defer e.shutdown()
	e.fillGroups()
	g := e.p.Groups()[0]
	subs := drainAll(g.stage)
	n := e.p.DropChanged([]geom.Chunk{subs[0].Places[3].Chunk()})
	if n < 1 || g.c.changed.Load() != 1 || !subs[0].Places[0].Res.Closed() {
		t.Fatalf("DropChanged of a subspace's chunk: %d dropped, group changed %d", n, g.c.changed.Load())
	}
	e.checkRows("after DropChanged")
	e.p.Clear()
	if g.Len() != 0 {
		t.Fatalf("Clear left %d subspaces", g.Len())
	}
	for _, s := range subs {
		for _, h := range s.Places {
			if !h.Res.Closed() {
				t.Fatal("Clear left a reservation open")
			}
		}
	}
	e.checkRows("after Clear")
}

// TestGroupLocations: the map's listing shows each subspace's places,
// numbered together, with their profile's radius.
func TestGroupLocations(t *testing.T) {
	e := groupEnv(t, envConfig{})
	defer e.shutdown()
	e.fillGroups()
	locs, _ := e.p.Locations(10000)
	byGroup := map[int][]Location{}
	for _, l := range locs {
		if l.Group > 0 {
			if !l.Hot || l.Sink != "group/8@8" || l.Radius != 8 {
				t.Fatalf("group place listed as %+v", l)
			}
			byGroup[l.Group] = append(byGroup[l.Group], l.Location)
		}
	}
	if len(byGroup) != DefaultGroupCapacity {
		t.Fatalf("%d subspaces listed, want %d", len(byGroup), DefaultGroupCapacity)
	}
	for id, ls := range byGroup {
		if len(ls) != DefaultGroupSize {
			t.Errorf("subspace %d listed with %d places", id, len(ls))
		}
	}
	if g := e.p.Groups()[0]; g.Len() != DefaultGroupCapacity {
		t.Fatalf("listing changed the sink: %d", g.Len())
	}
}

// TestGroupDisabled: a pipeline without the group sink refuses group
// requests with ErrNoSink.
func TestGroupDisabled(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	if _, _, err := e.p.TakeGroup(context.Background(), GroupRequest{Size: 2}); !errors.Is(err, ErrNoSink) {
		t.Fatalf("TakeGroup without a group sink: %v", err)
	}
	if e.p.MaxGroup() != 0 || e.p.Groups() != nil {
		t.Fatal("a pipeline without a group sink reports one")
	}
}

// TestGroupDropsKnownBad: a subspace whose chunk memory marks bad after it
// was cached (a unique-placement mark, a claim) is disposed at the next
// pulse: no request could be given it, and it would keep the region
// holding something forever.
func TestGroupDropsKnownBad(t *testing.T) {
	e := groupEnv(t, envConfig{})
	defer e.shutdown()
	e.fillGroups()
	g := e.p.Groups()[0]
	sub := drainAll(g.stage)[1]
	if err := e.mem.AddBad(sub.Anchor.Index, memory.CauseUniquePlacement, ""); err != nil {
		t.Fatal(err)
	}
	e.mem.Rebuild()
	known := e.p.Stats().KnownBad
	e.p.cold.Resize(0) // no refill: the count below is the drop alone
	e.cycle()
	if g.Len() != g.Cap()-1 || !sub.Places[0].Res.Closed() || e.p.Stats().KnownBad != known+1 {
		t.Fatalf("after the pulse: %d subspaces, the marked one closed %v, known bad %d (was %d)",
			g.Len(), sub.Places[0].Res.Closed(), e.p.Stats().KnownBad, known)
	}
	for _, s := range drainAll(g.stage) {
		if s == sub {
			t.Fatal("the subspace of the marked chunk is still in the sink")
		}
	}
	e.checkRows("after the drop")
	e.p.cold.Resize(64)
}

// TestGroupExclude: the columns GroupConfig.Exclude names (the engine's
// unique-placement spots) are never made places of a subspace, and a
// chunk left with too little room makes none.
func TestGroupExclude(t *testing.T) {
	var west ColumnSet // every column with local x below 8
	for z := range 16 {
		for x := range 8 {
			west.Add(x, z)
		}
	}
	var calls atomic.Int64
	e := groupEnv(t, envConfig{opts: func(o *Options) {
		o.Group.Exclude = func(geom.Chunk) ColumnSet { calls.Add(1); return west }
	}})
	defer e.shutdown()
	e.fillGroups()
	if calls.Load() == 0 {
		t.Fatal("Exclude was never asked")
	}
	for _, s := range drainAll(e.p.Groups()[0].stage) {
		checkSubspace(t, s, e.p.Groups()[0].Profile())
		for _, h := range s.Places {
			if x, z := h.Block().Local(); west.Has(x, z) {
				t.Fatalf("place %v on an excluded column (local %d, %d)", h.Block(), x, z)
			}
		}
	}

	var all ColumnSet
	for i := range all {
		all[i] = ^uint64(0)
	}
	f := groupEnv(t, envConfig{opts: func(o *Options) {
		o.Group.Exclude = func(geom.Chunk) ColumnSet { return all }
	}})
	defer f.shutdown()
	g := f.p.Groups()[0]
	f.fill(60, func() bool { return g.g.noRoom.Load() > 0 })
	if g.Len() != 0 {
		t.Fatalf("%d subspaces made where every column is excluded", g.Len())
	}
}
