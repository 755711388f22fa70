package geom

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// shapeCase is a shape under test, with its membership written out again,
// independently of the spiral: the specification the spiral must match.
type shapeCase struct {
	name  string
	build func() (Shape, error)
	// member reports whether offset (dx, dz) from the centre is in the
	// shape, and whether it is inside the outer boundary (hole included).
	member func(dx, dz int64) (in, outer bool)
	center Chunk
	// reach bounds max(|dx|, |dz|) of every offset inside the outer
	// boundary.
	reach int64
}

func circleCase(center Chunk, r, inner int64) shapeCase {
	return shapeCase{
		name:   fmt.Sprintf("circle/c=%d,%d/r=%d/in=%d", center.X, center.Z, r, inner),
		build:  func() (Shape, error) { return NewCircle(center, r, inner) },
		center: center,
		reach:  r,
		member: func(dx, dz int64) (bool, bool) {
			d2 := dx*dx + dz*dz
			return inner*inner <= d2 && d2 <= r*r, d2 <= r*r
		},
	}
}

func squareCase(center Chunk, r, inner int64) shapeCase {
	return shapeCase{
		name:   fmt.Sprintf("square/c=%d,%d/r=%d/in=%d", center.X, center.Z, r, inner),
		build:  func() (Shape, error) { return NewSquare(center, r, inner) },
		center: center,
		reach:  r,
		member: func(dx, dz int64) (bool, bool) {
			m := max(dx, -dx, dz, -dz)
			return inner <= m && m <= r, m <= r
		},
	}
}

// rectMember is the rectangle's definition: u and v in units of 2^-30
// chunk, from cos and sin rounded to that grid.
func rectMember(sp RectangleSpec) func(dx, dz int64) (bool, bool) {
	theta := math.Mod(sp.Rotation, 360) / 180 * math.Pi
	c := int64(math.Round(math.Cos(theta) * (1 << 30)))
	s := int64(math.Round(math.Sin(theta) * (1 << 30)))
	return func(dx, dz int64) (bool, bool) {
		u := max(dx*c+dz*s, -(dx*c + dz*s))
		v := max(dz*c-dx*s, -(dz*c - dx*s))
		outer := u <= sp.RadiusX<<30 && v <= sp.RadiusZ<<30
		hole := u < sp.InnerX<<30 && v < sp.InnerZ<<30
		return outer && !hole, outer
	}
}

func rectCase(sp RectangleSpec) shapeCase {
	return shapeCase{
		name: fmt.Sprintf("rectangle/c=%d,%d/r=%d,%d/in=%d,%d/rot=%v",
			sp.Center.X, sp.Center.Z, sp.RadiusX, sp.RadiusZ, sp.InnerX, sp.InnerZ, sp.Rotation),
		build:  func() (Shape, error) { return NewRectangle(sp) },
		center: sp.Center,
		// The half-diagonal, rounded up, bounds every corner.
		reach:  int64(math.Ceil(math.Hypot(float64(sp.RadiusX), float64(sp.RadiusZ)))) + 1,
		member: rectMember(sp),
	}
}

// ringPos returns the Chebyshev ring of an offset and its position in the
// ring's walk: the +x side going +z from (k, 1-k), then the +z side going
// -x, the -x side going -z, the -z side going +x. TestRingWalk checks it
// against an explicit walk.
func ringPos(dx, dz int64) (k, pos int64) {
	k = max(dx, -dx, dz, -dz)
	switch {
	case k == 0:
		return 0, 0
	case dx == k && dz > -k:
		return k, dz - (1 - k)
	case dz == k && dx < k:
		return k, 2*k + (k - 1 - dx)
	case dx == -k && dz < k:
		return k, 4*k + (k - 1 - dz)
	default:
		return k, 6*k + (dx - (1 - k))
	}
}

func TestRingWalk(t *testing.T) {
	for k := int64(1); k <= 20; k++ {
		x, z := k, 1-k
		seen := map[[2]int64]bool{}
		steps := [][2]int64{{0, 1}, {-1, 0}, {0, -1}, {1, 0}}
		for pos := int64(0); pos < 8*k; pos++ {
			if gk, gp := ringPos(x, z); gk != k || gp != pos {
				t.Fatalf("ringPos(%d, %d) = (%d, %d), want (%d, %d)", x, z, gk, gp, k, pos)
			}
			seen[[2]int64{x, z}] = true
			st := steps[pos/(2*k)]
			if pos%(2*k) == 2*k-1 && pos != 8*k-1 {
				st = steps[pos/(2*k)+1]
			}
			x, z = x+st[0], z+st[1]
		}
		if len(seen) != int(8*k) {
			t.Fatalf("ring %d walk visited %d cells, want %d", k, len(seen), 8*k)
		}
		if x != k+1 || z != -k {
			// The last step, taken along the -z side's direction, must
			// land on the next ring's first cell.
			t.Fatalf("ring %d walk ends before (%d, %d), want (%d, %d)", k, x, z, k+1, -k)
		}
	}
}

// shapeBound returns the last ring of a shape's tables.
func shapeBound(s Shape) int64 {
	switch s := s.(type) {
	case *Circle:
		return s.s.bound
	case *Square:
		return s.s.bound
	case *Rectangle:
		return s.s.bound
	}
	panic(fmt.Sprintf("unknown shape %T", s))
}

// checkExhaustive proves, for one shape, that Chunk and Index are inverse
// over every index, that the chunks are exactly the members of the shape in
// spiral order, and that Beyond and BeyondIndex enumerate exactly the
// chunks outside the outer boundary within a box around the shape, in the
// same order.
func checkExhaustive(t *testing.T, sc shapeCase) {
	t.Helper()
	b := sc.reach + 2
	side := 2*b + 1
	idx := func(dx, dz int64) int64 { return (dx+b)*side + (dz + b) }
	state := make([]uint8, side*side) // 1: listed by Chunk, 2: by Beyond

	// Brute force over the box.
	var members, outside, maxRing int64
	for dx := -b; dx <= b; dx++ {
		for dz := -b; dz <= b; dz++ {
			in, outer := sc.member(dx, dz)
			if in {
				members++
			}
			if !outer {
				outside++
			} else {
				maxRing = max(maxRing, dx, -dx, dz, -dz)
			}
		}
	}

	s, err := sc.build()
	if err != nil {
		if members == 0 && strings.Contains(err.Error(), "holds no chunk") {
			return // rightly rejected
		}
		t.Fatalf("%s: build: %v (brute force finds %d members)", sc.name, err, members)
	}
	n := s.Len()
	if n != members {
		t.Fatalf("%s: Len() = %d, want %d (brute-force count)", sc.name, n, members)
	}
	if bound := shapeBound(s); bound != maxRing {
		t.Errorf("%s: bound = %d, want the outer region's last ring %d", sc.name, bound, maxRing)
	}

	// Every index, in order.
	var prevKey [2]int64
	var prev Chunk
	jumps := map[int64]int{} // discontinuities entering or within ring k
	for i := range n {
		c := s.Chunk(i)
		dx, dz := c.X-sc.center.X, c.Z-sc.center.Z
		if max(dx, -dx, dz, -dz) > b {
			t.Fatalf("%s: Chunk(%d) = %v, outside the box", sc.name, i, c)
		}
		if in, _ := sc.member(dx, dz); !in {
			t.Fatalf("%s: Chunk(%d) = %v, not a member", sc.name, i, c)
		}
		if state[idx(dx, dz)] != 0 {
			t.Fatalf("%s: Chunk(%d) = %v, listed twice", sc.name, i, c)
		}
		state[idx(dx, dz)] = 1
		if got, ok := s.Index(c); got != i || !ok {
			t.Fatalf("%s: Index(Chunk(%d) = %v) = (%d, %v), want (%d, true)", sc.name, i, c, got, ok, i)
		}
		k, p := ringPos(dx, dz)
		key := [2]int64{k, p}
		if i > 0 {
			if key[0] < prevKey[0] || key[0] == prevKey[0] && key[1] <= prevKey[1] {
				t.Fatalf("%s: Chunk(%d) = %v at ring %d position %d, not after Chunk(%d) at %v",
					sc.name, i, c, k, p, i-1, prevKey)
			}
			if max(c.X-prev.X, prev.X-c.X, c.Z-prev.Z, prev.Z-c.Z) > 1 {
				jumps[k]++
			}
		}
		prevKey, prev = key, c
	}
	for k, j := range jumps {
		if j > 8 {
			t.Errorf("%s: %d jumps in ring %d, want at most 8 (one per interval)", sc.name, j, k)
		}
	}

	// The extension, within the box: exactly the outside cells, in order.
	for j := range outside {
		c := s.Beyond(j)
		dx, dz := c.X-sc.center.X, c.Z-sc.center.Z
		if max(dx, -dx, dz, -dz) > b {
			t.Fatalf("%s: Beyond(%d) = %v, outside the box before the box's %d outside cells are listed",
				sc.name, j, c, outside)
		}
		if _, outer := sc.member(dx, dz); outer {
			t.Fatalf("%s: Beyond(%d) = %v, inside the outer boundary", sc.name, j, c)
		}
		if state[idx(dx, dz)] != 0 {
			t.Fatalf("%s: Beyond(%d) = %v, listed twice", sc.name, j, c)
		}
		state[idx(dx, dz)] = 2
		if got, ok := s.BeyondIndex(c); got != j || !ok {
			t.Fatalf("%s: BeyondIndex(Beyond(%d) = %v) = (%d, %v), want (%d, true)", sc.name, j, c, got, ok, j)
		}
		k, p := ringPos(dx, dz)
		key := [2]int64{k, p}
		if j > 0 && (key[0] < prevKey[0] || key[0] == prevKey[0] && key[1] <= prevKey[1]) {
			t.Fatalf("%s: Beyond(%d) = %v at ring %d position %d, not after Beyond(%d) at %v",
				sc.name, j, c, k, p, j-1, prevKey)
		}
		prevKey = key
	}
	next := s.Beyond(outside)
	if k, p := ringPos(next.X-sc.center.X, next.Z-sc.center.Z); k != b+1 || p != 0 {
		t.Errorf("%s: Beyond(%d) = %v at ring %d position %d, want the first cell of ring %d",
			sc.name, outside, next, k, p, b+1)
	}

	// Every cell of the box: one of shape, extension or hole, agreeing
	// with Contains, Index, BeyondIndex and IndexOf.
	for dx := -b; dx <= b; dx++ {
		for dz := -b; dz <= b; dz++ {
			c := Chunk{sc.center.X + dx, sc.center.Z + dz}
			in, outer := sc.member(dx, dz)
			st := state[idx(dx, dz)]
			switch {
			case in && st != 1:
				t.Fatalf("%s: member %v never listed by Chunk", sc.name, c)
			case !outer && st != 2:
				t.Fatalf("%s: outside cell %v never listed by Beyond", sc.name, c)
			case !in && outer && st != 0:
				t.Fatalf("%s: hole cell %v listed", sc.name, c)
			}
			if got := s.Contains(c); got != in {
				t.Fatalf("%s: Contains(%v) = %v, want %v", sc.name, c, got, in)
			}
			if i, ok := s.Index(c); ok != in || !ok && i != 0 {
				t.Fatalf("%s: Index(%v) = (%d, %v), want ok = %v", sc.name, c, i, ok, in)
			}
			if j, ok := s.BeyondIndex(c); ok == outer || !ok && j != 0 {
				t.Fatalf("%s: BeyondIndex(%v) = (%d, %v), want ok = %v", sc.name, c, j, ok, !outer)
			}
			i, ok := IndexOf(s, c)
			if ok != (in || !outer) {
				t.Fatalf("%s: IndexOf(%v) = (%d, %v), want ok = %v", sc.name, c, i, ok, in || !outer)
			}
			if ok && ChunkAt(s, i) != c {
				t.Fatalf("%s: ChunkAt(IndexOf(%v) = %d) = %v", sc.name, c, i, ChunkAt(s, i))
			}
		}
	}
}

func exhaustiveCases() []shapeCase {
	var cases []shapeCase
	centers := []Chunk{{0, 0}, {-7, 1_234_567}, {MaxCenter, -MaxCenter}}
	radii := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 33, 64, 100}
	for ci, r := range radii {
		center := centers[ci%len(centers)]
		inners := []int64{0}
		for _, in := range []int64{1, r / 2, r - 1, r} {
			if in > 0 && in <= r && in != inners[len(inners)-1] {
				inners = append(inners, in)
			}
		}
		for _, in := range inners {
			cases = append(cases, circleCase(center, r, in), squareCase(center, r, in))
		}
	}
	sizes := [][2]int64{{0, 0}, {1, 0}, {0, 3}, {1, 1}, {2, 5}, {7, 3}, {10, 10}, {31, 12}, {64, 40}}
	rotations := []float64{0, 30, 45, 90, 137.5, 180, -20, 200, 359.9, 1e6 + 0.25}
	for si, sz := range sizes {
		for ri, rot := range rotations {
			holes := [][2]int64{{0, 0}, {sz[0] / 2, sz[1] / 2}, {sz[0], sz[1]}, {sz[0], 0}}
			for _, h := range holes {
				cases = append(cases, rectCase(RectangleSpec{
					Center:  centers[(si+ri)%len(centers)],
					RadiusX: sz[0], RadiusZ: sz[1], InnerX: h[0], InnerZ: h[1],
					Rotation: rot,
				}))
			}
		}
	}
	return cases
}

func TestShapeExhaustive(t *testing.T) {
	t.Parallel()
	for _, sc := range exhaustiveCases() {
		checkExhaustive(t, sc)
	}
}

// TestShapeExhaustive512 runs the exhaustive check at radius 512 for each
// kind of shape: about 800,000 indices and a million box cells each.
func TestShapeExhaustive512(t *testing.T) {
	t.Parallel()
	for _, sc := range []shapeCase{
		circleCase(Chunk{3, -5}, 512, 0),
		circleCase(Chunk{0, 0}, 512, 200),
		squareCase(Chunk{-100, 7}, 512, 301),
		rectCase(RectangleSpec{Center: Chunk{9, 9}, RadiusX: 512, RadiusZ: 300, InnerX: 200, InnerZ: 250, Rotation: 137.5}),
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			checkExhaustive(t, sc)
		})
	}
}

func TestShapeErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func() (Shape, error)
		want  []string // substrings, every one of them in the error
	}{
		{"circle negative radius", func() (Shape, error) { return NewCircle(Chunk{}, -1, 0) },
			[]string{"geom: circle radius -1 outside [0, 2097152]"}},
		{"circle radius above max", func() (Shape, error) { return NewCircle(Chunk{}, MaxRadius+1, 0) },
			[]string{"geom: circle radius 2097153 outside"}},
		{"circle negative inner", func() (Shape, error) { return NewCircle(Chunk{}, 5, -2) },
			[]string{"geom: circle inner radius -2 outside"}},
		{"circle inner above radius", func() (Shape, error) { return NewCircle(Chunk{}, 5, 6) },
			[]string{"geom: circle inner radius 6 exceeds radius 5"}},
		{"circle centre too far", func() (Shape, error) { return NewCircle(Chunk{MaxCenter + 1, 0}, 5, 0) },
			[]string{"geom: circle center chunk(4294967297, 0) outside"}},
		{"circle every problem at once", func() (Shape, error) { return NewCircle(Chunk{0, -MaxCenter - 1}, -3, -4) },
			[]string{"geom: circle center", "geom: circle radius -3", "geom: circle inner radius -4"}},
		{"square negative radius", func() (Shape, error) { return NewSquare(Chunk{}, -1, 0) },
			[]string{"geom: square radius -1 outside"}},
		{"square inner above radius", func() (Shape, error) { return NewSquare(Chunk{}, 2, 3) },
			[]string{"geom: square inner radius 3 exceeds radius 2"}},
		{"square radius above max", func() (Shape, error) { return NewSquare(Chunk{}, math.MaxInt64, 0) },
			[]string{"geom: square radius 9223372036854775807 outside"}},
		{"rectangle NaN rotation", func() (Shape, error) {
			return NewRectangle(RectangleSpec{RadiusX: 1, RadiusZ: 1, Rotation: math.NaN()})
		}, []string{"geom: rectangle rotation NaN is not a finite number of degrees"}},
		{"rectangle infinite rotation", func() (Shape, error) {
			return NewRectangle(RectangleSpec{RadiusX: 1, RadiusZ: 1, Rotation: math.Inf(-1)})
		}, []string{"geom: rectangle rotation -Inf"}},
		{"rectangle every problem at once", func() (Shape, error) {
			return NewRectangle(RectangleSpec{Center: Chunk{-MaxCenter - 1, 0}, RadiusX: -1, RadiusZ: MaxRadius + 1,
				InnerX: 2, InnerZ: -1, Rotation: math.Inf(1)})
		}, []string{"geom: rectangle center", "geom: rectangle radius x -1", "geom: rectangle radius z 2097153",
			"geom: rectangle inner z -1 outside", "geom: rectangle rotation +Inf"}},
		{"rectangle inner above radius", func() (Shape, error) {
			return NewRectangle(RectangleSpec{RadiusX: 4, RadiusZ: 4, InnerX: 4, InnerZ: 5})
		}, []string{"geom: rectangle inner z 5 exceeds radius z 4"}},
		{"rectangle all hole", func() (Shape, error) {
			// At 30 degrees no chunk but the centre lies exactly on the
			// edges, so a hole as large as the rectangle leaves nothing.
			return NewRectangle(RectangleSpec{RadiusX: 1, RadiusZ: 1, InnerX: 1, InnerZ: 1, Rotation: 30})
		}, []string{"geom: rectangle(center=chunk(0, 0), radius=(1, 1), inner=(1, 1), rotation=30) holds no chunk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.build()
			if err == nil {
				t.Fatalf("built %v, want an error", s)
			}
			if s != nil && !isNilShape(s) {
				t.Errorf("returned shape %v with the error", s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("error has %d lines, want one per problem (%d):\n%v", len(lines), len(tt.want), err)
			}
			for _, line := range lines {
				if !strings.HasPrefix(line, "geom: ") {
					t.Errorf("error line %q lacks the package prefix", line)
				}
			}
		})
	}
}

// isNilShape reports whether s holds a nil pointer of one of the shapes.
func isNilShape(s Shape) bool {
	switch s := s.(type) {
	case *Circle:
		return s == nil
	case *Square:
		return s == nil
	case *Rectangle:
		return s == nil
	}
	return false
}

func TestShapeString(t *testing.T) {
	c, _ := NewCircle(Chunk{1, -2}, 10, 3)
	q, _ := NewSquare(Chunk{0, 5}, 4, 0)
	r, _ := NewRectangle(RectangleSpec{Center: Chunk{-1, 1}, RadiusX: 6, RadiusZ: 2, InnerX: 1, InnerZ: 1, Rotation: 137.5})
	tests := []struct{ got, want string }{
		{c.String(), "circle(center=chunk(1, -2), radius=10, inner=3)"},
		{q.String(), "square(center=chunk(0, 5), radius=4, inner=0)"},
		{r.String(), "rectangle(center=chunk(-1, 1), radius=(6, 2), inner=(1, 1), rotation=137.5)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
	if c.Center() != (Chunk{1, -2}) || c.Radius() != 10 || c.Inner() != 3 {
		t.Errorf("circle accessors = %v, %d, %d", c.Center(), c.Radius(), c.Inner())
	}
	if q.Center() != (Chunk{0, 5}) || q.Radius() != 4 || q.Inner() != 0 {
		t.Errorf("square accessors = %v, %d, %d", q.Center(), q.Radius(), q.Inner())
	}
	if sp := r.Spec(); sp.RadiusX != 6 || sp.Rotation != 137.5 || r.Center() != (Chunk{-1, 1}) {
		t.Errorf("rectangle accessors = %+v, %v", sp, r.Center())
	}
}

// sameSpiral checks that two shapes list the same chunks in the same order.
func sameSpiral(t *testing.T, a, b Shape) {
	t.Helper()
	if a.Len() != b.Len() {
		t.Fatalf("%v.Len() = %d, %v.Len() = %d", a, a.Len(), b, b.Len())
	}
	for i := range a.Len() {
		if ca, cb := a.Chunk(i), b.Chunk(i); ca != cb {
			t.Fatalf("Chunk(%d): %v gives %v, %v gives %v", i, a, ca, b, cb)
		}
	}
	for j := range int64(2000) {
		if ca, cb := a.Beyond(j), b.Beyond(j); ca != cb {
			t.Fatalf("Beyond(%d): %v gives %v, %v gives %v", j, a, ca, b, cb)
		}
	}
}

// TestRectangleEquivalences checks rotations against each other and
// against the square: a shape's order depends only on its set of chunks.
func TestRectangleEquivalences(t *testing.T) {
	must := func(s Shape, err error) Shape {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	center := Chunk{5, -9}
	for _, r := range []int64{0, 1, 2, 7, 40} {
		for _, in := range []int64{0, 1, r / 2, r} {
			if in > r {
				continue
			}
			sq := must(NewSquare(center, r, in))
			for _, rot := range []float64{0, 90, 180, -90, 720} {
				rect := must(NewRectangle(RectangleSpec{Center: center, RadiusX: r, RadiusZ: r, InnerX: in, InnerZ: in, Rotation: rot}))
				sameSpiral(t, sq, rect)
			}
		}
	}
	for _, sz := range [][4]int64{{5, 2, 0, 0}, {9, 30, 3, 10}, {0, 12, 0, 6}} {
		a := must(NewRectangle(RectangleSpec{Center: center, RadiusX: sz[0], RadiusZ: sz[1], InnerX: sz[2], InnerZ: sz[3], Rotation: 90}))
		b := must(NewRectangle(RectangleSpec{Center: center, RadiusX: sz[1], RadiusZ: sz[0], InnerX: sz[3], InnerZ: sz[2]}))
		sameSpiral(t, a, b)
		c := must(NewRectangle(RectangleSpec{Center: center, RadiusX: sz[0], RadiusZ: sz[1], InnerX: sz[2], InnerZ: sz[3], Rotation: 30}))
		d := must(NewRectangle(RectangleSpec{Center: center, RadiusX: sz[0], RadiusZ: sz[1], InnerX: sz[2], InnerZ: sz[3], Rotation: 390}))
		sameSpiral(t, c, d)
		// Turning by -30 degrees mirrors the 30-degree rectangle across
		// the x axis.
		e := must(NewRectangle(RectangleSpec{Center: center, RadiusX: sz[0], RadiusZ: sz[1], InnerX: sz[2], InnerZ: sz[3], Rotation: -30}))
		if c.Len() != e.Len() {
			t.Fatalf("%v.Len() = %d, %v.Len() = %d", c, c.Len(), e, e.Len())
		}
		for i := range c.Len() {
			ch := c.Chunk(i)
			if m := (Chunk{ch.X, 2*center.Z - ch.Z}); !e.Contains(m) {
				t.Fatalf("%v holds %v, %v lacks its mirror %v", c, ch, e, m)
			}
		}
	}
}

// TestRectangleGeometry pins the rotation's direction and checks the
// fixed-point rectangle against the rectangle of exact cos and sin: they
// may differ only on chunks within 1e-6 chunk of an edge.
func TestRectangleGeometry(t *testing.T) {
	long, err := NewRectangle(RectangleSpec{RadiusX: 10, Rotation: 90})
	if err != nil {
		t.Fatal(err)
	}
	if !long.Contains(Chunk{0, 10}) || long.Contains(Chunk{10, 0}) || long.Len() != 21 {
		t.Errorf("%v: Contains(0, 10) = %v, Contains(10, 0) = %v, Len() = %d; want its X axis along +z",
			long, long.Contains(Chunk{0, 10}), long.Contains(Chunk{10, 0}), long.Len())
	}
	diag, err := NewRectangle(RectangleSpec{RadiusX: 10, Rotation: 45})
	if err != nil {
		t.Fatal(err)
	}
	if !diag.Contains(Chunk{7, 7}) || diag.Contains(Chunk{7, -7}) {
		t.Errorf("%v: Contains(7, 7) = %v, Contains(7, -7) = %v; want it along the +x+z diagonal",
			diag, diag.Contains(Chunk{7, 7}), diag.Contains(Chunk{7, -7}))
	}

	for _, sp := range []RectangleSpec{
		{RadiusX: 40, RadiusZ: 15, InnerX: 20, InnerZ: 5, Rotation: 30},
		{RadiusX: 33, RadiusZ: 33, InnerX: 10, InnerZ: 30, Rotation: 45},
		{RadiusX: 25, RadiusZ: 60, Rotation: 137.5},
		{RadiusX: 50, RadiusZ: 3, InnerX: 49, InnerZ: 3, Rotation: -71.3},
	} {
		r, err := NewRectangle(sp)
		if err != nil {
			t.Fatal(err)
		}
		th := sp.Rotation * math.Pi / 180
		cos, sin := math.Cos(th), math.Sin(th)
		b := sp.RadiusX + sp.RadiusZ + 2
		for dx := -b; dx <= b; dx++ {
			for dz := -b; dz <= b; dz++ {
				u := math.Abs(float64(dx)*cos + float64(dz)*sin)
				v := math.Abs(-float64(dx)*sin + float64(dz)*cos)
				rx, rz, ix, iz := float64(sp.RadiusX), float64(sp.RadiusZ), float64(sp.InnerX), float64(sp.InnerZ)
				ideal := u <= rx && v <= rz && !(u < ix && v < iz)
				if r.Contains(Chunk{dx, dz}) == ideal {
					continue
				}
				near := func(x, edge float64) bool { return math.Abs(x-edge) < 1e-6 }
				if !near(u, rx) && !near(v, rz) && !near(u, ix) && !near(v, iz) {
					t.Fatalf("%v: Contains(%d, %d) = %v, exact rotation says %v (u = %v, v = %v)",
						r, dx, dz, !ideal, ideal, u, v)
				}
			}
		}
	}
}
