package ttl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/memory"
)

func TestDefault(t *testing.T) {
	want := map[memory.Cause]time.Duration{
		memory.CauseBiome:           -1,
		memory.CauseWorldBorder:     -1,
		memory.CauseVert:            -1,
		memory.CauseSafety:          -1,
		memory.CausePrefilterBiome:  -1,
		memory.CausePrefilterRange:  -1,
		memory.CauseUniquePlacement: 30 * Day,
		memory.CauseSafetyExternal:  14 * Day,
		memory.CauseTimeout:         0,
		memory.CauseNullChunk:       0,
		memory.CauseUngenerated:     10 * time.Minute,
		memory.CauseUnreadable:      time.Hour,
	}
	if len(want) != memory.NumCauses {
		t.Fatalf("test covers %d causes, memory defines %d", len(want), memory.NumCauses)
	}
	var zero Policy
	var nilPolicy *Policy
	for name, p := range map[string]*Policy{"Default()": Default(), "Policy{}": &zero, "nil": nilPolicy} {
		for c, w := range want {
			for _, source := range []string{"", "GriefPreventionChecker"} {
				got, rule := p.Resolve(c, source)
				if got != w || rule != RuleDefault {
					t.Errorf("%s.Resolve(%v, %q) = %v, %v, want %v, default", name, c, source, got, rule, w)
				}
			}
		}
	}
}

func TestResolve(t *testing.T) {
	const file = `causes:
  biome: -1
  uniquePlacement: 2d
  safetyExternal: 7d
  timeout: 0
verifiers:
  WorldGuardChecker: -1
  GriefPreventionChecker: 3d
  TownyChecker: 0
`
	p := mustLoad(t, file)
	empty := mustLoad(t, "verifiers:\n  GriefPreventionChecker: 5h\n")
	tests := []struct {
		p      *Policy
		cause  memory.Cause
		source string
		want   time.Duration
		rule   Rule
	}{
		// safetyExternal: verifiers.<source> -> causes.safetyExternal -> 14d.
		{p, memory.CauseSafetyExternal, "GriefPreventionChecker", 3 * Day, RuleVerifier},
		{p, memory.CauseSafetyExternal, "WorldGuardChecker", -1, RuleVerifier},
		{p, memory.CauseSafetyExternal, "TownyChecker", 0, RuleVerifier},
		{p, memory.CauseSafetyExternal, "LandsChecker", 7 * Day, RuleCause},
		{p, memory.CauseSafetyExternal, "griefpreventionchecker", 7 * Day, RuleCause},
		{p, memory.CauseSafetyExternal, "", 7 * Day, RuleCause},
		{empty, memory.CauseSafetyExternal, "GriefPreventionChecker", 5 * time.Hour, RuleVerifier},
		{empty, memory.CauseSafetyExternal, "LandsChecker", 14 * Day, RuleDefault},
		// uniquePlacement never consults verifiers.
		{p, memory.CauseUniquePlacement, "GriefPreventionChecker", 2 * Day, RuleCause},
		{p, memory.CauseUniquePlacement, "", 2 * Day, RuleCause},
		{empty, memory.CauseUniquePlacement, "GriefPreventionChecker", 30 * Day, RuleDefault},
		// Static and transient causes ignore the source too.
		{p, memory.CauseBiome, "WorldGuardChecker", -1, RuleCause},
		{p, memory.CauseVert, "GriefPreventionChecker", -1, RuleDefault},
		{p, memory.CauseTimeout, "GriefPreventionChecker", 0, RuleCause},
		{p, memory.CauseNullChunk, "", 0, RuleDefault},
		// Undefined causes are never stored, as in memory.
		{p, memory.Cause(memory.NumCauses), "GriefPreventionChecker", 0, RuleDefault},
		{p, memory.Cause(255), "", 0, RuleDefault},
	}
	for _, tc := range tests {
		got, rule := tc.p.Resolve(tc.cause, tc.source)
		if got != tc.want || rule != tc.rule {
			t.Errorf("Resolve(%v, %q) = %v, %v, want %v, %v", tc.cause, tc.source, got, rule, tc.want, tc.rule)
		}
		if ttl := tc.p.TTL(tc.cause, tc.source); ttl != got {
			t.Errorf("TTL(%v, %q) = %v, Resolve gives %v", tc.cause, tc.source, ttl, got)
		}
	}
}

// randomPolicyFile writes a random valid ttl.yml and the model of what it
// says: explicit cause and verifier entries.
func randomPolicyFile(r *rand.Rand) (string, map[memory.Cause]Duration, map[string]Duration) {
	values := []Duration{Permanent, 0, Duration(time.Hour), Duration(3 * Day), Duration(90 * time.Minute), Duration(20 * Tick)}
	causes := map[memory.Cause]Duration{}
	verifiers := map[string]Duration{}
	var b strings.Builder
	b.WriteString("causes:\n")
	for c := range memory.Cause(memory.NumCauses) {
		if r.IntN(2) == 0 {
			continue
		}
		var d Duration
		switch c.Tier() {
		case memory.Static:
			d = Permanent
		case memory.Dynamic:
			d = values[r.IntN(len(values))]
		}
		causes[c] = d
		fmt.Fprintf(&b, "  %s: %s\n", c, d)
	}
	b.WriteString("verifiers:\n")
	for i := range r.IntN(4) {
		name := fmt.Sprintf("V%d", i)
		d := values[r.IntN(len(values))]
		verifiers[name] = d
		fmt.Fprintf(&b, "  %s: %s\n", name, d)
	}
	return b.String(), causes, verifiers
}

// Resolution checked against a direct model of the rules on random
// policies, for every cause and a source with and without an entry.
func TestResolveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		text, causes, verifiers := randomPolicyFile(r)
		p := mustLoad(t, text)
		for c := range memory.Cause(memory.NumCauses + 1) {
			for _, source := range []string{"V0", "V1", "V3", ""} {
				var want Duration
				if d, ok := verifiers[source]; ok && c == memory.CauseSafetyExternal {
					want = d
				} else if d, ok := causes[c]; ok {
					want = d
				} else {
					switch {
					case !c.Valid() || c.Tier() == memory.Transient:
						want = 0
					case c.Tier() == memory.Static:
						want = Permanent
					case c == memory.CauseUniquePlacement:
						want = Duration(30 * Day)
					case c == memory.CauseUngenerated:
						want = Duration(10 * time.Minute)
					case c == memory.CauseUnreadable:
						want = Duration(time.Hour)
					default:
						want = Duration(14 * Day)
					}
				}
				if got := p.TTL(c, source); got != time.Duration(want) {
					t.Fatalf("policy:\n%s\nTTL(%v, %q) = %v, want %v", text, c, source, got, want)
				}
				// Tier invariants hold whatever the file says.
				got := p.TTL(c, source)
				switch {
				case !c.Valid() || c.Tier() == memory.Transient:
					if got != 0 {
						t.Fatalf("TTL(%v) = %v for a transient cause", c, got)
					}
				case c.Tier() == memory.Static:
					if got >= 0 {
						t.Fatalf("TTL(%v) = %v for a static cause", c, got)
					}
				}
			}
		}
	}
}

func TestEqual(t *testing.T) {
	base := "causes:\n  uniquePlacement: 2d\nverifiers:\n  A: 1h\n"
	tests := []struct {
		a, b string
		want bool
	}{
		{base, base, true},
		{base, "verifiers:\n  A: 3600\ncauses:\n  uniquePlacement: 48h\n", true},
		{base, "causes:\n  uniquePlacement: 3d\nverifiers:\n  A: 1h\n", false},
		{base, "causes:\n  uniquePlacement: 2d\nverifiers:\n  B: 1h\n", false},
		{base, "causes:\n  uniquePlacement: 2d\nverifiers:\n  A: 1h\n  B: 1h\n", false},
		{base, "causes:\n  uniquePlacement: 2d\n", false},
		{"", "causes:\n  safetyExternal: 14d\n", false}, // resolves alike, lists more
		{"", "causes:\n  biome: -1\n", false},
		{"", "{}", true},
	}
	for _, tc := range tests {
		a, b := mustLoad(t, tc.a), mustLoad(t, tc.b)
		if got := a.Equal(b); got != tc.want {
			t.Errorf("Load(%q).Equal(Load(%q)) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := b.Equal(a); got != tc.want {
			t.Errorf("Load(%q).Equal(Load(%q)) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
	var nilPolicy *Policy
	if !nilPolicy.Equal(Default()) || !Default().Equal(nil) {
		t.Errorf("a nil Policy is not equal to Default()")
	}
}

func TestRuleString(t *testing.T) {
	for r, want := range map[Rule]string{RuleDefault: "default", RuleCause: "causes", RuleVerifier: "verifiers", Rule(7): "rule(7)"} {
		if got := r.String(); got != want {
			t.Errorf("Rule(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}

// A Policy is read-only: concurrent readers under -race.
func TestConcurrentReaders(t *testing.T) {
	p := mustLoad(t, "causes:\n  safetyExternal: 7d\nverifiers:\n  A: 1d\n  B: -1\n")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 1000 {
				if got := p.TTL(memory.CauseSafetyExternal, "A"); got != Day {
					t.Errorf("goroutine %d: TTL = %v, want 1d", i, got)
					return
				}
				_ = p.Verifiers()
				if _, err := p.Marshal(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
