package pipeline

import (
	"errors"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/world"
)

// fakeSink is a hotSink with every property settable, for the rules alone.
type fakeSink struct {
	name                       string
	cold                       stage.Stage[Location]
	accepts                    func(*Hot) bool
	extrinsic, leased, narrows bool
	cost                       int
	acceptCalls                int
}

func (f *fakeSink) Name() string                      { return f.name }
func (f *fakeSink) coldSource() stage.Stage[Location] { return f.cold }
func (f *fakeSink) Accepts(h *Hot) bool               { f.acceptCalls++; return f.accepts(h) }
func (f *fakeSink) HasExtrinsicVerifier() bool        { return f.extrinsic }
func (f *fakeSink) externallyLeased() bool            { return f.leased }
func (f *fakeSink) narrowsBeyondColdSource() bool     { return f.narrows }
func (f *fakeSink) chunkCostPerEntry() int            { return max(f.cost, 1) }
func (f *fakeSink) demandWeight() int64               { return 0 }
func (f *fakeSink) Len() int                          { return 0 }
func (f *fakeSink) Cap() int                          { return 0 }

func eligibilityEnv(t *testing.T) *env {
	return newEnv(t, envConfig{opts: func(o *Options) {
		o.Extra = []SinkConfig{
			{Name: "portal", Capacity: 2},
			{Name: "spawn", Capacity: 2, Criteria: Criteria{Contains: func(l Location) bool { return l.X < 100 }}},
			{Name: "claims", Capacity: 2, Criteria: Criteria{Extrinsic: true}},
			{Name: "claimsNarrow", Capacity: 2, Criteria: Criteria{Extrinsic: true, Narrows: true}},
		}
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2, Criteria: Criteria{World: "overworld"}}
		o.Network = NetworkConfig{Enabled: true}
		o.Personal = PersonalConfig{Enabled: true}
		o.Groups = []GroupConfig{
			{Name: "g4", Size: 4}, {Name: "g4b", Size: 4}, {Name: "g2", Size: 2},
			{Name: "g2narrow", Size: 2, Criteria: Criteria{Contains: func(l Location) bool { return l.Z > 1000 }}},
		}
	}})
}

func TestEligibilityRules(t *testing.T) {
	e := eligibilityEnv(t)
	defer e.shutdown()
	p := e.p
	inside := e.hot(geom.Block{X: 40, Z: 8})
	outside := e.hot(geom.Block{X: 200, Z: 8})
	defer inside.Close()
	defer outside.Close()

	type hs = hotSink[*Hot]
	cases := []struct {
		name string
		a, b hs
		h    *Hot
		want eligibility
	}{
		{"same sink", p.General(), p.General(), inside, ineligibleSameSink},
		{"to network", p.General(), p.Network(), inside, ineligibleLeased},
		{"from network", p.Network(), p.General(), inside, ineligibleLeased},
		{"to personal", p.General(), p.Personal(), inside, ineligibleLeased},
		{"from personal", p.Personal(), p.General(), inside, ineligibleLeased},
		{"provenance", p.General(), p.Extra("portal"), inside, certifiedProvenance},
		{"narrowing, accepted", p.General(), p.Extra("spawn"), inside, certifiedRecheck},
		{"narrowing, rejected", p.General(), p.Extra("spawn"), outside, ineligibleUncertified},
		{"login narrows to its world", p.General(), p.Login(), inside, certifiedRecheck},
		{"extrinsic, common provenance", p.General(), p.Extra("claims"), inside, certifiedProvenance},
		{"extrinsic and narrowing", p.General(), p.Extra("claimsNarrow"), inside, ineligibleUncertified},
	}
	for _, tc := range cases {
		if got := eligible(tc.a, tc.b, tc.h); got != tc.want {
			t.Errorf("%s: Eligible(%s, %s) = %v, want %v", tc.name, tc.a.Name(), tc.b.Name(), got, tc.want)
		}
	}

	// Other cold sources: no provenance. An extrinsic destination is then
	// never eligible, even though its Accepts would pass (and it is not
	// even asked); a plain one is certified by recheck only.
	other, _ := stage.NewQueue[Location]("other cold", 1, stage.Hooks[Location]{})
	ext := &fakeSink{name: "ext", cold: other, extrinsic: true, accepts: func(*Hot) bool { return true }}
	if got := eligible[*Hot](p.General(), ext, inside); got != ineligibleUncertified || ext.acceptCalls != 0 {
		t.Errorf("extrinsic sink on another cold: %v after %d Accepts calls, want uncertified without asking", got, ext.acceptCalls)
	}
	plain := &fakeSink{name: "plain", cold: other, accepts: func(*Hot) bool { return true }}
	if got := eligible[*Hot](p.General(), plain, inside); got != certifiedRecheck {
		t.Errorf("plain sink on another cold: %v, want certified by recheck", got)
	}
	nilCold := &fakeSink{name: "nil", accepts: func(*Hot) bool { return false }}
	if got := eligible[*Hot](nilCold, &fakeSink{name: "nil2", accepts: func(*Hot) bool { return false }}, inside); got != ineligibleUncertified {
		t.Errorf("two sinks without a cold source share no provenance: %v", got)
	}

	// Rule 0 on footprints.
	type gs = hotSink[*Subspace]
	sub := &Subspace{}
	for _, tc := range []struct {
		a, b gs
		want eligibility
	}{
		{p.Group("g2"), p.Group("g4"), ineligibleFootprint},
		{p.Group("g4"), p.Group("g2"), certifiedProvenance},
		{p.Group("g4"), p.Group("g4b"), certifiedProvenance},
		{p.Group("g4"), p.Group("g2narrow"), ineligibleUncertified},
	} {
		if got := eligible(tc.a, tc.b, sub); got != tc.want {
			t.Errorf("Eligible(%s, %s) = %v, want %v", tc.a.Name(), tc.b.Name(), got, tc.want)
		}
	}
	if pairEligible[*Subspace](p.Group("g2"), p.Group("g4")) != ineligibleFootprint ||
		pairEligible[*Hot](p.General(), p.Extra("portal")) != ineligibleUncertified {
		t.Error("PairEligible disagrees with rule 0")
	}
	if certifiedRecheck.String() != "certified by recheck" || eligibility(42).String() != "Eligibility(42)" {
		t.Error("Eligibility.String")
	}
}

// TestRecheckZeroLoads: Accepts and eligible read the resident chunk the
// entry's reservation holds and never load one.
func TestRecheckZeroLoads(t *testing.T) {
	e := eligibilityEnv(t)
	defer e.shutdown()
	g := e.p.General()
	e.fill(30, func() bool { return g.Len() == g.Cap() })
	e.src.forbid.Store(true) // any load from here on fails the test
	loads := e.src.loads.Load()
	dests := []hotSink[*Hot]{e.p.Extra("portal"), e.p.Extra("spawn"), e.p.Login(), e.p.Network(), e.p.Personal(), e.p.Extra("claims")}
	for _, h := range drainAll[*Hot](g.ring) {
		for _, d := range dests {
			d.Accepts(h)
			eligible[*Hot](g, d, h)
		}
	}
	if got := e.src.loads.Load(); got != loads {
		t.Fatalf("recheck loaded %d chunks, want 0", got-loads)
	}
	e.src.forbid.Store(false)
}

func TestRecheckRejects(t *testing.T) {
	strict := func(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
		if c := res.Chunk(); c != nil && c.Column(b.Local()).Biome == plains {
			return 0, memory.CauseBiome, false // this sink allows no plains
		}
		return fakeCheck(res, b)
	}
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Extra = []SinkConfig{
			{Name: "shape", Criteria: Criteria{Contains: func(l Location) bool { return geom.Block{X: l.X, Z: l.Z}.Chunk().X < 3 }}},
			{Name: "nether", Criteria: Criteria{World: "nether"}},
			{Name: "low", Criteria: Criteria{Contains: func(l Location) bool { return l.Y <= 60 }}},
			{Name: "noPlains", Criteria: Criteria{Check: strict}},
			{Name: "any"},
		}
	}})
	defer e.shutdown()
	h := e.hot(geom.Block{X: 80, Z: 8}) // chunk 5, plains, y 65
	defer h.Close()
	for _, name := range []string{"shape", "nether", "low", "noPlains"} {
		if e.p.Extra(name).Accepts(h) {
			t.Errorf("sink %q accepts an entry its criteria exclude", name)
		}
		if got := eligible[*Hot](e.p.General(), e.p.Extra(name), h); got.certified() {
			t.Errorf("transfer into %q certified: %v", name, got)
		}
	}
	if !e.p.Extra("any").Accepts(h) {
		t.Error("a sink without criteria rejects a valid entry")
	}
	// An entry whose recorded y is not what the check finds is rejected.
	wrongY := &Hot{Location: h.Location, Res: h.Res}
	wrongY.Y++
	if e.p.Extra("any").Accepts(wrongY) {
		t.Error("an entry with a stale landing y passed the recheck")
	}
}

// TestRecheckFailClosed: nil entries, nil reservations and closed
// reservations are rejected without touching any chunk or check.
func TestRecheckFailClosed(t *testing.T) {
	called := 0
	spy := func(*world.Reservation, geom.Block) (int, memory.Cause, bool) { called++; return 65, 0, true }
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Check = spy
		o.Extra = []SinkConfig{{Name: "narrow", Criteria: Criteria{Narrows: true}}}
		o.Groups = []GroupConfig{{Name: "g1", Size: 1}}
	}})
	defer e.shutdown()
	closed := e.hot(geom.Block{X: 8, Z: 8})
	closed.Close()
	e.src.forbid.Store(true)
	entries := map[string]*Hot{
		"nil entry":          nil,
		"nil reservation":    {Location: Location{World: "overworld", X: 8, Y: 65, Z: 8}},
		"closed reservation": closed,
	}
	for name, h := range entries {
		for _, s := range []hotSink[*Hot]{e.p.General(), e.p.Extra("narrow")} {
			if s.Accepts(h) {
				t.Errorf("%s: %s.Accepts = true", name, s.Name())
			}
		}
		if got := eligible[*Hot](e.p.General(), e.p.Extra("narrow"), h); got.certified() {
			t.Errorf("%s: certified by recheck: %v", name, got)
		}
		if e.p.Group("g1").Accepts(&Subspace{Members: []*Hot{h}}) {
			t.Errorf("%s: a group subspace with that member was accepted", name)
		}
	}
	if called != 0 {
		t.Fatalf("the check ran %d times on entries without a live reservation", called)
	}
	e.src.forbid.Store(false)
}

func TestSubsumption(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.General.Capacity = 1
		o.ColdCapacity = 128
		o.MinResidence = -1
		o.Groups = []GroupConfig{
			{Name: "g4", Size: 4, Capacity: 3},
			{Name: "g2", Size: 2, Capacity: 1, Floor: -1},
			{Name: "g2narrow", Size: 2, Capacity: 1, Floor: -1, Criteria: Criteria{Contains: func(l Location) bool { return l.X > 1<<40 }}},
		}
	}})
	defer e.shutdown()
	g4 := e.p.Group("g4")
	e.fill(60, func() bool { return g4.Len() == 3 })

	// Requests of k <= N are served, k > N never.
	for _, k := range []int{0, 5, -1} {
		if _, err := g4.Take(k); !errors.Is(err, ErrGroupSize) {
			t.Errorf("Take(%d) = %v, want ErrGroupSize", k, err)
		}
	}
	rel0 := e.p.Stats().Reservations.Released
	rows0 := len(e.pers.counts())
	got, err := g4.Take(3)
	if err != nil || len(got) != 3 {
		t.Fatalf("Take(3) = %d members, %v", len(got), err)
	}
	for _, h := range got {
		if !h.live() {
			t.Fatal("a served member has no live reservation")
		}
	}
	if d := e.p.Stats().Reservations.Released - rel0; d != 1 {
		t.Fatalf("trimming a subspace of 4 to 3 released %d reservations, want the 1 remainder", d)
	}
	if d := rows0 - len(e.pers.counts()); d != 4 {
		t.Fatalf("serving 3 and trimming 1 removed %d rows, want 4", d)
	}
	for _, h := range got {
		h.Close()
	}
	whole, err := g4.Take(4)
	if err != nil || len(whole) != 4 {
		t.Fatalf("Take(4) = %d members, %v", len(whole), err)
	}
	for _, h := range whole {
		h.Close()
	}

	// Transfer g4 -> g2 under subsumption: trimmed to 2, remainder
	// disposed once, no reservation opened; never into a sink whose
	// recheck rejects.
	g2, narrow := e.p.Group("g2"), e.p.Group("g2narrow")
	g4.quota.Store(0)
	g2.quota.Store(0)
	narrow.quota.Store(1)
	before0, rel1 := g4.Len(), e.p.Stats().Reservations.Released
	e.p.transferGroups(e.p.clock(), 10)
	if narrow.Len() != 0 || g4.Len() != before0 || e.p.Stats().Reservations.Released != rel1 {
		t.Fatalf("subsumption moved a subspace the destination's recheck rejects: g4 %d (was %d), g2narrow %d", g4.Len(), before0, narrow.Len())
	}
	narrow.quota.Store(0)
	g2.quota.Store(1)
	opened := e.res.Stats().Opened
	rel0 = e.p.Stats().Reservations.Released
	before := g4.Len()
	e.p.transferGroups(e.p.clock(), 10)
	if g2.Len() != 1 || g4.Len() != before-1 {
		t.Fatalf("after transfer: g4 %d (was %d), g2 %d", g4.Len(), before, g2.Len())
	}
	if e.res.Stats().Opened != opened {
		t.Fatal("a transfer opened reservations")
	}
	if d := e.p.Stats().Reservations.Released - rel0; d != 2 {
		t.Fatalf("transfer released %d reservations, want the 2 trimmed", d)
	}
	sub, _ := g2.ring.PollSilent()
	if sub.Size() != 2 {
		t.Fatalf("transferred subspace has %d members, want 2", sub.Size())
	}
	g2.ring.OfferSilent(sub)
}
