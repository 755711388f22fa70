package geom

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestIsqrt(t *testing.T) {
	for n := int64(0); n <= 100_000; n++ {
		r := isqrt(n)
		if r*r > n || (r+1)*(r+1) <= n {
			t.Fatalf("isqrt(%d) = %d", n, r)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(n int64) {
		t.Helper()
		want := new(big.Int).Sqrt(big.NewInt(n)).Int64()
		if got := isqrt(n); got != want {
			t.Fatalf("isqrt(%d) = %d, want %d", n, got, want)
		}
	}
	for range 100_000 {
		check(rng.Int64())
		check(rng.Int64N(1 << 53))
	}
	for _, s := range []int64{1 << 20, 1<<26 - 1, 1 << 26, 1<<31 - 1, 1 << 31, 3_037_000_499} {
		for d := int64(-2); d <= 2; d++ {
			if sq := s * s; sq+d >= 0 {
				check(sq + d)
			}
		}
	}
	check(math.MaxInt64)
}

func TestDivisions(t *testing.T) {
	for a := int64(-50); a <= 50; a++ {
		for b := int64(1); b <= 7; b++ {
			f := int64(math.Floor(float64(a) / float64(b)))
			c := int64(math.Ceil(float64(a) / float64(b)))
			if floorDiv(a, b) != f || ceilDiv(a, b) != c {
				t.Fatalf("floorDiv, ceilDiv(%d, %d) = %d, %d, want %d, %d", a, b, floorDiv(a, b), ceilDiv(a, b), f, c)
			}
		}
	}
}

// largeCases are shapes too big for the exhaustive check, with their sizes
// counted independently of the spiral (column by column, or in closed
// form); -1 means no closed form is at hand.
func largeCases(t *testing.T) []struct {
	sc   shapeCase
	want int64
} {
	t.Helper()
	const r = 100_000
	// Column by column: column dx holds the z with z² <= r² - dx².
	disc := func(r, strict int64) int64 {
		var n int64
		for dx := -r; dx <= r; dx++ {
			if q := r*r - dx*dx - strict; q >= 0 {
				n += 2*isqrt(q) + 1
			}
		}
		return n
	}
	return []struct {
		sc   shapeCase
		want int64
	}{
		{circleCase(Chunk{12, -34}, r, 0), disc(r, 0)},
		{circleCase(Chunk{0, 0}, r, 40_000), disc(r, 0) - disc(40_000, 1)},
		{squareCase(Chunk{-5, 5}, r, 0), (2*r + 1) * (2*r + 1)},
		{squareCase(Chunk{0, 0}, r, 77_777), (2*r+1)*(2*r+1) - (2*77_777-1)*(2*77_777-1)},
		{rectCase(RectangleSpec{Center: Chunk{1, 2}, RadiusX: r, RadiusZ: 60_000, InnerX: 30_000, InnerZ: 20_000}),
			(2*r+1)*(2*60_000+1) - (2*30_000-1)*(2*20_000-1)},
		{rectCase(RectangleSpec{RadiusX: r, RadiusZ: 50_000, InnerX: 70_000, InnerZ: 10_000, Rotation: 137.5}), -1},
		{rectCase(RectangleSpec{RadiusX: r, RadiusZ: r, Rotation: 30}), -1},
	}
}

// TestShapeSampled checks round trips of 100,000 random indices, 100,000
// random chunks and 100,000 random extension indices at radius 100,000.
func TestShapeSampled(t *testing.T) {
	t.Parallel()
	for _, lc := range largeCases(t) {
		sc := lc.sc
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s, err := sc.build()
			if err != nil {
				t.Fatal(err)
			}
			n := s.Len()
			if lc.want >= 0 && n != lc.want {
				t.Fatalf("Len() = %d, want %d", n, lc.want)
			}
			rng := rand.New(rand.NewPCG(uint64(n), 5))
			idx := make([]int64, 0, 100_002)
			idx = append(idx, 0, n-1)
			for range 100_000 {
				idx = append(idx, rng.Int64N(n))
			}
			for _, i := range idx {
				c := s.Chunk(i)
				if in, _ := sc.member(c.X-sc.center.X, c.Z-sc.center.Z); !in {
					t.Fatalf("Chunk(%d) = %v, not a member", i, c)
				}
				if got, ok := s.Index(c); got != i || !ok {
					t.Fatalf("Index(Chunk(%d) = %v) = (%d, %v)", i, c, got, ok)
				}
			}
			// Spiral order: sorted indices give chunks in ring order.
			slices.Sort(idx)
			var prev [2]int64
			for k, i := range idx {
				c := s.Chunk(i)
				ring, pos := ringPos(c.X-sc.center.X, c.Z-sc.center.Z)
				key := [2]int64{ring, pos}
				if k > 0 && i != idx[k-1] && (key[0] < prev[0] || key[0] == prev[0] && key[1] <= prev[1]) {
					t.Fatalf("Chunk(%d) at ring %d position %d is not after Chunk(%d) at %v", i, ring, pos, idx[k-1], prev)
				}
				prev = key
			}
			// Random chunks in and around the shape.
			b := sc.reach + 3
			for range 100_000 {
				dx, dz := rng.Int64N(2*b+1)-b, rng.Int64N(2*b+1)-b
				c := Chunk{sc.center.X + dx, sc.center.Z + dz}
				in, outer := sc.member(dx, dz)
				i, ok := s.Index(c)
				if ok != in || s.Contains(c) != in {
					t.Fatalf("Index(%v) = (%d, %v), Contains = %v, want %v", c, i, ok, s.Contains(c), in)
				}
				if ok && s.Chunk(i) != c {
					t.Fatalf("Chunk(Index(%v) = %d) = %v", c, i, s.Chunk(i))
				}
				j, ok := s.BeyondIndex(c)
				if ok == outer {
					t.Fatalf("BeyondIndex(%v) = (%d, %v), want ok = %v", c, j, ok, !outer)
				}
				if ok && s.Beyond(j) != c {
					t.Fatalf("Beyond(BeyondIndex(%v) = %d) = %v", c, j, s.Beyond(j))
				}
			}
			// Random extension indices: partial rings, whole rings, far.
			js := []int64{0, 1, MaxBeyond - 1, MaxBeyond - 2}
			for range 50_000 {
				js = append(js, rng.Int64N(4*n))
			}
			for range 50_000 {
				js = append(js, rng.Int64N(MaxBeyond))
			}
			slices.Sort(js)
			for k, j := range js {
				c := s.Beyond(j)
				dx, dz := c.X-sc.center.X, c.Z-sc.center.Z
				if _, outer := sc.member(dx, dz); outer {
					t.Fatalf("Beyond(%d) = %v, inside the outer boundary", j, c)
				}
				if got, ok := s.BeyondIndex(c); got != j || !ok {
					t.Fatalf("BeyondIndex(Beyond(%d) = %v) = (%d, %v)", j, c, got, ok)
				}
				if got, ok := IndexOf(s, c); got != n+j || !ok || ChunkAt(s, n+j) != c {
					t.Fatalf("IndexOf(%v) = (%d, %v), ChunkAt(%d) = %v; want %d", c, got, ok, n+j, ChunkAt(s, n+j), n+j)
				}
				ring, pos := ringPos(dx, dz)
				key := [2]int64{ring, pos}
				if k > 0 && j != js[k-1] && (key[0] < prev[0] || key[0] == prev[0] && key[1] <= prev[1]) {
					t.Fatalf("Beyond(%d) at ring %d position %d is not after Beyond(%d) at %v", j, ring, pos, js[k-1], prev)
				}
				prev = key
			}
		})
	}
}

// beyondSplit returns a shape's last table ring and the number of
// extension cells within the table, where the closed form takes over.
func beyondSplit(s Shape) (bound, w int64) {
	switch s := s.(type) {
	case *Circle:
		return s.s.bound, s.s.outsideBefore(s.s.bound + 1)
	case *Square:
		return s.s.bound, s.s.outsideBefore(s.s.bound + 1)
	case *Rectangle:
		return s.s.bound, s.s.outsideBefore(s.s.bound + 1)
	}
	panic("unknown shape")
}

// TestBeyondSeam checks the extension where its tables end and its closed
// form begins, and at its far end.
func TestBeyondSeam(t *testing.T) {
	shapes := []Shape{}
	for _, sc := range []shapeCase{
		circleCase(Chunk{-3, 3}, 1000, 10),
		squareCase(Chunk{0, 0}, 0, 0),
		rectCase(RectangleSpec{RadiusX: 300, RadiusZ: 20, Rotation: 10}),
	} {
		s, err := sc.build()
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, s)
	}
	for _, s := range shapes {
		bound, w := beyondSplit(s)
		for j := max(w-5000, 0); j < w+5000; j++ {
			c, next := s.Beyond(j), s.Beyond(j+1)
			if got, ok := s.BeyondIndex(c); got != j || !ok {
				t.Fatalf("%v: BeyondIndex(Beyond(%d) = %v) = (%d, %v)", s, j, c, got, ok)
			}
			if j >= w {
				// Whole rings: every step is to a neighbour.
				if d := max(c.X-next.X, next.X-c.X, c.Z-next.Z, next.Z-c.Z); d != 1 {
					t.Fatalf("%v: Beyond(%d) = %v and Beyond(%d) = %v are %d apart", s, j, c, j+1, next, d)
				}
			}
		}
		first := s.Beyond(w)
		center := s.(interface{ Center() Chunk }).Center()
		if ring, pos := ringPos(first.X-center.X, first.Z-center.Z); ring != bound+1 || pos != 0 {
			t.Errorf("%v: Beyond(%d) = %v at ring %d position %d, want the first cell of ring %d", s, w, first, ring, pos, bound+1)
		}

		// The far end: the last index round-trips, the cell after it is
		// out of reach, and cells past the last ring are out of reach.
		last := s.Beyond(MaxBeyond - 1)
		if got, ok := s.BeyondIndex(last); got != MaxBeyond-1 || !ok {
			t.Fatalf("%v: BeyondIndex(Beyond(MaxBeyond-1) = %v) = (%d, %v)", s, last, got, ok)
		}
		ring, pos := ringPos(last.X-center.X, last.Z-center.Z)
		var after Chunk
		for dx := -1; dx <= 1; dx++ {
			for dz := -1; dz <= 1; dz++ {
				c := Chunk{last.X + int64(dx), last.Z + int64(dz)}
				if r, p := ringPos(c.X-center.X, c.Z-center.Z); r == ring && p == pos+1 {
					after = c
				}
			}
		}
		if j, ok := s.BeyondIndex(after); ok {
			t.Errorf("%v: BeyondIndex(%v), the cell after the last, = (%d, true)", s, after, j)
		}
	}
}

func TestFarChunks(t *testing.T) {
	c, err := NewCircle(Chunk{MaxCenter, -MaxCenter}, 1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRectangle(RectangleSpec{Center: Chunk{-MaxCenter, MaxCenter}, RadiusX: 50, RadiusZ: 90, Rotation: 33})
	if err != nil {
		t.Fatal(err)
	}
	far := []int64{math.MinInt64, math.MinInt64 + 1, -farLimit - 1, -farLimit, -1 << 40, 1 << 40, farLimit, farLimit + 1, math.MaxInt64}
	for _, s := range []Shape{c, r} {
		for _, x := range far {
			for _, z := range append(far, 0, MaxCenter, -MaxCenter) {
				ch := Chunk{x, z}
				if s.Contains(ch) {
					t.Errorf("%v.Contains(%v) = true", s, ch)
				}
				if i, ok := s.Index(ch); ok {
					t.Errorf("%v.Index(%v) = (%d, true)", s, ch, i)
				}
				if j, ok := s.BeyondIndex(ch); ok {
					t.Errorf("%v.BeyondIndex(%v) = (%d, true), beyond the extension's reach", s, ch, j)
				}
				if i, ok := IndexOf(s, ch); ok {
					t.Errorf("IndexOf(%v, %v) = (%d, true)", s, ch, i)
				}
			}
		}
	}
}

func TestPanics(t *testing.T) {
	s, err := NewCircle(Chunk{}, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Len()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"Chunk(-1)", func() { s.Chunk(-1) }, "geom: Chunk(-1) outside [0, 28)"},
		{"Chunk(Len)", func() { s.Chunk(n) }, "geom: Chunk(28) outside [0, 28)"},
		{"Beyond(-1)", func() { s.Beyond(-1) }, "geom: Beyond(-1) outside [0, 4611686018427387904)"},
		{"Beyond(MaxBeyond)", func() { s.Beyond(MaxBeyond) }, "geom: Beyond(4611686018427387904) outside"},
		{"ChunkAt(-1)", func() { ChunkAt(s, -1) }, "geom: Chunk(-1) outside"},
		{"ChunkAt(Len+MaxBeyond)", func() { ChunkAt(s, n+MaxBeyond) }, "geom: Beyond(4611686018427387904) outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tt.want) {
					t.Errorf("panic %q, want one containing %q", msg, tt.want)
				}
			}()
			tt.f()
		})
	}
	if n != 28 {
		t.Errorf("circle radius 3 inner 1: Len() = %d, want 28 (29 cells of the disc less the centre)", n)
	}
}

// TestSpiralLocality checks that consecutive indices are neighbours except
// where a ring's intervals end.
func TestSpiralLocality(t *testing.T) {
	step := func(a, b Chunk) int64 { return max(a.X-b.X, b.X-a.X, a.Z-b.Z, b.Z-a.Z) }

	// Whole rings: every step, across rings too, is to a neighbour.
	sq, err := NewSquare(Chunk{4, 4}, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sq.Len() - 1 {
		if d := step(sq.Chunk(i), sq.Chunk(i+1)); d != 1 {
			t.Fatalf("%v: Chunk(%d) and Chunk(%d) are %d apart", sq, i, i+1, d)
		}
	}

	// Clipped rings: jumps only between intervals, at most 8 per ring, so
	// almost every step is to a neighbour.
	for _, sc := range []shapeCase{
		circleCase(Chunk{}, 512, 0),
		circleCase(Chunk{}, 512, 256),
		rectCase(RectangleSpec{RadiusX: 400, RadiusZ: 150, InnerX: 100, InnerZ: 50, Rotation: 30}),
	} {
		s, err := sc.build()
		if err != nil {
			t.Fatal(err)
		}
		var near, jumps int64
		for i := range s.Len() - 1 {
			if step(s.Chunk(i), s.Chunk(i+1)) == 1 {
				near++
			} else {
				jumps++
			}
		}
		rings := sc.reach + 1
		if jumps > 8*rings {
			t.Errorf("%v: %d jumps over %d rings, want at most 8 per ring", s, jumps, rings)
		}
		if frac := float64(near) / float64(s.Len()-1); frac < 0.99 {
			t.Errorf("%v: %.4f of steps to a neighbour, want at least 0.99", s, frac)
		}
	}
}

// TestMaxRadius builds the largest shapes: Len is exact and far from
// overflow, and one past the limit is refused.
func TestMaxRadius(t *testing.T) {
	t.Parallel()
	const r = MaxRadius
	sq, err := NewSquare(Chunk{MaxCenter, MaxCenter}, r, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := (2*r+1)*(2*r+1) - (2*r-1)*(2*r-1); sq.Len() != want {
		t.Errorf("%v.Len() = %d, want %d", sq, sq.Len(), want)
	}
	c, err := NewCircle(Chunk{-MaxCenter, MaxCenter}, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for dx := -r; dx <= r; dx++ {
		want += 2*isqrt(r*r-dx*dx) + 1
	}
	if c.Len() != want {
		t.Errorf("%v.Len() = %d, want %d", c, c.Len(), want)
	}
	rect, err := NewRectangle(RectangleSpec{RadiusX: r, RadiusZ: r, Rotation: 45})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Shape{sq, c, rect} {
		n := s.Len()
		for _, i := range []int64{0, n / 3, n - 1} {
			if got, ok := s.Index(s.Chunk(i)); got != i || !ok {
				t.Errorf("%v: Index(Chunk(%d)) = (%d, %v)", s, i, got, ok)
			}
		}
		for _, i := range []int64{n, n + 1, n + MaxBeyond - 1} {
			if got, ok := IndexOf(s, ChunkAt(s, i)); got != i || !ok {
				t.Errorf("%v: IndexOf(ChunkAt(%d)) = (%d, %v)", s, i, got, ok)
			}
		}
	}
	if _, err := NewCircle(Chunk{}, r+1, 0); err == nil {
		t.Errorf("NewCircle(radius %d) succeeded, want an error", r+1)
	}
	if _, err := NewRectangle(RectangleSpec{RadiusX: 1, RadiusZ: r + 1}); err == nil {
		t.Errorf("NewRectangle(radius z %d) succeeded, want an error", r+1)
	}
}

func TestShapeAllocs(t *testing.T) {
	shapes := []Shape{}
	for _, sc := range []shapeCase{
		circleCase(Chunk{}, 1000, 10),
		squareCase(Chunk{}, 1000, 10),
		rectCase(RectangleSpec{RadiusX: 1000, RadiusZ: 500, InnerX: 10, InnerZ: 10, Rotation: 30}),
	} {
		s, err := sc.build()
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, s)
	}
	for _, s := range shapes {
		i := s.Len() / 2
		c := s.Chunk(i)
		if a := testing.AllocsPerRun(100, func() { c = s.Chunk(i) }); a != 0 {
			t.Errorf("%v.Chunk: %v allocs, want 0", s, a)
		}
		if a := testing.AllocsPerRun(100, func() { i, _ = s.Index(c) }); a != 0 {
			t.Errorf("%v.Index: %v allocs, want 0", s, a)
		}
		if a := testing.AllocsPerRun(100, func() { c = s.Beyond(12345) }); a != 0 {
			t.Errorf("%v.Beyond: %v allocs, want 0", s, a)
		}
		if a := testing.AllocsPerRun(100, func() { i, _ = s.BeyondIndex(c) }); a != 0 {
			t.Errorf("%v.BeyondIndex: %v allocs, want 0", s, a)
		}
	}
}
