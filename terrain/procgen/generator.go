package procgen

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/rtpengine/rtp/terrain"
)

// Request limits beyond terrain.Request.Validate.
const (
	// MaxCoordinate bounds |x| and |z| of every block a request or column
	// query touches (the tile, not its border). Minecraft worlds end at
	// 30 million; the bound keeps sample positions exact.
	MaxCoordinate = 1 << 32
	// MaxSpan bounds a request's Size, and twice MaxSpan bounds the square
	// its samples cover, border included (Size*Side/Resolution). A request
	// touches up to about (extent/1024 + 1)^2 drainage cells, each some
	// milliseconds of work, so the largest legal requests take minutes;
	// they honour ctx throughout.
	MaxSpan = 1 << 16
)

// DefaultCacheCells is the default number of drainage cells a Generator
// keeps in memory (about 200 KB each).
const DefaultCacheCells = 48

// Options tune a Generator without changing its output.
type Options struct {
	// CacheCells is how many drainage cells stay cached. Default
	// DefaultCacheCells when <= 0.
	CacheCells int
}

// Generator is the procedural world: a terrain.Source whose every sample is
// a pure function of its Params and the sample's world position.
//
// Create one with New; the zero value is not usable. A Generator is safe
// for concurrent use; concurrent requests that need the same drainage cell
// compute it once.
type Generator struct {
	params Params
	f      *field
	cells  *cellCache
}

var _ terrain.Source = (*Generator)(nil)

// New returns a generator for p with default options.
func New(p Params) (*Generator, error) { return NewWithOptions(p, Options{}) }

// NewWithOptions returns a generator for p. It fails when p is invalid.
func NewWithOptions(p Params, o Options) (*Generator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if o.CacheCells <= 0 {
		o.CacheCells = DefaultCacheCells
	}
	g := &Generator{params: p, f: newField(p)}
	g.cells = newCellCache(o.CacheCells, func(ctx context.Context, k cellKey) (*cell, error) {
		return computeCell(ctx, g.f, k.x, k.z)
	})
	return g, nil
}

// Producer returns procgen@Version.
func (g *Generator) Producer() terrain.Producer {
	return terrain.Producer{Name: "procgen", Version: Version}
}

// Params returns the generator's Params value.
func (g *Generator) Params() any { return g.params }

// ErrOutOfRange is wrapped by errors for requests or columns beyond
// MaxCoordinate or MaxSpan.
var ErrOutOfRange = errors.New("procgen: out of range")

func checkRequest(req terrain.Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	var errs []error
	if req.Size > MaxSpan {
		errs = append(errs, fmt.Errorf("%w: size %d above %d", ErrOutOfRange, req.Size, MaxSpan))
	}
	if ext := int64(req.Size) * int64(req.Side()) / int64(req.Resolution); ext > 2*MaxSpan {
		errs = append(errs, fmt.Errorf("%w: samples cover %d blocks with the border, above %d", ErrOutOfRange, ext, 2*MaxSpan))
	}
	for _, o := range [...]struct {
		name string
		v    int64
	}{{"x", req.OriginX}, {"z", req.OriginZ}} {
		if o.v < -MaxCoordinate || o.v > MaxCoordinate-int64(req.Size) {
			errs = append(errs, fmt.Errorf("%w: origin %s %d puts the tile beyond ±%d", ErrOutOfRange, o.name, o.v, int64(MaxCoordinate)))
		}
	}
	return errors.Join(errs...)
}

// samplePos returns the world coordinate of sample i (negative or beyond
// res-1 for border samples) of a tile at origin with the given size and
// resolution: origin + (i+0.5)*size/res. The numerator is exact in int64
// and the one division is correctly rounded, so two requests that place a
// sample at the same rational position get the same float64, bit for bit.
func samplePos(origin int64, i int, size, res int32) float64 {
	num := origin*2*int64(res) + int64(2*i+1)*int64(size)
	return float64(num) / float64(2*int64(res))
}

// Tile generates the tile for req. See terrain.Source for the contract.
func (g *Generator) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	return g.tile(ctx, req, true)
}

// tile generates the tile for req, with the drainage (rivers, lakes and
// their carving) when drain is true.
func (g *Generator) tile(ctx context.Context, req terrain.Request, drain bool) (*terrain.Tile, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	side, res, b := req.Side(), int(req.Resolution), int(req.Border)
	t := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, side*side),
		Water:      make([]float32, res*res),
		Cover:      make([]terrain.Cover, res*res),
	}
	xs := make([]float64, side)
	zs := make([]float64, side)
	for i := range side {
		xs[i] = samplePos(req.OriginX, i-b, req.Size, req.Resolution)
		zs[i] = samplePos(req.OriginZ, i-b, req.Size, req.Resolution)
	}
	var cs *cellSet
	if drain {
		cs = &cellSet{g: g}
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for j := range side {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		inRows := j >= b && j < b+res
		for i := range side {
			interior := inRows && i >= b && i < b+res
			s, err := g.sample(ctx, cs, xs[i], zs[j], interior)
			if err != nil {
				return nil, err
			}
			t.Elevations[j*side+i] = s.Elevation
			if interior {
				k := (j-b)*res + i - b
				t.Water[k] = s.Water
				t.Cover[k] = s.Cover
				lo, hi = min(lo, s.Elevation), max(hi, s.Elevation)
			}
		}
	}
	t.Min, t.Max = lo, hi
	return t, nil
}

// dry is the NaN stored for dry samples: one fixed bit pattern (the
// canonical quiet NaN), so tiles hash identically on every platform.
var dry = math.Float32frombits(0x7fc00000)

// Column is the surface at one block column.
type Column struct {
	// Elevation is the ground (or, without SeabedClamp, the water surface
	// where higher), as in Tile.Elevations.
	Elevation float32
	// Water is the water surface, NaN where dry, as in Tile.Water.
	Water float32
	Cover terrain.Cover
}

// Wet reports whether the column is under water.
func (c Column) Wet() bool { return !math.IsNaN(float64(c.Water)) }

// Column samples block column (x, z) at its centre (x+0.5, z+0.5): the
// same values a tile reports for a sample that falls on that centre.
func (g *Generator) Column(ctx context.Context, x, z int64) (Column, error) {
	var errs []error
	if x < -MaxCoordinate || x >= MaxCoordinate {
		errs = append(errs, fmt.Errorf("%w: x %d beyond ±%d", ErrOutOfRange, x, int64(MaxCoordinate)))
	}
	if z < -MaxCoordinate || z >= MaxCoordinate {
		errs = append(errs, fmt.Errorf("%w: z %d beyond ±%d", ErrOutOfRange, z, int64(MaxCoordinate)))
	}
	if err := errors.Join(errs...); err != nil {
		return Column{}, err
	}
	if err := ctx.Err(); err != nil {
		return Column{}, err
	}
	cs := cellSet{g: g}
	return g.sample(ctx, &cs, float64(x)+0.5, float64(z)+0.5, true)
}

// cellSet remembers the drainage cells one call has fetched, so a tile
// takes the cache lock once per cell rather than once per sample. It holds
// at most maxHeld cells so huge sparse requests stay bounded in memory.
type cellSet struct {
	g    *Generator
	held map[cellKey]*cell
	last cellKey
	lc   *cell
}

const maxHeld = 16

func (cs *cellSet) get(ctx context.Context, k cellKey) (*cell, error) {
	if cs.lc != nil && cs.last == k {
		return cs.lc, nil
	}
	c, ok := cs.held[k]
	if !ok {
		var err error
		if c, err = cs.g.cells.get(ctx, k); err != nil {
			return nil, err
		}
		if cs.held == nil || len(cs.held) >= maxHeld {
			cs.held = make(map[cellKey]*cell, maxHeld)
		}
		cs.held[k] = c
	}
	cs.last, cs.lc = k, c
	return c, nil
}

// axisCells returns the drainage cells along one axis whose fields blend
// at coordinate v, lower cell first, with their weights. Within blendHalf
// of a cell edge both neighbours contribute, weighted by a smoothstep of
// the distance to that edge; the formula depends only on v and the edge,
// so both sides of an edge agree.
func axisCells(v float64) (c [2]int64, w [2]float64, n int) {
	ci := int64(math.Floor(v / cellSize))
	edge := float64(ci * cellSize)
	d := v - edge
	switch {
	case d < blendHalf:
		t := smoothstep(float64(d+blendHalf) / (2 * blendHalf))
		return [2]int64{ci - 1, ci}, [2]float64{1 - t, t}, 2
	case d > cellSize-blendHalf:
		d = v - float64((ci+1)*cellSize)
		t := smoothstep(float64(d+blendHalf) / (2 * blendHalf))
		return [2]int64{ci, ci + 1}, [2]float64{1 - t, t}, 2
	default:
		return [2]int64{ci, 0}, [2]float64{1, 0}, 1
	}
}

// drainageAt blends the drainage fields of the cells around (x, z).
//
// The fields are read at a slightly warped position (a few blocks, varying
// over tens of blocks) so channels traced on the node grid meander instead
// of running along its rows and diagonals.
func (g *Generator) drainageAt(ctx context.Context, cs *cellSet, x, z float64) (fields, error) {
	x += float64(gradientNoise(g.f.seed.meanderX, float64(x*meanderFreq), float64(z*meanderFreq)) * meanderAmp)
	z += float64(gradientNoise(g.f.seed.meanderZ, float64(x*meanderFreq), float64(z*meanderFreq)) * meanderAmp)
	cx, wx, nx := axisCells(x)
	cz, wz, nz := axisCells(z)
	var out fields
	for b := range nz {
		for a := range nx {
			w := float64(wx[a] * wz[b])
			if w == 0 {
				continue
			}
			c, err := cs.get(ctx, cellKey{cx[a], cz[b]})
			if err != nil {
				return fields{}, err
			}
			f := c.lookup(x, z)
			if w == 1 {
				return f, nil
			}
			out.carve += float64(w * f.carve)
			out.water += float64(w * f.water)
			out.river += float64(w * f.river)
			out.lake += float64(w * f.lake)
		}
	}
	return out, nil
}

// sample evaluates the surface at (x, z). Border samples (full false) need
// only the elevation. A nil cs leaves the drainage out (see Relief).
func (g *Generator) sample(ctx context.Context, cs *cellSet, x, z float64, full bool) (Column, error) {
	f := g.f
	b := f.at(x, z)
	var dr fields
	if cs != nil {
		var err error
		if dr, err = g.drainageAt(ctx, cs, x, z); err != nil {
			return Column{}, err
		}
	}
	ground := clampY(b.h - dr.carve)
	surface := math.NaN()
	var cover terrain.Cover
	switch {
	case dr.water > ground && dr.water > f.sea:
		// A river or lake; its bed may dip below sea level.
		surface, cover = dr.water, terrain.CoverRiver
		if dr.lake >= dr.river {
			cover = terrain.CoverLake
		}
	case ground < f.sea:
		surface, cover = f.sea, terrain.CoverOcean
	case full:
		// Slope from forward differences of the undrained ground, one
		// block apart: a property of this position alone.
		sx := f.height(x+1, z) - b.h
		sz := f.height(x, z+1) - b.h
		slope := math.Sqrt(float64(sx*sx) + float64(sz*sz))
		temp, moist := f.climate(x, z, ground)
		// Fine jitter frays the edges between biomes.
		moist += float64(fbm(f.seed.jitter, x, z, jitterFreq, 2) * jitterAmp)
		cover = f.landCover(ground, b, slope, temp, moist)
	}
	col := Column{Elevation: float32(ground), Water: dry, Cover: cover}
	if !math.IsNaN(surface) {
		if g.params.SeabedClamp {
			col.Water = float32(surface)
		} else {
			col.Elevation = float32(max(ground, surface))
		}
	}
	return col, nil
}
