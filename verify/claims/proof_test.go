package claims_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/claims"
)

// world is the rig of the proof: a spatial memory over a square of chunks,
// a claims store registered in a verifier registry, and a fake clock read
// by both. A pulse is what the pipeline does with the verifiers: draw the
// places the memory does not rule out, check each, and remember a
// rejection under safetyExternal attributed to Result.Source.
type world struct {
	t      *testing.T
	now    time.Time
	shape  geom.Shape
	mem    *memory.Table
	store  *claims.Store
	reg    *verify.Registry
	checks int // verifier calls
}

const worldName = "overworld"

func newWorld(t *testing.T, policy *ttl.Policy) *world {
	t.Helper()
	w := &world{t: t, now: time.Unix(1_900_000_000, 0)}
	clock := func() time.Time { return w.now }
	sq, err := geom.NewSquare(geom.Chunk{}, 12, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.shape = sq
	// Gap absorption off, so the runs are exactly the rejected cells.
	w.mem, err = memory.New(memory.Options{Shape: sq, World: worldName, TTL: policy.TTL, Clock: clock, SpatialResolution: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.store = open(t, filepath.Join(t.TempDir(), "claims.db"), claims.Options{Clock: clock})
	w.reg = verify.New(verify.Options{})
	v := w.store.Verifier()
	if err := w.reg.Register(claims.Source, func(l verify.Location) bool { w.checks++; return v(l) }); err != nil {
		t.Fatal(err)
	}
	return w
}

// loc is the landing place checked for spiral index i: its chunk's centre.
func (w *world) loc(i int64) verify.Location {
	b := w.shape.Chunk(i).Center()
	return verify.Location{World: worldName, X: b.X, Y: 64, Z: b.Z}
}

// check runs the verifiers on index i and remembers a rejection.
func (w *world) check(i int64) verify.Result {
	w.t.Helper()
	res := w.reg.Check(context.Background(), w.loc(i))
	if !res.Passed {
		if res.Source != claims.Source || res.Err != nil {
			w.t.Fatalf("Check(%d) = %+v, want a rejection by %q", i, res, claims.Source)
		}
		if err := w.mem.AddBad(i, memory.CauseSafetyExternal, res.Source); err != nil {
			w.t.Fatal(err)
		}
	}
	return res
}

// pulse checks every selectable index (those the memory does not rule
// out) and returns how many were rejected.
func (w *world) pulse() (rejected int) {
	w.t.Helper()
	for i := range w.shape.Len() {
		if !w.mem.IsBad(i) && !w.check(i).Passed {
			rejected++
		}
	}
	return rejected
}

// inside returns the indices whose landing place lies in c, computed by
// arithmetic on the claim, independently of the store.
func (w *world) inside(c claims.Claim) map[int64]bool {
	set := map[int64]bool{}
	for i := range w.shape.Len() {
		l := w.loc(i)
		if c.MinX <= l.X && l.X <= c.MaxX && c.MinZ <= l.Z && l.Z <= c.MaxZ {
			set[i] = true
		}
	}
	return set
}

// wantBad checks that exactly the indices in set are in active runs.
func (w *world) wantBad(stage string, set map[int64]bool) {
	w.t.Helper()
	for i := range w.shape.Len() {
		if w.mem.IsBad(i) != set[i] {
			w.t.Fatalf("%s: IsBad(%d) = %v, want %v", stage, i, w.mem.IsBad(i), set[i])
		}
	}
	if got, want := w.mem.Selectable(), w.shape.Len()-int64(len(set)); got != want {
		w.t.Fatalf("%s: Selectable() = %d, want %d", stage, got, want)
	}
}

func (w *world) advance(d time.Duration) {
	w.now = w.now.Add(d)
	w.mem.Rebuild()
}

var policies = []struct {
	name string
	yml  string // "" for ttl.Default
	ttl  time.Duration
	rule ttl.Rule
}{
	{"ttl.yml verifiers.claims 1h", "causes:\n  safetyExternal: 14d\nverifiers:\n  claims: 1h\n", time.Hour, ttl.RuleVerifier},
	{"ttl.Default", "", time.Duration(ttl.DefaultSafetyExternal), ttl.RuleDefault},
}

func loadPolicy(t *testing.T, yml string, want time.Duration, rule ttl.Rule) *ttl.Policy {
	t.Helper()
	p := ttl.Default()
	if yml != "" {
		var err error
		if p, err = ttl.Load(strings.NewReader(yml)); err != nil {
			t.Fatal(err)
		}
	}
	if d, r := p.Resolve(memory.CauseSafetyExternal, claims.Source); d != want || r != rule {
		t.Fatalf("policy resolves claims to %v by %v, want %v by %v", d, r, want, rule)
	}
	return p
}

// A removed claim comes back with no reset: its places are remembered as
// bad until the TTL, then go on probation, selectable and passing again,
// and are forgotten after twice the TTL.
func TestRemovedClaimReturns(t *testing.T) {
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, loadPolicy(t, pc.yml, pc.ttl, pc.rule))
			// Chunks 3..6 by -5..-2: away from the centre, so the claim
			// cuts several runs out of the spiral.
			c, err := w.store.Add(ctx, claims.Claim{World: worldName, Owner: "alice", MinX: 48, MinZ: -80, MaxX: 111, MaxZ: -17})
			if err != nil {
				t.Fatal(err)
			}
			claimed := w.inside(c)
			if len(claimed) != 16 {
				t.Fatalf("the claim covers %d landing places, want 16", len(claimed))
			}
			start := w.now

			// Rejected, attributed to "claims", remembered until the TTL.
			if got := w.pulse(); got != len(claimed) {
				t.Fatalf("first pulse rejected %d, want %d", got, len(claimed))
			}
			w.mem.Rebuild()
			w.wantBad("after the first pulse", claimed)
			st := w.mem.Stats()
			if st.Rejections["safetyExternal[claims]"] != int64(len(claimed)) || st.BadCount != int64(len(claimed)) {
				t.Fatalf("stats after the first pulse: %v", st)
			}
			ex := w.mem.Export()
			for _, r := range ex.Active {
				if r.Tier != "dynamic" || r.Cause != "safetyExternal" || r.Expires != start.Add(pc.ttl).Unix() {
					t.Fatalf("run %+v, want dynamic safetyExternal expiring at %d", r, start.Add(pc.ttl).Unix())
				}
			}
			if len(ex.Active) < 2 {
				t.Fatalf("the claim made %d runs, want several (the test needs a claim off the spiral's centre)", len(ex.Active))
			}

			// The memory saves the checks: a second pulse skips the claim.
			w.checks = 0
			if got := w.pulse(); got != 0 || w.checks != int(w.shape.Len())-len(claimed) {
				t.Fatalf("second pulse: %d rejected, %d checks; want 0 and %d", got, w.checks, int(w.shape.Len())-len(claimed))
			}

			// The claim goes. The memory does not know and needs no reset.
			if ok, err := w.store.Remove(ctx, c.ID); !ok || err != nil {
				t.Fatalf("Remove = %v, %v", ok, err)
			}
			w.advance(pc.ttl - time.Second)
			w.wantBad("a second before the TTL", claimed)

			// Past the TTL: on probation, selectable again.
			w.advance(2 * time.Second)
			w.wantBad("past the TTL", nil)
			st = w.mem.Stats()
			if st.Probation != int64(len(claimed)) || st.BadCount != 0 {
				t.Fatalf("past the TTL: Probation = %d, BadCount = %d; want %d and 0", st.Probation, st.BadCount, len(claimed))
			}
			selectable := map[int64]bool{}
			for k := range w.mem.Selectable() {
				i, ok := w.mem.Select(k)
				if !ok {
					t.Fatalf("Select(%d) failed", k)
				}
				selectable[i] = true
			}
			for i := range claimed {
				if !selectable[i] {
					t.Fatalf("formerly claimed index %d is not selectable", i)
				}
			}
			// Checked again, every place passes and nothing is remembered.
			w.checks = 0
			for i := range claimed {
				if res := w.check(i); !res.Passed {
					t.Fatalf("Check(%d) after removal = %+v, want Passed", i, res)
				}
			}
			if w.checks != len(claimed) {
				t.Fatalf("%d checks, want %d", w.checks, len(claimed))
			}
			w.mem.Rebuild()
			w.wantBad("after the recheck", nil)
			if st := w.mem.Stats(); st.Restored != 0 {
				t.Fatalf("Restored = %d, want 0", st.Restored)
			}

			// Past twice the TTL: forgotten.
			w.advance(pc.ttl)
			if st := w.mem.Stats(); st.Probation != 0 || st.ProbationRuns != 0 || st.ActiveRuns != 0 {
				t.Fatalf("past twice the TTL: %v; want nothing remembered", st)
			}
		})
	}
}

// A claim still there when its run expires: drawn from probation, the
// place is rejected again and the memory restores the whole run with a
// fresh TTL, at the cost of one check.
func TestStandingClaimRestored(t *testing.T) {
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, loadPolicy(t, pc.yml, pc.ttl, pc.rule))
			// Chunks -1..1 on both axes: spiral indices 0..8, one run.
			c, err := w.store.Add(ctx, claims.Claim{World: worldName, Owner: "town", MinX: -16, MinZ: -16, MaxX: 31, MaxZ: 31})
			if err != nil {
				t.Fatal(err)
			}
			claimed := w.inside(c)
			if got := w.pulse(); got != 9 || len(claimed) != 9 {
				t.Fatalf("pulse rejected %d of %d claimed places, want 9", got, len(claimed))
			}
			w.mem.Rebuild()
			w.wantBad("after the pulse", claimed)
			if ex := w.mem.Export(); len(ex.Active) != 1 || ex.Active[0].Start != 0 || ex.Active[0].Len != 9 {
				t.Fatalf("active runs %+v, want one run [0, 9)", ex.Active)
			}

			w.advance(pc.ttl + time.Second)
			w.wantBad("past the TTL", nil)
			if st := w.mem.Stats(); st.ProbationRuns != 1 || st.Probation != 9 {
				t.Fatalf("past the TTL: %v; want the run on probation", st)
			}

			// The pipeline draws one place of the run; the claim is there.
			w.checks = 0
			restoredBefore := w.mem.Stats().Restored
			if res := w.check(4); res.Passed {
				t.Fatalf("Check(4) = %+v, want rejected: the claim stands", res)
			}
			if st := w.mem.Stats(); st.Restored != restoredBefore+1 {
				t.Fatalf("Restored = %d, want %d", st.Restored, restoredBefore+1)
			}
			w.mem.Rebuild()
			w.wantBad("after the restoration", claimed)
			if w.checks != 1 {
				t.Fatalf("restoring the run took %d checks, want 1", w.checks)
			}
			ex := w.mem.Export()
			if len(ex.Active) != 1 || ex.Active[0].Len != 9 || ex.Active[0].Expires != w.now.Add(pc.ttl).Unix() || len(ex.Probation) != 0 {
				t.Fatalf("after the restoration: active %+v, probation %+v; want [0, 9) expiring at %d", ex.Active, ex.Probation, w.now.Add(pc.ttl).Unix())
			}
			// The next pulse does not look at the claim again.
			w.checks = 0
			if got := w.pulse(); got != 0 || w.checks != int(w.shape.Len())-9 {
				t.Fatalf("pulse after the restoration: %d rejected, %d checks", got, w.checks)
			}
		})
	}
}
