package procworld

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloorY: floorY floors and clamps as math.Floor would, on the edges
// (whole and fractional values either side of zero and of both bounds)
// and on random heights across and beyond the build height.
func TestFloorY(t *testing.T) {
	want := func(e float32) int {
		switch f := math.Floor(float64(e)); {
		case f < MinY:
			return MinY
		case f > MaxY-1:
			return MaxY - 1
		default:
			return int(f)
		}
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1, -1, -1.5, 63.999, 64, -64.5,
		MinY, MinY - 0.5, MinY + 0.5, MinY - 1, MaxY - 1, MaxY - 1.5, MaxY - 0.5, MaxY, MaxY + 7.25,
		1e9, -1e9, float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32}
	for _, e := range edges {
		if got := floorY(e); got != want(e) {
			t.Errorf("floorY(%v) = %d, want %d", e, got, want(e))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		e := float32(rng.Float64()*float64(MaxY-MinY+40) + float64(MinY-20))
		if got := floorY(e); got != want(e) {
			t.Fatalf("floorY(%v) = %d, want %d", e, got, want(e))
		}
	}
	if got := floorY(float32(math.NaN())); got != MinY {
		t.Errorf("floorY(NaN) = %d, want MinY", got)
	}
}
