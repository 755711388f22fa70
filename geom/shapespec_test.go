package geom

import (
	"math"
	"strings"
	"testing"
)

// TestShapeSpecBuild: Build converts blocks to chunks (outer radii round
// down, inner radii up, the centre is the chunk holding the centre
// block), uses only its kind's fields, and refuses what the kind's
// constructor refuses and an unknown kind.
func TestShapeSpecBuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  ShapeSpec
		build func() (Shape, error)
	}{
		{"circle 4096", ShapeSpec{Kind: ShapeCircle, Radius: 4096}, func() (Shape, error) { return NewCircle(Chunk{}, 256, 0) }},
		// Block -1 is in chunk -1; 100 blocks round down to 6 chunks,
		// an inner 17 up to 2.
		{"circle off centre", ShapeSpec{Kind: ShapeCircle, CenterX: -1, CenterZ: 31, Radius: 100, Inner: 17, RadiusX: 999, InnerX: 5},
			func() (Shape, error) { return NewCircle(Chunk{X: -1, Z: 1}, 6, 2) }},
		{"square", ShapeSpec{Kind: ShapeSquare, CenterX: 160, CenterZ: -161, Radius: 47, Inner: 16, Rotation: 45},
			func() (Shape, error) { return NewSquare(Chunk{X: 10, Z: -11}, 2, 1) }},
		{"rectangle", ShapeSpec{Kind: ShapeRectangle, Radius: 7, Inner: 3, RadiusX: 320, RadiusZ: 100, InnerX: 1, InnerZ: 48, Rotation: 30},
			func() (Shape, error) {
				return NewRectangle(RectangleSpec{RadiusX: 20, RadiusZ: 6, InnerX: 1, InnerZ: 3, Rotation: 30})
			}},
		{"radius below a chunk", ShapeSpec{Kind: ShapeSquare, Radius: 15}, func() (Shape, error) { return NewSquare(Chunk{}, 0, 0) }},
	} {
		got, err := tc.spec.Build()
		if err != nil {
			t.Errorf("%s: Build(%+v) = %v", tc.name, tc.spec, err)
			continue
		}
		want, err := tc.build()
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || got.Len() != want.Len() {
			t.Errorf("%s: Build(%+v) = %v (%d chunks), want %v (%d chunks)", tc.name, tc.spec, got, got.Len(), want, want.Len())
		}
	}
	for _, tc := range []struct {
		name string
		spec ShapeSpec
		want []string // parts of the error
	}{
		{"zero value", ShapeSpec{}, []string{`geom: unknown shape kind ""`}},
		{"unknown kind", ShapeSpec{Kind: "hexagon", Radius: 10}, []string{`geom: unknown shape kind "hexagon"`}},
		{"every problem", ShapeSpec{Kind: ShapeCircle, CenterX: (MaxCenter + 1) << ChunkShift, Radius: -16, Inner: -17},
			[]string{"center", "radius -1", "inner radius -1"}},
		{"hole too big", ShapeSpec{Kind: ShapeSquare, Radius: 32, Inner: 33}, []string{"inner radius 3 exceeds radius 2"}},
		{"rectangle rotation", ShapeSpec{Kind: ShapeRectangle, RadiusX: 16, RadiusZ: 16, Rotation: math.NaN()}, []string{"rotation NaN"}},
	} {
		s, err := tc.spec.Build()
		if err == nil {
			t.Errorf("%s: Build(%+v) = %v, want an error", tc.name, tc.spec, s)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Build(%+v) = %v, want it to hold %q", tc.name, tc.spec, err, w)
			}
		}
	}
}

func TestBlocksToChunks(t *testing.T) {
	for _, tc := range []struct{ blocks, outer, inner int64 }{
		{0, 0, 0}, {1, 0, 1}, {15, 0, 1}, {16, 1, 1}, {17, 1, 2}, {100, 6, 7}, {4096, 256, 256},
		{-1, -1, 0}, {-16, -1, -1}, {-17, -2, -1},
		{math.MaxInt64, math.MaxInt64 >> 4, math.MaxInt64>>4 + 1},
	} {
		if got := OuterChunks(tc.blocks); got != tc.outer {
			t.Errorf("OuterChunks(%d) = %d, want %d", tc.blocks, got, tc.outer)
		}
		if got := InnerChunks(tc.blocks); got != tc.inner {
			t.Errorf("InnerChunks(%d) = %d, want %d", tc.blocks, got, tc.inner)
		}
	}
}

// FuzzShapeSpecBuild: Build never panics, and either refuses a spec with
// a geom error or returns a shape whose centre chunk is Center's. Radii
// that would be accepted are folded below 97 chunks so each input stays
// fast.
func FuzzShapeSpecBuild(f *testing.F) {
	f.Add("circle", int64(0), int64(0), int64(4096), int64(0), int64(0), int64(0), int64(0), int64(0), 0.0)
	f.Add("square", int64(-17), int64(31), int64(100), int64(17), int64(0), int64(0), int64(0), int64(0), 0.0)
	f.Add("rectangle", int64(5), int64(5), int64(0), int64(0), int64(320), int64(100), int64(1), int64(48), 30.0)
	f.Add("", int64(math.MinInt64), int64(math.MaxInt64), int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), math.Inf(1))
	f.Fuzz(func(t *testing.T, kind string, cx, cz, r, in, rx, rz, ix, iz int64, rot float64) {
		fold := func(v int64) int64 {
			if v < 0 || v > MaxRadius<<ChunkShift {
				return v
			}
			return v % (97 << ChunkShift)
		}
		s := ShapeSpec{Kind: kind, CenterX: cx, CenterZ: cz, Radius: fold(r), Inner: fold(in),
			RadiusX: fold(rx), RadiusZ: fold(rz), InnerX: fold(ix), InnerZ: fold(iz), Rotation: rot}
		sh, err := s.Build()
		if err != nil {
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, "geom: ") {
					t.Fatalf("error line %q lacks the package prefix", line)
				}
			}
			return
		}
		if c, ok := sh.(interface{ Center() Chunk }); ok && c.Center() != s.Center() {
			t.Fatalf("Build(%+v) is centred on %v, want %v", s, c.Center(), s.Center())
		}
	})
}
