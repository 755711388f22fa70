package mesh

import (
	"errors"
	"fmt"
	"math"
)

// Quality says how a mesh samples its tile. The zero value is not a valid
// quality. The numeric values are stored in encoded meshes and are stable.
type Quality uint8

// Qualities.
const (
	Full Quality = 1 // one vertex per interior sample
	Low  Quality = 2 // decimated fallback
)

// Valid reports whether q is Full or Low.
func (q Quality) Valid() bool { return q == Full || q == Low }

func (q Quality) String() string {
	switch q {
	case Full:
		return "full"
	case Low:
		return "low"
	}
	return fmt.Sprintf("quality(%d)", uint8(q))
}

// Bounds is an axis-aligned box in the mesh's local block coordinates.
// Min and Max hold x, y, z.
type Bounds struct {
	Min, Max [3]float32
}

// Mesh is an indexed triangle mesh of one terrain tile.
//
// The zero value is an empty mesh with no triangles. A Mesh is a plain value
// with no internal synchronization: once it is shared (with a cache, a
// renderer, an encoder), nobody may modify it, and then it is safe for
// concurrent reads.
type Mesh struct {
	Quality Quality
	// OriginX and OriginZ are the block coordinates of the tile's minimum
	// corner; vertex positions are relative to them.
	OriginX, OriginZ int64
	// Vertices holds x, y, z per vertex, in blocks, relative to the origin.
	Vertices []float32
	// Normals holds a unit normal x, y, z per vertex.
	Normals []float32
	// Indices holds three vertex indices per triangle, counter-clockwise
	// seen from the side the normals face.
	Indices []uint32
	// Bounds encloses every vertex.
	Bounds Bounds
}

// VertexCount returns len(Vertices)/3.
func (m *Mesh) VertexCount() int {
	if m == nil {
		return 0
	}
	return len(m.Vertices) / 3
}

// TriangleCount returns len(Indices)/3.
func (m *Mesh) TriangleCount() int {
	if m == nil {
		return 0
	}
	return len(m.Indices) / 3
}

// Bytes estimates the memory m retains: the lengths of its slices times
// their element sizes. It ignores the fixed-size struct itself and any
// unused slice capacity (Build and Decode allocate exact lengths).
func (m *Mesh) Bytes() int64 {
	if m == nil {
		return 0
	}
	return 4*int64(len(m.Vertices)) + 4*int64(len(m.Normals)) + 4*int64(len(m.Indices))
}

// MaxVertices is the largest vertex count a mesh may have: indices are
// uint32 and the encoding stores the count in 32 bits.
const MaxVertices = math.MaxUint32

// Validate reports every structural problem with m at once: a quality other
// than Full or Low, slice lengths that are not whole vertices or triangles,
// normals that do not match the vertices, non-finite values, indices out of
// range, and bounds that do not enclose the vertices.
func (m *Mesh) Validate() error {
	if m == nil {
		return errors.New("mesh: nil mesh")
	}
	var errs []error
	if !m.Quality.Valid() {
		errs = append(errs, fmt.Errorf("mesh: invalid %v", m.Quality))
	}
	if len(m.Vertices)%3 != 0 {
		errs = append(errs, fmt.Errorf("mesh: %d vertex components, not a multiple of 3", len(m.Vertices)))
	}
	if len(m.Normals) != len(m.Vertices) {
		errs = append(errs, fmt.Errorf("mesh: %d normal components for %d vertex components", len(m.Normals), len(m.Vertices)))
	}
	if len(m.Indices)%3 != 0 {
		errs = append(errs, fmt.Errorf("mesh: %d indices, not a multiple of 3", len(m.Indices)))
	}
	nv := len(m.Vertices) / 3
	if uint64(nv) > MaxVertices {
		errs = append(errs, fmt.Errorf("mesh: %d vertices, more than %d", nv, uint64(MaxVertices)))
	}
	if i := firstNonFinite(m.Vertices); i >= 0 {
		errs = append(errs, fmt.Errorf("mesh: vertex component %d is %v", i, m.Vertices[i]))
	}
	if i := firstNonFinite(m.Normals); i >= 0 {
		errs = append(errs, fmt.Errorf("mesh: normal component %d is %v", i, m.Normals[i]))
	}
	for i, ix := range m.Indices {
		if uint64(ix) >= uint64(nv) {
			errs = append(errs, fmt.Errorf("mesh: index %d is %d, only %d vertices", i, ix, nv))
			break
		}
	}
	for a := range 3 {
		lo, hi := m.Bounds.Min[a], m.Bounds.Max[a]
		if !finite(lo) || !finite(hi) || lo > hi {
			errs = append(errs, fmt.Errorf("mesh: bounds axis %d is %v..%v", a, lo, hi))
			continue
		}
		for v := a; v < nv*3; v += 3 {
			if x := m.Vertices[v]; x < lo || x > hi {
				errs = append(errs, fmt.Errorf("mesh: vertex %d axis %d at %v, outside bounds %v..%v", v/3, a, x, lo, hi))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func finite(f float32) bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// firstNonFinite returns the index of the first NaN or infinity in s, or -1.
func firstNonFinite(s []float32) int {
	for i, f := range s {
		if !finite(f) {
			return i
		}
	}
	return -1
}
