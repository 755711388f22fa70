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
