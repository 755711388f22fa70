package mesh

import (
	"math"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// makeTile samples f(x, z) (world block coordinates) at every sample of req,
// border included, exactly where terrain.Request places them.
func makeTile(req terrain.Request, f func(x, z float64) float64) *terrain.Tile {
	side := req.Side()
	b := int(req.Border)
	h := float64(req.Size) / float64(req.Resolution)
	res := int(req.Resolution)
	t := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, side*side),
		Water:      make([]float32, res*res),
		Cover:      make([]terrain.Cover, res*res),
		Min:        float32(math.Inf(1)),
		Max:        float32(math.Inf(-1)),
	}
	for gj := range side {
		for gi := range side {
			x := float64(req.OriginX) + (float64(gi-b)+0.5)*h
			z := float64(req.OriginZ) + (float64(gj-b)+0.5)*h
			e := float32(f(x, z))
			t.Elevations[gj*side+gi] = e
			if gi >= b && gi < b+res && gj >= b && gj < b+res {
				t.Min, t.Max = min(t.Min, e), max(t.Max, e)
			}
		}
	}
	for i := range t.Water {
		t.Water[i] = float32(math.NaN())
	}
	return t
}

func hills(x, z float64) float64 {
	return 64 + 12*math.Sin(x/7.3) + 9*math.Cos(z/5.1) + 3*math.Sin((x+z)/2.9)
}

func mustBuild(t testing.TB, tile *terrain.Tile, step int) *Mesh {
	t.Helper()
	m, err := BuildStep(tile, step)
	if err != nil {
		t.Fatalf("BuildStep(%v, %d): %v", tile.Request, step, err)
	}
	return m
}

func TestBuildCounts(t *testing.T) {
	tests := []struct {
		name                string
		res, border, step   int32
		vertices, triangles int
	}{
		{"res1", 1, 0, 1, 1, 0},
		{"res2", 2, 1, 1, 4, 2},
		{"res3", 3, 0, 1, 9, 8},
		{"res16", 16, 2, 1, 256, 450},
		{"res16 low", 16, 1, 4, 25, 32},    // samples 0 4 8 12 15
		{"res17 low", 17, 1, 4, 25, 32},    // samples 0 4 8 12 16
		{"res5 low", 5, 0, 4, 4, 2},        // samples 0 4
		{"res3 low", 3, 0, 4, 4, 2},        // samples 0 2
		{"res64 step8", 64, 0, 8, 81, 128}, // samples 0 8 ... 56 63
		{"res257", 257, 1, 1, 66049, 131072},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := terrain.Request{OriginX: -48, OriginZ: 16, Size: 64, Resolution: tc.res, Border: tc.border}
			tile := makeTile(req, hills)
			if err := tile.Validate(req); err != nil {
				t.Fatalf("test tile invalid: %v", err)
			}
			m := mustBuild(t, tile, int(tc.step))
			if got := m.VertexCount(); got != tc.vertices {
				t.Errorf("VertexCount() = %d, want %d", got, tc.vertices)
			}
			if got := m.TriangleCount(); got != tc.triangles {
				t.Errorf("TriangleCount() = %d, want %d", got, tc.triangles)
			}
			wantQ := Full
			if tc.step > 1 {
				wantQ = Low
			}
			if m.Quality != wantQ {
				t.Errorf("Quality = %v, want %v", m.Quality, wantQ)
			}
			if m.OriginX != req.OriginX || m.OriginZ != req.OriginZ {
				t.Errorf("origin = %d, %d, want %d, %d", m.OriginX, m.OriginZ, req.OriginX, req.OriginZ)
			}
			if err := m.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			wantBytes := int64(4 * (3*tc.vertices + 3*tc.vertices + 3*tc.triangles))
			if got := m.Bytes(); got != wantBytes {
				t.Errorf("Bytes() = %d, want %d", got, wantBytes)
			}
			checkTrianglesFaceUp(t, m)
		})
	}
}

// checkTrianglesFaceUp checks the winding: (b-a) x (c-a) has positive y for
// every triangle of a heightfield mesh.
func checkTrianglesFaceUp(t *testing.T, m *Mesh) {
	t.Helper()
	for k := 0; k < len(m.Indices); k += 3 {
		a, b, c := m.Indices[k], m.Indices[k+1], m.Indices[k+2]
		ax, az := m.Vertices[3*a], m.Vertices[3*a+2]
		bx, bz := m.Vertices[3*b]-ax, m.Vertices[3*b+2]-az
		cx, cz := m.Vertices[3*c]-ax, m.Vertices[3*c+2]-az
		if y := bz*cx - bx*cz; y <= 0 {
			t.Fatalf("triangle %d (%d, %d, %d) faces down: cross y = %v", k/3, a, b, c, y)
		}
	}
}

func TestFlatNormalsPointUp(t *testing.T) {
	for _, border := range []int32{0, 1, 3} {
		req := terrain.Request{OriginX: 1 << 24, OriginZ: -(1 << 24), Size: 32, Resolution: 9, Border: border}
		m := mustBuild(t, makeTile(req, func(x, z float64) float64 { return 71.5 }), 1)
		for v := 0; v < len(m.Normals); v += 3 {
			if n := m.Normals[v : v+3]; n[0] != 0 || n[1] != 1 || n[2] != 0 {
				t.Fatalf("border %d: normal %d = %v, want [0 1 0]", border, v/3, n)
			}
			if y := m.Vertices[v+1]; y != 71.5 {
				t.Fatalf("border %d: vertex %d y = %v, want 71.5", border, v/3, y)
			}
		}
		if m.Bounds.Min[1] != 71.5 || m.Bounds.Max[1] != 71.5 {
			t.Errorf("border %d: y bounds %v..%v, want 71.5..71.5", border, m.Bounds.Min[1], m.Bounds.Max[1])
		}
	}
}

func TestSlopeNormals(t *testing.T) {
	tests := []struct {
		name   string
		dx, dz float64 // rise per block along x and z
		border int32
	}{
		{"x slope", 0.5, 0, 1},
		{"z slope", 0, -2, 1},
		{"diagonal", 1, 1, 2},
		{"diagonal no border", 1, -0.25, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Size/Resolution = 2.2 blocks: non-integer spacing.
			req := terrain.Request{OriginX: 100, OriginZ: 300, Size: 11, Resolution: 5, Border: tc.border}
			tile := makeTile(req, func(x, z float64) float64 { return 10 + tc.dx*x + tc.dz*z })
			m := mustBuild(t, tile, 1)
			l := math.Sqrt(tc.dx*tc.dx + 1 + tc.dz*tc.dz)
			want := [3]float64{-tc.dx / l, 1 / l, -tc.dz / l}
			for v := 0; v < len(m.Normals); v += 3 {
				for a := range 3 {
					if d := math.Abs(float64(m.Normals[v+a]) - want[a]); d > 1e-4 {
						t.Fatalf("normal %d = %v, want %v", v/3, m.Normals[v:v+3], want)
					}
				}
			}
		})
	}
}

// TestSeamNormals: with a border, the normals of two neighbouring tiles are
// those of one tile covering both, so lighting is continuous across the
// seam; without a border the edge normals are one-sided and differ.
func TestSeamNormals(t *testing.T) {
	const size, res = 32, 16
	big := mustBuild(t, makeTile(terrain.Request{OriginX: 0, OriginZ: 0, Size: 2 * size, Resolution: 2 * res, Border: 1}, hills), 1)
	for _, border := range []int32{1, 0} {
		left := mustBuild(t, makeTile(terrain.Request{OriginX: 0, OriginZ: 0, Size: size, Resolution: res, Border: border}, hills), 1)
		right := mustBuild(t, makeTile(terrain.Request{OriginX: size, OriginZ: 0, Size: size, Resolution: res, Border: border}, hills), 1)
		maxDiff := 0.0
		for j := range res {
			for _, side := range []struct {
				m     *Mesh
				i, bi int // column in the tile, column in the big tile
			}{{left, res - 1, res - 1}, {right, 0, res}} {
				v, bv := 3*(j*res+side.i), 3*(j*2*res+side.bi)
				for a := range 3 {
					maxDiff = max(maxDiff, math.Abs(float64(side.m.Normals[v+a]-big.Normals[bv+a])))
				}
			}
		}
		if border > 0 && maxDiff > 1e-6 {
			t.Errorf("border %d: seam normals differ from the joined tile's by %v, want equal", border, maxDiff)
		}
		if border == 0 && maxDiff < 1e-3 {
			t.Errorf("border 0: seam normals match the joined tile's within %v; the border test above proves nothing", maxDiff)
		}
	}
}

// TestLowSpansTile: a Low mesh covers exactly the area of the Full mesh,
// its vertices are Full vertices (same position and normal), and its
// triangles tile the area without gaps or overlaps.
func TestLowSpansTile(t *testing.T) {
	for _, res := range []int32{2, 5, 16, 17, 18, 19, 63} {
		for _, step := range []int{2, 3, 4, 7} {
			req := terrain.Request{OriginX: -5000, OriginZ: 7000, Size: 48, Resolution: res, Border: 1}
			tile := makeTile(req, hills)
			full, low := mustBuild(t, tile, 1), mustBuild(t, tile, step)
			if low.Bounds.Min[0] != full.Bounds.Min[0] || low.Bounds.Max[0] != full.Bounds.Max[0] ||
				low.Bounds.Min[2] != full.Bounds.Min[2] || low.Bounds.Max[2] != full.Bounds.Max[2] {
				t.Fatalf("res %d step %d: low bounds %v, full bounds %v", res, step, low.Bounds, full.Bounds)
			}
			byPos := map[[3]float32][3]float32{}
			for v := 0; v < len(full.Vertices); v += 3 {
				byPos[[3]float32(full.Vertices[v:v+3])] = [3]float32(full.Normals[v : v+3])
			}
			for v := 0; v < len(low.Vertices); v += 3 {
				n, ok := byPos[[3]float32(low.Vertices[v:v+3])]
				if !ok {
					t.Fatalf("res %d step %d: low vertex %v is not a full vertex", res, step, low.Vertices[v:v+3])
				}
				if n != [3]float32(low.Normals[v:v+3]) {
					t.Fatalf("res %d step %d: low normal %v, full normal %v", res, step, low.Normals[v:v+3], n)
				}
			}
			checkTrianglesFaceUp(t, low)
			ext := float64(full.Bounds.Max[0] - full.Bounds.Min[0])
			if got := projectedArea(low); math.Abs(got-ext*ext) > 1e-3*ext*ext {
				t.Errorf("res %d step %d: low triangles cover %v square blocks, want %v", res, step, got, ext*ext)
			}
		}
	}
}

func projectedArea(m *Mesh) float64 {
	var sum float64
	for k := 0; k < len(m.Indices); k += 3 {
		a, b, c := m.Indices[k], m.Indices[k+1], m.Indices[k+2]
		ax, az := float64(m.Vertices[3*a]), float64(m.Vertices[3*a+2])
		bx, bz := float64(m.Vertices[3*b])-ax, float64(m.Vertices[3*b+2])-az
		cx, cz := float64(m.Vertices[3*c])-ax, float64(m.Vertices[3*c+2])-az
		sum += math.Abs(bz*cx-bx*cz) / 2
	}
	return sum
}

func TestBuildPositions(t *testing.T) {
	req := terrain.Request{OriginX: 29_999_984, OriginZ: -29_999_984, Size: 16, Resolution: 4, Border: 0}
	m := mustBuild(t, makeTile(req, func(x, z float64) float64 { return 5 }), 1)
	// h = 4: samples at 2, 6, 10, 14 along both axes, local to the origin.
	want := []float32{2, 6, 10, 14}
	for j := range 4 {
		for i := range 4 {
			v := 3 * (j*4 + i)
			if got := m.Vertices[v : v+3]; got[0] != want[i] || got[1] != 5 || got[2] != want[j] {
				t.Errorf("vertex (%d, %d) = %v, want [%v 5 %v]", i, j, got, want[i], want[j])
			}
		}
	}
	if m.Bounds != (Bounds{Min: [3]float32{2, 5, 2}, Max: [3]float32{14, 5, 14}}) {
		t.Errorf("Bounds = %v, want {[2 5 2] [14 5 14]}", m.Bounds)
	}
}

func TestBuildErrors(t *testing.T) {
	good := terrain.Request{Size: 16, Resolution: 4, Border: 1}
	nan := makeTile(good, hills)
	nan.Elevations[3] = float32(math.NaN())
	short := makeTile(good, hills)
	short.Elevations = short.Elevations[:10]
	tests := []struct {
		name string
		tile *terrain.Tile
		q    Quality
		want string
	}{
		{"nil", nil, Full, "nil tile"},
		{"bad request", &terrain.Tile{Request: terrain.Request{Size: 0, Resolution: 4}}, Full, "size 0"},
		{"short", short, Full, "10 elevations, want 36"},
		{"nan", nan, Low, "elevation 3 is NaN"},
		{"quality", makeTile(good, hills), Quality(7), "quality(7)"},
		{"zero quality", makeTile(good, hills), 0, "quality(0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Build(tc.tile, tc.q)
			if err == nil || m != nil {
				t.Fatalf("Build = %v, %v; want an error", m, err)
			}
			if !strings.HasPrefix(err.Error(), "mesh: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build error %q, want it to start with \"mesh: \" and contain %q", err, tc.want)
			}
		})
	}
	if _, err := BuildStep(makeTile(good, hills), 0); err == nil {
		t.Error("BuildStep(step 0) succeeded, want an error")
	}
}

func TestValidate(t *testing.T) {
	base := func() *Mesh {
		return mustBuild(t, makeTile(terrain.Request{Size: 8, Resolution: 3}, hills), 1)
	}
	tests := []struct {
		name   string
		mutate func(m *Mesh)
		want   []string
	}{
		{"quality", func(m *Mesh) { m.Quality = 0 }, []string{"invalid quality(0)"}},
		{"normals", func(m *Mesh) { m.Normals = m.Normals[:3] }, []string{"3 normal components for 27"}},
		{"partial vertex", func(m *Mesh) { m.Vertices = m.Vertices[:26]; m.Normals = m.Normals[:26] }, []string{"26 vertex components"}},
		{"index range", func(m *Mesh) { m.Indices[4] = 9 }, []string{"index 4 is 9, only 9 vertices"}},
		{"partial triangle", func(m *Mesh) { m.Indices = m.Indices[:5] }, []string{"5 indices"}},
		{"nan vertex", func(m *Mesh) { m.Vertices[4] = float32(math.Inf(1)) }, []string{"vertex component 4 is +Inf", "outside bounds"}},
		{"nan normal", func(m *Mesh) { m.Normals[0] = float32(math.NaN()) }, []string{"normal component 0 is NaN"}},
		{"bounds", func(m *Mesh) { m.Bounds.Max[1] = m.Bounds.Min[1] }, []string{"axis 1 at"}},
		{"inverted bounds", func(m *Mesh) { m.Bounds.Min[0], m.Bounds.Max[0] = m.Bounds.Max[0], m.Bounds.Min[0] }, []string{"bounds axis 0"}},
		{"several", func(m *Mesh) { m.Quality = 9; m.Indices = m.Indices[:1] }, []string{"quality(9)", "1 indices"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			if err := m.Validate(); err != nil {
				t.Fatalf("base mesh: %v", err)
			}
			tc.mutate(m)
			err := m.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	if err := (*Mesh)(nil).Validate(); err == nil {
		t.Error("nil Validate() = nil, want an error")
	}
	if err := (&Mesh{Quality: Full}).Validate(); err != nil {
		t.Errorf("empty mesh Validate() = %v, want nil", err)
	}
}
