package pipeline

import (
	"errors"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// withEpochs swaps the env's resident store (before any reservation) for
// one that tracks changes through the returned Epochs.
func withEpochs(e *env) *world.Epochs {
	e.t.Helper()
	if err := e.res.Close(); err != nil {
		e.t.Fatal(err)
	}
	ep := world.NewEpochs()
	e.res = world.NewResident(e.src, world.ResidentOptions{Clock: e.p.clock, MaxChunks: -1, Epochs: ep})
	e.rsv.r = e.res
	return ep
}

func changedEnv(t *testing.T) (*env, *world.Epochs) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.General.Capacity = 6
		o.Login = LoginConfig{Enabled: true, PlayerCap: 3}
		o.Network = NetworkConfig{Enabled: true, Capacity: 3, LeaseTTL: time.Minute}
		o.Personal = PersonalConfig{Enabled: true, PerPlayer: 2}
	}})
	ep := withEpochs(e)
	if err := e.p.Personal().Open("alice", 0); err != nil {
		t.Fatal(err)
	}
	return e, ep
}

func (e *env) fillAll() {
	e.t.Helper()
	p := e.p
	e.fill(60, func() bool {
		return p.General().Len() == 6 && p.Login().Len() == 3 && p.Network().Len() == 3 &&
			p.Personal().PlayerLen("alice") == 2
	})
}

// hotChunks returns the chunks of every entry of a hot stage, leaving it
// as it was.
func hotChunks(s interface {
	PollSilent() (*Hot, bool)
	OfferSilent(*Hot) bool
	Len() int
}) []geom.Chunk {
	var out []geom.Chunk
	for range s.Len() {
		h, ok := s.PollSilent()
		if !ok {
			break
		}
		out = append(out, h.Chunk())
		s.OfferSilent(h)
	}
	return out
}

func sinkStat(st Stats, name string) SinkStats {
	for _, s := range st.Sinks {
		if s.Name == name {
			return s
		}
	}
	return SinkStats{}
}

// TestTakeSkipsChanged changes the chunk of every ready entry and takes
// from every sink: nothing is handed out, each entry is disposed once
// (rows gone, nothing back in cold), and the sinks refill with fresh ones.
func TestTakeSkipsChanged(t *testing.T) {
	e, ep := changedEnv(t)
	p := e.p
	e.fillAll()
	tok := p.Network().NewToken()
	if _, err := p.Network().Reserve(tok); err != nil {
		t.Fatal(err)
	}
	var all []geom.Chunk
	for _, s := range []*Sink{p.General(), p.Login().Sink, p.Network().pool} {
		all = append(all, hotChunks(s.ring)...)
	}
	bucket, _ := p.Personal().keyed.Get("alice")
	all = append(all, hotChunks(bucket)...)
	p.Network().mu.Lock()
	for _, l := range p.Network().holds {
		all = append(all, l.h.Chunk())
	}
	p.Network().mu.Unlock()
	cold0 := p.Stats().Cold.Fill
	ep.Bump(all...)

	if h, ok := p.General().Take(); ok {
		t.Fatalf("general handed out %v after its chunk changed", h.Location)
	}
	if h, ok := p.Login().Take(); ok {
		t.Fatalf("login handed out %v", h.Location)
	}
	if h, ok := p.Personal().Take("alice"); ok {
		t.Fatalf("personal handed out %v", h.Location)
	}
	if h, err := p.Network().Redeem(tok); !errors.Is(err, ErrMiss) {
		t.Fatalf("Redeem of a changed lease with an empty-of-fresh pool = %v, %v; want ErrMiss", h, err)
	}
	// The store redeemed the token before the change was seen: it is
	// used up.
	if _, err := p.Network().Redeem(tok); !errors.Is(err, ErrRedeemed) {
		t.Fatalf("second Redeem = %v, want ErrRedeemed", err)
	}
	st := p.Stats()
	for name, want := range map[string]uint64{"general": 6, "login": 3, "network": 3, "personal": 2} {
		if got := sinkStat(st, name).Changed; got != want {
			t.Errorf("sink %s: Changed = %d, want %d", name, got, want)
		}
	}
	if st.Changed != 14 || st.Cold.Fill != cold0 {
		t.Errorf("Changed %d (want 14), cold %d -> %d (changed entries must not be re-offered)", st.Changed, cold0, st.Cold.Fill)
	}
	for l, n := range e.pers.counts() {
		for _, c := range all {
			if l.Chunk() == c && n > 0 {
				// A fresh location of a changed chunk may be cold again
				// only through a new draw, which Held would show.
				if !p.held.has(l.Index) {
					t.Errorf("row of changed %v kept without a location in the pipeline", l)
				}
			}
		}
	}
	// The sinks refill from fresh copies and hand them out.
	e.fillAll()
	h, ok := p.General().Take()
	if !ok || h.Changed() {
		t.Fatalf("after refill: Take = %v, %v", h, ok)
	}
	h.Close()
	e.shutdown()
}

// TestRedeemReplacesChanged: a lease whose chunk changed is redeemed with
// a fresh entry of the pool.
func TestRedeemReplacesChanged(t *testing.T) {
	e, ep := changedEnv(t)
	p := e.p
	e.fillAll()
	n := p.Network()
	tok := n.NewToken()
	loc, err := n.Reserve(tok)
	if err != nil {
		t.Fatal(err)
	}
	ep.Bump(loc.Chunk())
	h, err := n.Redeem(tok)
	if err != nil {
		t.Fatal(err)
	}
	if h.Location == loc || h.Changed() {
		t.Fatalf("Redeem handed out %v (changed %v), the leased %v changed", h.Location, h.Changed(), loc)
	}
	h.Close()
	if _, err := n.Redeem(tok); !errors.Is(err, ErrRedeemed) {
		t.Fatalf("second Redeem = %v, want ErrRedeemed", err)
	}
	e.shutdown()
}

// TestDropChanged removes the entries of named chunks from every sink and
// from cold, deleting their rows, and leaves the others in order.
func TestDropChanged(t *testing.T) {
	e, _ := changedEnv(t)
	p := e.p
	e.fillAll()
	e.fill(40, func() bool { return p.Stats().Cold.Fill >= 10 })
	gen := hotChunks(p.General().ring)
	var coldLocs []Location
	for range p.cold.Len() {
		l, _ := p.cold.PollSilent()
		coldLocs = append(coldLocs, l)
		p.cold.OfferSilent(l)
	}
	drop := []geom.Chunk{gen[0], gen[2], coldLocs[1].Chunk(), {X: 999, Z: 999}}
	rows := e.pers.counts()
	n := p.DropChanged(drop)
	if n != 3 {
		t.Fatalf("DropChanged = %d, want 3", n)
	}
	if got, want := hotChunks(p.General().ring), append([]geom.Chunk{gen[1]}, gen[3:]...); !equalChunks(got, want) {
		t.Fatalf("general after DropChanged %v, want %v", got, want)
	}
	st := p.Stats()
	if sinkStat(st, "general").Changed != 2 || st.ChangedCold != 1 || st.Changed != 3 {
		t.Fatalf("stats: general changed %d, cold %d, total %d", sinkStat(st, "general").Changed, st.ChangedCold, st.Changed)
	}
	after := e.pers.counts()
	for l := range rows {
		for _, c := range drop[:3] {
			if l.Chunk() == c && after[l] != 0 {
				t.Fatalf("row of %v kept after DropChanged", l)
			}
		}
	}
	if p.held.has(coldLocs[1].Index) {
		t.Fatal("the dropped cold location is still held")
	}
	e.shutdown()
}

func equalChunks(a, b []geom.Chunk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTakeChangedAllocs keeps Take allocation-free with the freshness
// check on.
func TestTakeChangedAllocs(t *testing.T) {
	e, _ := changedEnv(t)
	e.fillAll()
	s := e.p.General()
	h, ok := s.Take()
	if !ok {
		t.Fatal("empty")
	}
	for {
		other, ok := s.Take()
		if !ok {
			break
		}
		other.Close()
	}
	allocs := testing.AllocsPerRun(100, func() {
		s.ring.OfferSilent(h)
		h2, ok := s.Take()
		if !ok || h2 != h {
			t.Fatal("Take lost the entry")
		}
	})
	if allocs != 0 {
		t.Fatalf("Take allocates %v times", allocs)
	}
	h.Close()
	e.shutdown()
}
