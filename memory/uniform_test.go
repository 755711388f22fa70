package memory

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
)

// TestRandUniformOverSelectable draws from a table over a circle with a hole
// whose memory holds static, dynamic and probation runs, and checks with a
// chi-square test that every selectable cell is equally likely and no bad
// cell is ever drawn.
func TestRandUniformOverSelectable(t *testing.T) {
	shape, err := geom.NewCircle(geom.Chunk{X: -7, Z: 12}, 12, 5)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	tb, err := New(Options{Shape: shape, Clock: clk.Now, TTL: modelTTL})
	if err != nil {
		t.Fatal(err)
	}
	n := shape.Len()
	rng := rand.New(rand.NewPCG(11, 12))
	// A claim that will be on probation (selectable) by the time we draw.
	for dx := range int64(3) {
		if err := tb.AddBadChunk(geom.Chunk{X: -7 + 8 + dx, Z: 12}, CauseSafetyExternal, "a"); err != nil {
			t.Fatal(err)
		}
	}
	tb.Rebuild()
	clk.Advance(150 * time.Second)
	for range n / 3 {
		c := []Cause{CauseSafety, CauseBiome, CauseSafetyExternal}[rng.IntN(3)]
		if err := tb.AddBad(rng.Int64N(n), c, ""); err != nil {
			t.Fatal(err)
		}
	}
	tb.Rebuild()
	if len(probationRuns(tb)) == 0 {
		t.Fatal("setup: no probation run")
	}
	sel := tb.Selectable()
	counts := make(map[int64]int, sel)
	const perCell = 200
	draws := int(sel) * perCell
	for range draws {
		i, ok := tb.Rand(rng)
		if !ok {
			t.Fatal("Rand() found nothing selectable")
		}
		if tb.IsBad(i) {
			t.Fatalf("Rand() = %d, a bad cell", i)
		}
		counts[i]++
	}
	if int64(len(counts)) != sel {
		t.Fatalf("Rand() reached %d distinct cells, want all %d selectable", len(counts), sel)
	}
	var chi2 float64
	for _, c := range counts {
		d := float64(c) - perCell
		chi2 += d * d / perCell
	}
	// For k-1 degrees of freedom, chi2 is about normal with mean k-1 and
	// deviation sqrt(2(k-1)); 5 deviations is a one-in-millions false alarm.
	df := float64(sel - 1)
	if z := (chi2 - df) / math.Sqrt(2*df); math.Abs(z) > 5 {
		t.Fatalf("chi-square %.0f for %v degrees of freedom (z = %.1f): not uniform", chi2, df, z)
	}
	// The hole is never part of the shape, so never drawn.
	for i := range counts {
		c := shape.Chunk(i)
		dx, dz := c.X+7, c.Z-12
		if dx*dx+dz*dz < 25 {
			t.Fatalf("Rand() drew %v inside the hole", c)
		}
	}
}

// TestExpandKeepsUsableCount: with the universe grown past the shape by the
// number of bad cells, ranks [0, N) select N usable cells, some beyond the
// shape, and AddBadChunk accepts chunks there.
func TestExpandKeepsUsableCount(t *testing.T) {
	shape, err := geom.NewSquare(geom.Chunk{}, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := shape.Len()
	bad := int64(10)
	tb, err := New(Options{Shape: shape, Len: geom.ExpandedUniverse(shape, bad), Clock: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range bad {
		if err := tb.AddBadChunk(shape.Chunk(i), CauseSafety, ""); err != nil {
			t.Fatal(err)
		}
	}
	tb.Rebuild()
	if got := tb.Selectable(); got != n {
		t.Fatalf("Selectable() = %d, want the shape's %d", got, n)
	}
	last, ok := tb.Select(n - 1)
	if !ok || last != n+bad-1 {
		t.Fatalf("Select(N-1) = %d, %v; want %d (past the shape)", last, ok, n+bad-1)
	}
	outside := shape.Beyond(last - n)
	if shape.Contains(outside) {
		t.Fatalf("the expanded cell %v is inside the shape", outside)
	}
	if err := tb.AddBadChunk(outside, CauseSafety, ""); err != nil {
		t.Fatalf("AddBadChunk(%v) beyond the shape: %v", outside, err)
	}
	if err := tb.AddBadChunk(shape.Beyond(bad+5), CauseSafety, ""); err == nil {
		t.Fatal("AddBadChunk past the expanded universe succeeded")
	}
}

// rankDist returns a fixed rank, whatever the draw (to reach every branch
// of Pick, including a distribution that breaks its contract).
type rankDist int64

func (r rankDist) Pick(float64, int64) int64 { return int64(r) }

// TestPick: Pick returns the selectable index of the distribution's rank,
// caps the ranks at limit (the expand mode: with the universe grown past
// the shape, ranks over the shape's Len reach past it as cells near the
// centre go bad), clamps a rank outside [0, n), and reports false when
// nothing is selectable.
func TestPick(t *testing.T) {
	shape, err := geom.NewSquare(geom.Chunk{}, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := shape.Len()
	tb, err := New(Options{Shape: shape, Len: geom.ExpandedUniverse(shape, 10), SpatialResolution: -1, Clock: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		mustAdd(t, tb, 2*i, CauseSafety, "") // 0, 2, ..., 18 bad
	}
	tb.Rebuild()
	sel := tb.Selectable()
	for _, tc := range []struct {
		name  string
		d     geom.Distribution
		u     float64
		limit int64
		want  int64
	}{
		{"first", geom.Flat{}, 0, 0, 1},
		{"last of the universe", geom.Flat{}, 0.999999, 0, tb.Len() - 1},
		{"last of the shape's ranks", geom.Flat{}, 0.999999, n, n + 9},
		{"expand picks as its ranks", geom.Expand{Ranks: geom.Weighted{Exponent: 2}}, 0.5, n, mustSelect(t, tb, geom.Weighted{Exponent: 2}.Pick(0.5, n))},
		{"rank past n clamps", rankDist(1 << 40), 0, 0, tb.Len() - 1},
		{"negative rank clamps", rankDist(-3), 0, 0, 1},
		{"limit above selectable", geom.Flat{}, 0.999999, sel + 100, tb.Len() - 1},
	} {
		got, ok := tb.Pick(tc.d, tc.u, tc.limit)
		if !ok || got != tc.want {
			t.Errorf("%s: Pick(%v, %v, %d) = %d, %v; want %d", tc.name, tc.d, tc.u, tc.limit, got, ok, tc.want)
		}
		if tb.IsBad(got) {
			t.Errorf("%s: Pick returned bad index %d", tc.name, got)
		}
	}

	empty := newTestTable(t, 4, newFakeClock())
	for i := range int64(4) {
		mustAdd(t, empty, i, CauseSafety, "")
	}
	empty.Rebuild()
	if i, ok := empty.Pick(geom.Flat{}, 0.5, 0); ok {
		t.Fatalf("Pick on a fully bad table = %d, true; want false", i)
	}
}

func mustSelect(t *testing.T, tb *Table, k int64) int64 {
	t.Helper()
	i, ok := tb.Select(k)
	if !ok {
		t.Fatalf("Select(%d) failed", k)
	}
	return i
}
