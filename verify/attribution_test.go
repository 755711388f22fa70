package verify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
)

// TestAttributionEndToEnd follows a rejection from the verifier that made it
// to the memory: the stats name the verifier, and ttl.yml's verifiers
// section decides how long the place is remembered.
func TestAttributionEndToEnd(t *testing.T) {
	policy, err := ttl.Load(strings.NewReader(`
causes:
  safetyExternal: 14d
verifiers:
  GriefPreventionChecker: 3d
  WorldGuardChecker: -1
`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	tb, err := memory.New(memory.Options{Len: 1000, TTL: policy.TTL, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	reg := verify.New(verify.Options{})
	claimed := map[int64]string{10: "GriefPreventionChecker", 20: "WorldGuardChecker", 30: "TownyChecker"}
	for _, name := range []string{"WorldGuardChecker", "GriefPreventionChecker", "TownyChecker"} {
		if err := reg.Register(name, func(loc verify.Location) bool { return claimed[loc.X] != name }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(40) {
		res := reg.Check(context.Background(), verify.Location{World: "w", X: i})
		if res.Passed {
			continue
		}
		if res.Source != claimed[i] {
			t.Fatalf("Check(%d).Source = %q, want %q", i, res.Source, claimed[i])
		}
		if err := tb.AddBad(i, memory.CauseSafetyExternal, res.Source); err != nil {
			t.Fatal(err)
		}
	}
	tb.Rebuild()
	st := tb.Stats()
	for _, k := range []string{"safetyExternal[GriefPreventionChecker]", "safetyExternal[WorldGuardChecker]", "safetyExternal[TownyChecker]"} {
		if st.Rejections[k] != 1 {
			t.Errorf("Rejections[%q] = %d, want 1 (all: %v)", k, st.Rejections[k], st.Rejections)
		}
	}
	exp := map[int64]int64{}
	for _, r := range tb.Export().Active {
		exp[r.Start] = r.Expires
	}
	want := map[int64]int64{
		10: now.Unix() + 3*86400,  // verifiers.GriefPreventionChecker
		20: 0,                     // permanent: static tier
		30: now.Unix() + 14*86400, // falls back to causes.safetyExternal
	}
	for i, w := range want {
		if exp[i] != w {
			t.Errorf("run at %d expires %d, want %d", i, exp[i], w)
		}
	}
}
