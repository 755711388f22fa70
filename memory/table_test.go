package memory

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/bubble"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestTable(t *testing.T, n int64, clk *fakeClock) *Table {
	t.Helper()
	tb, err := New(Options{Len: n, Clock: clk.Now, TTL: modelTTL})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func mustAdd(t *testing.T, tb *Table, i int64, c Cause, src string) {
	t.Helper()
	if err := tb.AddBad(i, c, src); err != nil {
		t.Fatalf("AddBad(%d, %v, %q) = %v", i, c, src, err)
	}
}

func activeRuns(tb *Table) []Run    { return runsFromExport(tb.Export().Active) }
func probationRuns(tb *Table) []Run { return runsFromExport(tb.Export().Probation) }

func TestTiersNeverMerge(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	mustAdd(t, tb, 10, CauseSafety, "")
	mustAdd(t, tb, 11, CauseSafetyExternal, "a") // adjacent, other tier
	mustAdd(t, tb, 13, CauseBiome, "ocean")      // gap 2 from the static run, but the dynamic run is between
	tb.Rebuild()
	exp := clk.Now().Unix() + 100
	want := []Run{
		{Start: 10, Len: 1, Cause: CauseSafety},
		{Start: 11, Len: 1, Cause: CauseSafetyExternal, Expires: exp, TTL: 100},
		{Start: 13, Len: 1, Cause: CauseBiome},
	}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
}

func TestDynamicMergeKeepsMaxTTLAndFirstCause(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	mustAdd(t, tb, 20, CauseUniquePlacement, "") // 150 s, leftmost: its cause wins
	mustAdd(t, tb, 23, CauseSafetyExternal, "b") // 300 s, gap 2 <= 3: merges
	mustAdd(t, tb, 40, CauseSafetyExternal, "a") // 100 s
	mustAdd(t, tb, 44, CauseSafetyExternal, "b") // gap 3: merges
	mustAdd(t, tb, 49, CauseSafetyExternal, "a") // gap 4: stays apart
	tb.Rebuild()
	now := clk.Now().Unix()
	want := []Run{
		{Start: 20, Len: 4, Cause: CauseUniquePlacement, Expires: now + 300, TTL: 300},
		{Start: 40, Len: 5, Cause: CauseSafetyExternal, Expires: now + 300, TTL: 300},
		{Start: 49, Len: 1, Cause: CauseSafetyExternal, Expires: now + 100, TTL: 100},
	}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	for i := int64(20); i < 24; i++ {
		if !tb.IsBad(i) {
			t.Errorf("IsBad(%d) = false inside a coalesced run", i)
		}
	}
}

func TestTransientNeverStored(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	for _, c := range []Cause{CauseTimeout, CauseNullChunk} {
		mustAdd(t, tb, 5, c, "")
	}
	mustAdd(t, tb, 6, CauseSafetyExternal, "off") // zero TTL: not remembered
	if got := tb.Pending(); got != 0 {
		t.Fatalf("Pending() = %d after transient rejections, want 0", got)
	}
	tb.Rebuild()
	if got := activeRuns(tb); len(got) != 0 {
		t.Fatalf("runs = %v after transient rejections, want none", got)
	}
	st := tb.Stats()
	if st.Ignored != 3 || st.Rejections["timeout"] != 1 || st.Rejections["safetyExternal[off]"] != 1 {
		t.Fatalf("stats = %+v, want 3 ignored and the rejections counted", st)
	}
}

// TestCauseAt: the cause of the active run holding an index, none for a
// selectable index (probation included), an index out of range or below 0.
func TestCauseAt(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	mustAdd(t, tb, 10, CauseBiome, "plains")
	mustAdd(t, tb, 11, CauseBiome, "plains")
	mustAdd(t, tb, 50, CauseSafetyExternal, "a") // TTL 100 s
	mustAdd(t, tb, 70, CauseUniquePlacement, "")
	if _, bad := tb.CauseAt(50); bad {
		t.Fatal("CauseAt(50) bad before the rebuild")
	}
	tb.Rebuild()
	for _, tc := range []struct {
		i     int64
		cause Cause
		bad   bool
	}{
		{-1, 0, false}, {0, 0, false}, {10, CauseBiome, true}, {11, CauseBiome, true},
		{12, 0, false}, {50, CauseSafetyExternal, true}, {70, CauseUniquePlacement, true}, {99, 0, false}, {100, 0, false},
	} {
		if c, bad := tb.CauseAt(tc.i); bad != tc.bad || c != tc.cause {
			t.Errorf("CauseAt(%d) = %v, %v; want %v, %v", tc.i, c, bad, tc.cause, tc.bad)
		}
		if bad := tb.IsBad(max(tc.i, 0)); tc.i >= 0 && bad != tc.bad {
			t.Errorf("IsBad(%d) = %v, CauseAt says %v", tc.i, bad, tc.bad)
		}
	}
	clk.Advance(100 * time.Second) // 50 goes on probation: selectable
	tb.Rebuild()
	if c, bad := tb.CauseAt(50); bad {
		t.Fatalf("CauseAt(50) on probation = %v, true; want selectable", c)
	}
	if a := testing.AllocsPerRun(100, func() { tb.CauseAt(10) }); a != 0 {
		t.Fatalf("CauseAt allocated %v times, want 0", a)
	}
}

func TestLifecycleActiveProbationDropped(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	mustAdd(t, tb, 50, CauseSafetyExternal, "a") // TTL 100 s
	tb.Rebuild()
	steps := []struct {
		advance      time.Duration
		bad, onProbe bool
	}{
		{99 * time.Second, true, false}, // t < TTL: active
		{1 * time.Second, false, true},  // t = TTL: probation, selectable
		{99 * time.Second, false, true}, // t < 2 TTL
		{1 * time.Second, false, false}, // t = 2 TTL: dropped
		{1000 * time.Second, false, false},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		tb.Rebuild()
		if got := tb.IsBad(50); got != s.bad {
			t.Fatalf("step %d: IsBad(50) = %v, want %v", i, got, s.bad)
		}
		if got := len(probationRuns(tb)) == 1; got != s.onProbe {
			t.Fatalf("step %d: on probation = %v, want %v", i, got, s.onProbe)
		}
	}
}

func TestProbationRestoreWholeRun(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	for i := int64(30); i < 38; i++ {
		mustAdd(t, tb, i, CauseSafetyExternal, "a")
	}
	tb.Rebuild()
	clk.Advance(150 * time.Second) // on probation
	tb.Rebuild()
	if got := probationRuns(tb); len(got) != 1 || got[0].Start != 30 || got[0].Len != 8 {
		t.Fatalf("probation = %v, want one run [30, 38)", got)
	}
	for i := int64(30); i < 38; i++ {
		if tb.IsBad(i) {
			t.Fatalf("IsBad(%d) on probation = true, want selectable", i)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := tb.AddBad(33, CauseSafetyExternal, "a"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AddBad inside a probation run allocated %v times, want 0", allocs)
	}
	if got := tb.Pending(); got != 1 {
		t.Fatalf("Pending() = %d after a restoration, want 1", got)
	}
	tb.Rebuild()
	now := clk.Now().Unix()
	want := []Run{{Start: 30, Len: 8, Cause: CauseSafetyExternal, Expires: now + 100, TTL: 100}}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("after restore: active = %v, want %v", got, want)
	}
	if got := probationRuns(tb); len(got) != 0 {
		t.Fatalf("after restore: probation = %v, want none", got)
	}
	if got := tb.Stats().Restored; got != 1 {
		t.Fatalf("Stats().Restored = %d, want 1", got)
	}
}

func TestStaticOverridesDynamicCells(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	for i := int64(10); i < 20; i++ {
		mustAdd(t, tb, i, CauseSafetyExternal, "a")
	}
	mustAdd(t, tb, 15, CauseSafety, "")
	tb.Rebuild()
	now := clk.Now().Unix()
	want := []Run{
		{Start: 10, Len: 5, Cause: CauseSafetyExternal, Expires: now + 100, TTL: 100},
		{Start: 15, Len: 1, Cause: CauseSafety},
		{Start: 16, Len: 4, Cause: CauseSafetyExternal, Expires: now + 100, TTL: 100},
	}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	// When the claim expires, the static cell stays bad.
	clk.Advance(101 * time.Second)
	tb.Rebuild()
	if !tb.IsBad(15) || tb.IsBad(14) || tb.IsBad(16) {
		t.Fatalf("after expiry: IsBad(14, 15, 16) = %v %v %v, want false true false", tb.IsBad(14), tb.IsBad(15), tb.IsBad(16))
	}
}

func TestPermanentVerifierJoinsStaticTier(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	mustAdd(t, tb, 7, CauseSafetyExternal, "perm")
	mustAdd(t, tb, 9, CauseSafety, "") // gap 1, same (static) tier
	tb.Rebuild()
	want := []Run{{Start: 7, Len: 3, Cause: CauseSafetyExternal}}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
}

func TestAddBadErrors(t *testing.T) {
	tb := newTestTable(t, 10, newFakeClock())
	for _, tc := range []struct {
		i int64
		c Cause
	}{{-1, CauseSafety}, {10, CauseSafety}, {3, Cause(200)}} {
		if err := tb.AddBad(tc.i, tc.c, ""); err == nil {
			t.Errorf("AddBad(%d, %d) = nil, want an error", tc.i, tc.c)
		}
	}
	if err := tb.AddBad(10, CauseSafety, ""); !errors.Is(err, ErrIndexRange) {
		t.Errorf("AddBad(10) = %v, want ErrIndexRange", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New(Options{}) = nil error, want one about Len")
	}
}

func TestSelectionAllocatesNothing(t *testing.T) {
	tb := benchTable(t, 5000)
	rng := rand.New(rand.NewPCG(1, 1))
	n := tb.Len()
	for name, fn := range map[string]func(){
		"Rand":   func() { tb.Rand(rng) },
		"IsBad":  func() { tb.IsBad(rng.Int64N(n)) },
		"Select": func() { tb.Select(rng.Int64N(tb.Selectable())) },
		"Pick":   func() { tb.Pick(geom.Weighted{Exponent: 2}, rng.Float64(), 0) },
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s allocated %v times per call, want 0", name, a)
		}
	}
}

func TestRandNothingSelectable(t *testing.T) {
	tb := newTestTable(t, 10, newFakeClock())
	for i := range int64(10) {
		mustAdd(t, tb, i, CauseSafety, "")
	}
	tb.Rebuild()
	if i, ok := tb.Rand(rand.New(rand.NewPCG(1, 1))); ok {
		t.Fatalf("Rand() = %d, true on a fully bad table, want false", i)
	}
}

// TestConcurrentSelection runs selection against rebuilds and additions; the
// race detector checks the lock-free publication.
func TestConcurrentSelection(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 1<<16, clk)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for ctx.Err() == nil {
				if i, ok := tb.Rand(rng); ok && (i < 0 || i >= tb.Len()) {
					t.Errorf("Rand() = %d outside [0, %d)", i, tb.Len())
					return
				}
				tb.IsBad(rng.Int64N(tb.Len()))
			}
		})
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for round := range 200 {
		for range 50 {
			mustAdd(t, tb, rng.Int64N(tb.Len()), CauseSafetyExternal, "a")
		}
		if round%10 == 0 {
			clk.Advance(30 * time.Second)
		}
		tb.Rebuild()
	}
	cancel()
	wg.Wait()
}

func TestRunLoopRebuildsOnThresholdAndPeriodically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		tb, err := New(Options{Len: 1000, Clock: clk.Now, TTL: modelTTL, PendingThreshold: 8, RebuildInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tb.Run(ctx) }()
		for i := range int64(7) {
			mustAdd(t, tb, i*10, CauseSafety, "")
		}
		synctest.Wait()
		if got := tb.Selectable(); got != 1000 {
			t.Fatalf("Selectable() = %d below the threshold, want 1000 (no rebuild yet)", got)
		}
		mustAdd(t, tb, 70, CauseSafety, "") // the eighth: reaches the threshold
		synctest.Wait()
		if got := tb.Selectable(); got != 992 {
			t.Fatalf("Selectable() = %d at the threshold, want 992", got)
		}
		// A dynamic run expires; the periodic rebuild moves it to probation
		// without any new rejection.
		mustAdd(t, tb, 500, CauseSafetyExternal, "a") // TTL 100 s, below the threshold
		bubble.Advance(time.Minute)
		if !tb.IsBad(500) {
			t.Fatal("IsBad(500) = false after the periodic rebuild, want true")
		}
		clk.Advance(101 * time.Second)
		bubble.Advance(time.Minute)
		if tb.IsBad(500) || len(probationRuns(tb)) != 1 {
			t.Fatalf("after expiry and a periodic rebuild: IsBad(500) = %v, probation %v; want false and one run", tb.IsBad(500), probationRuns(tb))
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run() = %v, want context.Canceled", err)
		}
	})
}

func TestStats(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	for i := int64(0); i < 6; i++ {
		mustAdd(t, tb, i, CauseBiome, "ocean")
	}
	mustAdd(t, tb, 50, CauseSafetyExternal, "claims")
	mustAdd(t, tb, 60, CauseSafetyExternal, "claims")
	tb.Rebuild()
	st := tb.Stats()
	if st.BadCount != 8 || st.BadFraction != 0.08 || st.TopCause != "biome" || st.TopCauseShare != 0.75 {
		t.Fatalf("Stats() = %+v, want 8 bad (8%%), top biome at 75%%", st)
	}
	if st.Rejections["biome[ocean]"] != 6 || st.Rejections["safetyExternal[claims]"] != 2 {
		t.Fatalf("Rejections = %v, want biome[ocean]=6 safetyExternal[claims]=2", st.Rejections)
	}
	if st.ByCause["biome"] != 6 || st.ByCause["safetyExternal"] != 2 {
		t.Fatalf("ByCause = %v", st.ByCause)
	}
}

// TestResidentBytesPerRun pins the memory budget: at most 33 bytes per run
// for a table of a real server's size.
func TestResidentBytesPerRun(t *testing.T) {
	const n = 33647
	tb := benchTable(t, n)
	if per := float64(tb.Stats().ResidentBytes) / n; per > 33 {
		t.Fatalf("resident memory = %.2f bytes per run, want <= 33", per)
	}
}

// A restore keeps the larger of the run's TTL and the rejection's, for both
// the new active period and the stored TTL, whichever order they come in.
func TestProbationRestoreKeepsLongerTTL(t *testing.T) {
	ttlOf := func(_ Cause, source string) time.Duration {
		switch source {
		case "short":
			return 100 * time.Second
		case "long":
			return 250 * time.Second
		}
		return -1
	}
	for _, tc := range []struct {
		name, first, second string
		probeAfter          time.Duration // from the first rejection into its probation
	}{
		{"long run re-hit by short TTL", "long", "short", 300 * time.Second},
		{"short run re-hit by long TTL", "short", "long", 150 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			tb, err := New(Options{Len: 100, Clock: clk.Now, TTL: ttlOf})
			if err != nil {
				t.Fatal(err)
			}
			mustAdd(t, tb, 40, CauseSafetyExternal, tc.first)
			mustAdd(t, tb, 41, CauseSafetyExternal, tc.first)
			tb.Rebuild()
			clk.Advance(tc.probeAfter)
			tb.Rebuild()
			if p := probationRuns(tb); len(p) != 1 || tb.IsBad(40) {
				t.Fatalf("probation = %v, IsBad(40) = %v; want the run on probation", p, tb.IsBad(40))
			}
			mustAdd(t, tb, 41, CauseSafetyExternal, tc.second)
			restoredAt := clk.Now().Unix()
			// Before the rebuild the probation view already shows the restore.
			if p := probationRuns(tb); len(p) != 1 || p[0].Expires != restoredAt+250 || p[0].TTL != 250 {
				t.Fatalf("pending restore = %v, want expiry now+250 and TTL 250", p)
			}
			tb.Rebuild()
			want := []Run{{Start: 40, Len: 2, Cause: CauseSafetyExternal, Expires: restoredAt + 250, TTL: 250}}
			if got := activeRuns(tb); !slices.Equal(got, want) {
				t.Fatalf("after restore: active = %v, want %v", got, want)
			}
			// Active for the whole 250 s, not just the shorter TTL.
			clk.Advance(249 * time.Second)
			tb.Rebuild()
			if !tb.IsBad(40) || !tb.IsBad(41) {
				t.Fatal("restored run no longer active 249 s after the restore")
			}
			clk.Advance(time.Second)
			tb.Rebuild()
			if tb.IsBad(40) {
				t.Fatal("restored run still active 250 s after the restore")
			}
			// Then on probation for another 250 s (its stored TTL).
			clk.Advance(249 * time.Second)
			tb.Rebuild()
			if p := probationRuns(tb); len(p) != 1 || p[0].TTL != 250 {
				t.Fatalf("probation 499 s after the restore = %v, want the run with TTL 250", p)
			}
			clk.Advance(time.Second)
			tb.Rebuild()
			if p := probationRuns(tb); len(p) != 0 {
				t.Fatalf("probation 500 s after the restore = %v, want none", p)
			}
		})
	}
}
