package geom

import (
	"math"
	"strings"
	"testing"
)

// FuzzShape builds shapes from arbitrary parameters and checks that the
// constructors either refuse them with a geom error or return a shape whose
// bijections hold where the fuzzer probes. Radii that would be accepted are
// folded below 97 so each input stays fast; the rest reach the validators
// as they are.
func FuzzShape(f *testing.F) {
	f.Add(uint8(0), int64(0), int64(0), int64(10), int64(0), int64(3), int64(0), 0.0, int64(17), int64(2), int64(-3))
	f.Add(uint8(1), int64(-7), int64(1_234_567), int64(33), int64(0), int64(16), int64(0), 0.0, int64(-1), int64(-7), int64(1_234_590))
	f.Add(uint8(2), int64(5), int64(5), int64(64), int64(40), int64(32), int64(20), 137.5, int64(1<<40), int64(70), int64(5))
	f.Add(uint8(2), int64(0), int64(0), int64(1), int64(1), int64(1), int64(1), 30.0, int64(0), int64(0), int64(0))
	f.Add(uint8(0), MaxCenter+1, int64(0), int64(-1), int64(0), int64(-5), int64(0), math.NaN(), int64(0), int64(0), int64(0))
	f.Add(uint8(2), int64(0), int64(0), MaxRadius+1, int64(3), int64(4), int64(-1), math.Inf(1), int64(0), int64(math.MaxInt64), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, kind uint8, cx, cz, r1, r2, i1, i2 int64, rot float64, idx, px, pz int64) {
		fold := func(v int64) int64 {
			if v < 0 || v > MaxRadius {
				return v
			}
			return v % 97
		}
		center := Chunk{cx, cz}
		var s Shape
		var err error
		switch kind % 3 {
		case 0:
			var c *Circle
			c, err = NewCircle(center, fold(r1), fold(i1))
			if err == nil {
				s = c
			}
		case 1:
			var q *Square
			q, err = NewSquare(center, fold(r1), fold(i1))
			if err == nil {
				s = q
			}
		default:
			var r *Rectangle
			r, err = NewRectangle(RectangleSpec{Center: center, RadiusX: fold(r1), RadiusZ: fold(r2),
				InnerX: fold(i1), InnerZ: fold(i2), Rotation: rot})
			if err == nil {
				s = r
			}
		}
		if err != nil {
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, "geom: ") {
					t.Fatalf("error line %q lacks the package prefix", line)
				}
			}
			return
		}
		n := s.Len()
		if n < 1 {
			t.Fatalf("%v: Len() = %d", s, n)
		}
		i := idx % n
		if i < 0 {
			i += n
		}
		c := s.Chunk(i)
		if got, ok := s.Index(c); got != i || !ok || !s.Contains(c) {
			t.Fatalf("%v: Index(Chunk(%d) = %v) = (%d, %v), Contains = %v", s, i, c, got, ok, s.Contains(c))
		}
		j := idx % MaxBeyond
		if j < 0 {
			j += MaxBeyond
		}
		c = s.Beyond(j)
		if got, ok := s.BeyondIndex(c); got != j || !ok || s.Contains(c) {
			t.Fatalf("%v: BeyondIndex(Beyond(%d) = %v) = (%d, %v), Contains = %v", s, j, c, got, ok, s.Contains(c))
		}
		for _, p := range []Chunk{{px, pz}, {cx + px%200, cz + pz%200}} {
			i, in := s.Index(p)
			j, out := s.BeyondIndex(p)
			switch {
			case in && out:
				t.Fatalf("%v: %v is both in the shape (%d) and beyond it (%d)", s, p, i, j)
			case in != s.Contains(p):
				t.Fatalf("%v: Index(%v) ok = %v, Contains = %v", s, p, in, s.Contains(p))
			case in && s.Chunk(i) != p:
				t.Fatalf("%v: Chunk(Index(%v) = %d) = %v", s, p, i, s.Chunk(i))
			case out && s.Beyond(j) != p:
				t.Fatalf("%v: Beyond(BeyondIndex(%v) = %d) = %v", s, p, j, s.Beyond(j))
			}
			if k, ok := IndexOf(s, p); ok != (in || out) || ok && ChunkAt(s, k) != p {
				t.Fatalf("%v: IndexOf(%v) = (%d, %v)", s, p, k, ok)
			}
		}
	})
}

// FuzzPick checks that no parameters and no draw push a rank outside
// [0, n).
func FuzzPick(f *testing.F) {
	f.Add(0.5, int64(100), 2.0, 0.5, 0.1)
	f.Add(0.0, int64(1), 0.0, 0.0, 0.0)
	f.Add(math.Nextafter(1, 0), int64(math.MaxInt64), math.Inf(1), 1.0, 1e-300)
	f.Add(math.NaN(), int64(-3), math.NaN(), math.NaN(), math.NaN())
	f.Fuzz(func(t *testing.T, u float64, n int64, e, m, d float64) {
		for _, dist := range []Distribution{Flat{}, Weighted{Exponent: e}, Normal{Mean: m, Deviation: d},
			Expand{Ranks: Normal{Mean: m, Deviation: d}}} {
			r := dist.Pick(u, n)
			if n < 1 && r != 0 || n >= 1 && (r < 0 || r >= n) {
				t.Fatalf("%#v.Pick(%v, %d) = %d", dist, u, n, r)
			}
		}
	})
}
