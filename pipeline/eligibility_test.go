package pipeline

import (
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

// scratchSink makes an unleased sink of e's pipeline, filled from its cold
// stage, that no route, pulse or statistic reaches: a second sink with its
// own criteria, for the rules and the recheck, which treat every unleased
// sink alike. A caller that stores entries in it closes its ring.
func (e *env) scratchSink(name string, capacity int, crit Criteria) *Sink {
	e.t.Helper()
	s, err := newSink(e.p, name, KindGeneral, capacity, 0, crit)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// eligibilityEnv is a pipeline with every kind of sink, and unleased sinks
// of every kind of criteria beside its general sink.
func eligibilityEnv(t *testing.T) (*env, map[string]*Sink) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2, Criteria: Criteria{World: "overworld"}}
		o.Network = NetworkConfig{Enabled: true}
		o.Personal = PersonalConfig{Enabled: true}
	}})
	sinks := map[string]*Sink{}
	for name, crit := range map[string]Criteria{
		"portal":       {},
		"spawn":        {Contains: func(l Location) bool { return l.X < 100 }},
		"claims":       {Extrinsic: true},
		"claimsNarrow": {Extrinsic: true, Narrows: true},
	} {
		sinks[name] = e.scratchSink(name, 2, crit)
	}
	return e, sinks
}

func TestEligibilityRules(t *testing.T) {
	e, x := eligibilityEnv(t)
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
		{"provenance", p.General(), x["portal"], inside, certifiedProvenance},
		{"narrowing, accepted", p.General(), x["spawn"], inside, certifiedRecheck},
		{"narrowing, rejected", p.General(), x["spawn"], outside, ineligibleUncertified},
		{"login narrows to its world", p.General(), p.Login(), inside, certifiedRecheck},
		{"from login, provenance", p.Login(), p.General(), inside, certifiedProvenance},
		{"extrinsic, common provenance", p.General(), x["claims"], inside, certifiedProvenance},
		{"extrinsic and narrowing", p.General(), x["claimsNarrow"], inside, ineligibleUncertified},
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

	// Rule 0 on footprints: a source of smaller entries never feeds a
	// sink of larger ones (every sink of the package has footprint 1, so
	// only fake sinks differ).
	accept := func(*Hot) bool { return true }
	for _, tc := range []struct {
		a, b *fakeSink
		want eligibility
	}{
		{&fakeSink{name: "s2", cold: p.cold, cost: 2}, &fakeSink{name: "s4", cold: p.cold, cost: 4, accepts: accept}, ineligibleFootprint},
		{&fakeSink{name: "s4", cold: p.cold, cost: 4}, &fakeSink{name: "s2", cold: p.cold, cost: 2, accepts: accept}, certifiedProvenance},
		{&fakeSink{name: "s4", cold: p.cold, cost: 4}, &fakeSink{name: "s2n", cold: p.cold, cost: 2, narrows: true, accepts: func(*Hot) bool { return false }}, ineligibleUncertified},
	} {
		if got := eligible[*Hot](tc.a, tc.b, inside); got != tc.want {
			t.Errorf("Eligible(%s, %s) = %v, want %v", tc.a.Name(), tc.b.Name(), got, tc.want)
		}
	}
	if pairEligible[*Hot](&fakeSink{name: "s1"}, &fakeSink{name: "s2", cost: 2}) != ineligibleFootprint ||
		pairEligible[*Hot](p.General(), x["portal"]) != ineligibleUncertified {
		t.Error("PairEligible disagrees with rule 0")
	}
	if certifiedRecheck.String() != "certified by recheck" || eligibility(42).String() != "Eligibility(42)" {
		t.Error("Eligibility.String")
	}
}

// TestRecheckZeroLoads: Accepts and eligible read the resident chunk the
// entry's reservation holds and never load one.
func TestRecheckZeroLoads(t *testing.T) {
	e, x := eligibilityEnv(t)
	defer e.shutdown()
	g := e.p.General()
	e.fill(30, func() bool { return g.Len() == g.Cap() })
	e.src.forbid.Store(true) // any load from here on fails the test
	loads := e.src.loads.Load()
	dests := []hotSink[*Hot]{x["portal"], x["spawn"], e.p.Login(), e.p.Network(), e.p.Personal(), x["claims"]}
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
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	x := map[string]*Sink{}
	for name, crit := range map[string]Criteria{
		"shape":    {Contains: func(l Location) bool { return geom.Block{X: l.X, Z: l.Z}.Chunk().X < 3 }},
		"nether":   {World: "nether"},
		"low":      {Contains: func(l Location) bool { return l.Y <= 60 }},
		"noPlains": {Check: strict},
		"any":      {},
	} {
		x[name] = e.scratchSink(name, DefaultGeneralCapacity, crit)
	}
	h := e.hot(geom.Block{X: 80, Z: 8}) // chunk 5, plains, y 65
	defer h.Close()
	for _, name := range []string{"shape", "nether", "low", "noPlains"} {
		if x[name].Accepts(h) {
			t.Errorf("sink %q accepts an entry its criteria exclude", name)
		}
		if got := eligible[*Hot](e.p.General(), x[name], h); got.certified() {
			t.Errorf("transfer into %q certified: %v", name, got)
		}
	}
	if !x["any"].Accepts(h) {
		t.Error("a sink without criteria rejects a valid entry")
	}
	// An entry whose recorded y is not what the check finds is rejected.
	wrongY := &Hot{Location: h.Location, Res: h.Res}
	wrongY.Y++
	if x["any"].Accepts(wrongY) {
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
	}})
	defer e.shutdown()
	narrow := e.scratchSink("narrow", DefaultGeneralCapacity, Criteria{Narrows: true})
	closed := e.hot(geom.Block{X: 8, Z: 8})
	closed.Close()
	e.src.forbid.Store(true)
	entries := map[string]*Hot{
		"nil entry":          nil,
		"nil reservation":    {Location: Location{World: "overworld", X: 8, Y: 65, Z: 8}},
		"closed reservation": closed,
	}
	for name, h := range entries {
		for _, s := range []hotSink[*Hot]{e.p.General(), narrow} {
			if s.Accepts(h) {
				t.Errorf("%s: %s.Accepts = true", name, s.Name())
			}
		}
		if got := eligible[*Hot](e.p.General(), narrow, h); got.certified() {
			t.Errorf("%s: certified by recheck: %v", name, got)
		}
	}
	if called != 0 {
		t.Fatalf("the check ran %d times on entries without a live reservation", called)
	}
	e.src.forbid.Store(false)
}
