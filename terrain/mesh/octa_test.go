package mesh

import (
	"math"
	"math/rand/v2"
	"testing"
)

// maxNormalErrorDeg bounds the angle between a unit normal and its decoded
// octahedral encoding. Measured worst case over TestOctahedralError's
// sample is printed by that test; the bound leaves a small margin.
const maxNormalErrorDeg = 0.7

func angleDeg(ax, ay, az, bx, by, bz float64) float64 {
	la := math.Sqrt(ax*ax + ay*ay + az*az)
	lb := math.Sqrt(bx*bx + by*by + bz*bz)
	c := (ax*bx + ay*by + az*bz) / (la * lb)
	return math.Acos(min(max(c, -1), 1)) * 180 / math.Pi
}

func TestOctahedralError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	check := func(x, y, z float64) {
		qu, qw := octEncode(float32(x), float32(y), float32(z))
		dx, dy, dz := octDecode(qu, qw)
		if l := math.Sqrt(float64(dx*dx + dy*dy + dz*dz)); math.Abs(l-1) > 1e-6 {
			t.Fatalf("octDecode(%d, %d) has length %v, want 1", qu, qw, l)
		}
		a := angleDeg(x, y, z, float64(dx), float64(dy), float64(dz))
		worst = max(worst, a)
		if a > maxNormalErrorDeg {
			t.Fatalf("normal (%v, %v, %v) decodes to (%v, %v, %v), %v degrees off, want <= %v", x, y, z, dx, dy, dz, a, maxNormalErrorDeg)
		}
	}
	for _, v := range [][3]float64{{0, 1, 0}, {0, -1, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 0, 1}, {0, 0, -1}, {1, 1, 1}, {-1, -1, -1}, {1, -1, 0}} {
		check(v[0], v[1], v[2])
	}
	for range 200000 {
		x, y, z := r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
		if x == 0 && y == 0 && z == 0 {
			continue
		}
		check(x, y, z)
	}
	t.Logf("worst octahedral error %.3f degrees", worst)
	// Every code decodes to a finite unit vector, including -128.
	for qu := -128; qu <= 127; qu++ {
		for qw := -128; qw <= 127; qw++ {
			x, y, z := octDecode(int8(qu), int8(qw))
			if l := math.Sqrt(float64(x*x + y*y + z*z)); math.IsNaN(l) || math.Abs(l-1) > 1e-6 {
				t.Fatalf("octDecode(%d, %d) = (%v, %v, %v), not a unit vector", qu, qw, x, y, z)
			}
		}
	}
	if qu, qw := octEncode(0, 0, 0); qu != 0 || qw != 0 {
		t.Errorf("octEncode(0, 0, 0) = %d, %d, want 0, 0 (straight up)", qu, qw)
	}
}
