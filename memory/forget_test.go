package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
)

func TestForgetSplitsRun(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	for i := int64(10); i < 20; i++ {
		mustAdd(t, tb, i, CauseSafety, "")
	}
	tb.Rebuild()
	sel := tb.Selectable()
	if n := tb.Forget(15, 15, 10, -1, 100, 50); n != 2 {
		t.Fatalf("Forget = %d, want 2 (15 and 10 held; duplicates, out-of-range and good indices not counted)", n)
	}
	if tb.IsBad(15) || tb.IsBad(10) {
		t.Fatal("a forgotten index is still bad")
	}
	for _, i := range []int64{11, 14, 16, 19} {
		if c, bad := tb.CauseAt(i); !bad || c != CauseSafety {
			t.Fatalf("CauseAt(%d) = %v, %v after forgetting its neighbours; want safety", i, c, bad)
		}
	}
	if got := tb.Selectable(); got != sel+2 {
		t.Fatalf("Selectable = %d, want %d", got, sel+2)
	}
	want := []Run{{Start: 11, Len: 4, Cause: CauseSafety}, {Start: 16, Len: 4, Cause: CauseSafety}}
	if got := activeRuns(tb); !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	// Draws see it at once: Select enumerates the good indices in order.
	for k := range tb.Selectable() {
		i, ok := tb.Select(k)
		if !ok || tb.IsBad(i) {
			t.Fatalf("Select(%d) = %d, %v", k, i, ok)
		}
	}
}

func TestForgetNothingHeld(t *testing.T) {
	tb := newTestTable(t, 100, newFakeClock())
	mustAdd(t, tb, 5, CauseBiome, "ocean")
	tb.Rebuild()
	before := tb.snap.Load()
	if n := tb.Forget(6, 99); n != 0 {
		t.Fatalf("Forget of good indices = %d", n)
	}
	if tb.snap.Load() != before {
		t.Fatal("a Forget that changed nothing published a new snapshot")
	}
	if tb.Forget() != 0 {
		t.Fatal("Forget() of nothing")
	}
}

func TestForgetPending(t *testing.T) {
	tb := newTestTable(t, 100, newFakeClock())
	mustAdd(t, tb, 30, CauseSafety, "")
	mustAdd(t, tb, 31, CauseSafety, "")
	if n := tb.Forget(30); n != 1 {
		t.Fatalf("Forget of a pending rejection = %d, want 1", n)
	}
	if tb.Pending() != 1 {
		t.Fatalf("Pending = %d, want 1", tb.Pending())
	}
	tb.Rebuild()
	if tb.IsBad(30) || !tb.IsBad(31) {
		t.Fatalf("after the rebuild: IsBad(30) = %v, IsBad(31) = %v", tb.IsBad(30), tb.IsBad(31))
	}
}

// TestForgetProbation splits a probation run that a repeat rejection has
// restored: both parts come back active at the rebuild, the forgotten
// index does not (no gap absorption, see TestForgetGapAbsorbed).
func TestForgetProbation(t *testing.T) {
	clk := newFakeClock()
	tb, err := New(Options{Len: 100, Clock: clk.Now, TTL: modelTTL, SpatialResolution: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(40); i < 46; i++ {
		mustAdd(t, tb, i, CauseSafetyExternal, "a") // TTL 100 s
	}
	tb.Rebuild()
	clk.Advance(101 * time.Second)
	tb.Rebuild()
	if p := probationRuns(tb); len(p) != 1 || p[0].Start != 40 || p[0].Len != 6 {
		t.Fatalf("probation %v, want one run [40, 46)", p)
	}
	mustAdd(t, tb, 41, CauseSafetyExternal, "a") // restores the whole run
	if n := tb.Forget(43); n != 1 {
		t.Fatalf("Forget in a probation run = %d, want 1", n)
	}
	p := probationRuns(tb)
	if len(p) != 2 || p[0].Start != 40 || p[0].Len != 3 || p[1].Start != 44 || p[1].Len != 2 {
		t.Fatalf("probation after Forget %v, want [40, 43) and [44, 46)", p)
	}
	tb.Rebuild()
	for i := int64(40); i < 46; i++ {
		if want := i != 43; tb.IsBad(i) != want {
			t.Fatalf("IsBad(%d) = %v after the restored parts' rebuild, want %v", i, tb.IsBad(i), want)
		}
	}
}

// TestForgetGapAbsorbed pins the documented interplay with the spatial
// resolution: a lone forgotten index inside a run comes back at the next
// rebuild, a forgotten run does not.
func TestForgetGapAbsorbed(t *testing.T) {
	tb := newTestTable(t, 100, newFakeClock())
	for i := int64(10); i < 15; i++ {
		mustAdd(t, tb, i, CauseSafety, "")
	}
	mustAdd(t, tb, 60, CauseSafety, "")
	tb.Rebuild()
	tb.Forget(12, 60)
	tb.Rebuild()
	if !tb.IsBad(12) {
		t.Fatal("a one-cell gap was not absorbed again (SpatialResolution 3)")
	}
	if tb.IsBad(60) {
		t.Fatal("a forgotten run came back")
	}
}

// TestForgetModel cuts random indices out of random runs and compares
// every index with a set model.
func TestForgetModel(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		const n = 400
		tb, err := New(Options{Len: n, Clock: newFakeClock().Now, TTL: modelTTL, SpatialResolution: -1})
		if err != nil {
			t.Fatal(err)
		}
		bad := map[int64]Cause{}
		causes := []Cause{CauseSafety, CauseBiome, CauseSafetyExternal}
		for range 60 {
			start, length := rng.Int64N(n-20), 1+rng.Int64N(20)
			c := causes[rng.IntN(len(causes))]
			for i := start; i < start+length; i++ {
				mustAdd(t, tb, i, c, "a")
				if _, ok := bad[i]; !ok {
					bad[i] = c
				}
			}
		}
		tb.Rebuild()
		for i := range int64(n) {
			_, want := bad[i]
			if tb.IsBad(i) != want {
				t.Fatalf("seed %d: before Forget IsBad(%d) = %v, model %v", seed, i, tb.IsBad(i), want)
			}
		}
		var drop []int64
		held := 0
		for range 50 {
			i := rng.Int64N(n)
			if !slices.Contains(drop, i) {
				if _, ok := bad[i]; ok {
					held++
				}
			}
			drop = append(drop, i)
		}
		if got := tb.Forget(drop...); got != held {
			t.Fatalf("seed %d: Forget = %d, model %d", seed, got, held)
		}
		for _, i := range drop {
			delete(bad, i)
		}
		for i := range int64(n) {
			c, isBad := tb.CauseAt(i)
			want, wantBad := bad[i]
			if isBad != wantBad {
				t.Fatalf("seed %d: IsBad(%d) = %v, model %v", seed, i, isBad, wantBad)
			}
			// Overlapping marks of one tier keep the first cause; a
			// static mark wins over a dynamic one; only check the tier.
			if isBad && c.Tier() != want.Tier() && want.Tier() == Static {
				t.Fatalf("seed %d: index %d has cause %v, model %v", seed, i, c, want)
			}
		}
		if got, want := tb.Selectable(), n-int64(len(bad)); got != want {
			t.Fatalf("seed %d: Selectable = %d, model %d", seed, got, want)
		}
	}
}

func TestForgetChunk(t *testing.T) {
	sh, err := geom.NewSquare(geom.Chunk{}, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := New(Options{Shape: sh, Clock: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	c := geom.Chunk{X: 1, Z: -2}
	if err := tb.AddBadChunk(c, CauseSafety, ""); err != nil {
		t.Fatal(err)
	}
	tb.Rebuild()
	ok, err := tb.ForgetChunk(c)
	if err != nil || !ok {
		t.Fatalf("ForgetChunk = %v, %v", ok, err)
	}
	i, _ := tb.ChunkIndex(c)
	if tb.IsBad(i) {
		t.Fatal("the chunk is still bad")
	}
	if _, err := tb.ForgetChunk(geom.Chunk{X: 100, Z: 100}); err == nil {
		t.Fatal("ForgetChunk outside the shape did not fail")
	}
}
