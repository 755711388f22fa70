package mesh

import (
	"errors"
	"fmt"
	"math"

	"github.com/rtpengine/rtp/terrain"
)

// LowStep is the sample stride of Build(t, Low): a Low mesh keeps about one
// sample in LowStep along each axis, so roughly 1/16 of the vertices.
const LowStep = 4

// Build returns the mesh of t at quality q: Full keeps every interior
// sample, Low keeps every LowStep-th one (see BuildStep).
//
// t must be well formed: a valid request, Side()*Side() finite elevations.
// Water and Cover are not used. The returned mesh shares no memory with t.
func Build(t *terrain.Tile, q Quality) (*Mesh, error) {
	switch q {
	case Full:
		return BuildStep(t, 1)
	case Low:
		return BuildStep(t, LowStep)
	}
	return nil, fmt.Errorf("mesh: cannot build a mesh of %v", q)
}

// BuildStep returns the mesh of t keeping interior samples 0, step, 2*step,
// ... along each axis, plus the last sample when the stride skips it, so the
// mesh always spans the same area as the Full mesh. Step 1 gives a Full
// mesh, any larger step a Low one. Normals are the Full normals of the kept
// samples, so they do not change when a renderer switches quality.
func BuildStep(t *terrain.Tile, step int) (*Mesh, error) {
	if err := checkTile(t); err != nil {
		return nil, err
	}
	if step < 1 {
		return nil, fmt.Errorf("mesh: step %d must be at least 1", step)
	}
	req := t.Request
	res := int(req.Resolution)
	border := int(req.Border)
	side := req.Side()
	h := float64(req.Size) / float64(res)

	keep := keptSamples(res, step)
	n := len(keep)
	coord := make([]float32, n) // local x (and z) of each kept sample
	for k, i := range keep {
		coord[k] = float32((float64(i) + 0.5) * h)
	}

	m := &Mesh{
		Quality:  Full,
		OriginX:  req.OriginX,
		OriginZ:  req.OriginZ,
		Vertices: make([]float32, 3*n*n),
		Normals:  make([]float32, 3*n*n),
		Indices:  make([]uint32, 6*(n-1)*(n-1)),
	}
	if step > 1 {
		m.Quality = Low
	}

	e := t.Elevations
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	v := 0
	for kj, j := range keep {
		gj := j + border
		// Neighbour rows for the z difference: the border when present,
		// else the sample itself (a one-sided difference).
		up, dn := max(gj-1, 0), min(gj+1, side-1)
		for ki, i := range keep {
			gi := i + border
			y := e[gj*side+gi]
			lo, hi = min(lo, y), max(hi, y)
			m.Vertices[v] = coord[ki]
			m.Vertices[v+1] = y
			m.Vertices[v+2] = coord[kj]

			left, right := max(gi-1, 0), min(gi+1, side-1)
			var dx, dz float64
			if right > left {
				dx = (float64(e[gj*side+right]) - float64(e[gj*side+left])) / (float64(right-left) * h)
			}
			if dn > up {
				dz = (float64(e[dn*side+gi]) - float64(e[up*side+gi])) / (float64(dn-up) * h)
			}
			// The surface y = f(x, z) has normal (-df/dx, 1, -df/dz).
			inv := 1 / math.Sqrt(dx*dx+1+dz*dz)
			m.Normals[v] = float32(-dx * inv)
			m.Normals[v+1] = float32(inv)
			m.Normals[v+2] = float32(-dz * inv)
			v += 3
		}
	}

	x := 0
	for kj := 0; kj+1 < n; kj++ {
		for ki := 0; ki+1 < n; ki++ {
			v00 := uint32(kj*n + ki)
			v10 := v00 + 1
			v01 := v00 + uint32(n)
			v11 := v01 + 1
			// (v00, v01, v10) and (v10, v01, v11): counter-clockwise seen
			// from +y, i.e. (b-a) x (c-a) points up.
			m.Indices[x+0], m.Indices[x+1], m.Indices[x+2] = v00, v01, v10
			m.Indices[x+3], m.Indices[x+4], m.Indices[x+5] = v10, v01, v11
			x += 6
		}
	}

	m.Bounds = Bounds{
		Min: [3]float32{coord[0], lo, coord[0]},
		Max: [3]float32{coord[n-1], hi, coord[n-1]},
	}
	return m, nil
}

// keptSamples returns the interior sample indices a mesh of stride step
// keeps: 0, step, 2*step, ... and res-1.
func keptSamples(res, step int) []int {
	keep := make([]int, 0, (res-1)/step+2)
	for i := 0; i < res-1; i += step {
		keep = append(keep, i)
	}
	return append(keep, res-1)
}

// checkTile reports whether t has what a mesh needs: a valid request and
// Side()*Side() finite elevations.
func checkTile(t *terrain.Tile) error {
	if t == nil {
		return errors.New("mesh: nil tile")
	}
	if err := t.Request.Validate(); err != nil {
		return fmt.Errorf("mesh: %w", err)
	}
	side := t.Request.Side()
	if len(t.Elevations) != side*side {
		return fmt.Errorf("mesh: tile %v has %d elevations, want %d", t.Request, len(t.Elevations), side*side)
	}
	if i := firstNonFinite(t.Elevations); i >= 0 {
		return fmt.Errorf("mesh: tile %v elevation %d is %v", t.Request, i, t.Elevations[i])
	}
	return nil
}
