package terrain

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Request asks for one square heightfield tile.
//
// The tile covers blocks [OriginX, OriginX+Size) x [OriginZ, OriginZ+Size),
// sampled at Resolution x Resolution interior points (sample i sits at
// OriginX + (i+0.5)*Size/Resolution), plus Border extra samples on every side
// with the same spacing (used for normals and seams).
//
// The zero value is not a valid request; see Validate.
type Request struct {
	OriginX    int64 // block x of the tile's minimum corner
	OriginZ    int64 // block z of the tile's minimum corner
	Size       int32 // tile edge in blocks, > 0
	Resolution int32 // interior samples per side, > 0
	Border     int32 // extra samples on each side, >= 0
}

// Limits that keep one request's memory bounded.
const (
	MaxResolution = 4096
	MaxBorder     = 64
)

// Side returns the number of elevation samples per side, Resolution+2*Border.
func (r Request) Side() int { return int(r.Resolution) + 2*int(r.Border) }

// Validate reports every problem with r at once.
func (r Request) Validate() error {
	var errs []error
	if r.Size <= 0 {
		errs = append(errs, fmt.Errorf("terrain: size %d must be positive", r.Size))
	}
	if r.Resolution <= 0 || r.Resolution > MaxResolution {
		errs = append(errs, fmt.Errorf("terrain: resolution %d outside [1, %d]", r.Resolution, MaxResolution))
	}
	if r.Border < 0 || r.Border > MaxBorder {
		errs = append(errs, fmt.Errorf("terrain: border %d outside [0, %d]", r.Border, MaxBorder))
	}
	return errors.Join(errs...)
}

func (r Request) String() string {
	return fmt.Sprintf("tile(x=%d z=%d size=%d res=%d border=%d)", r.OriginX, r.OriginZ, r.Size, r.Resolution, r.Border)
}

// Cover classifies the surface at one sample. The values are stable: they
// are stored in archived tiles and drawn by renderers.
type Cover uint8

// Surface covers. Unsafe covers are those a player must not land on.
const (
	CoverOcean Cover = iota
	CoverBeach
	CoverPlains
	CoverForest
	CoverDesert
	CoverMountains
	CoverSnow
	CoverSwamp
	CoverVolcanic // volcanic rock; still solid ground
	CoverLava
	CoverRiver
	CoverLake
	numCovers
)

var coverNames = [numCovers]string{
	"ocean", "beach", "plains", "forest", "desert", "mountains",
	"snow", "swamp", "volcanic", "lava", "river", "lake",
}

// NumCovers is the number of defined covers; every valid Cover is below it.
const NumCovers = int(numCovers)

func (c Cover) String() string {
	if int(c) < len(coverNames) {
		return coverNames[c]
	}
	return fmt.Sprintf("cover(%d)", uint8(c))
}

// Tile is one generated heightfield.
type Tile struct {
	Request Request
	// Elevations holds Side()*Side() samples, row-major (z outer, x inner),
	// border included. Every value is finite.
	Elevations []float32
	// Water holds Resolution*Resolution interior samples: the water surface
	// height where the sample is under water, NaN where it is dry.
	Water []float32
	// Cover holds Resolution*Resolution interior surface covers.
	Cover []Cover
	// Min and Max are the extrema of the interior elevations.
	Min, Max float32
}

// Interior returns the elevation of interior sample (i, j), 0 <= i, j < Resolution.
func (t *Tile) Interior(i, j int) float32 {
	b := int(t.Request.Border)
	return t.Elevations[(j+b)*t.Request.Side()+i+b]
}

// ErrInvalidTile is wrapped by every validation failure.
var ErrInvalidTile = errors.New("terrain: invalid tile")

// Validate checks t completely against req: request equality, array lengths,
// finite elevations, finite-or-NaN water, known covers and recomputed extrema.
func (t *Tile) Validate(req Request) error {
	if t == nil {
		return fmt.Errorf("%w: nil", ErrInvalidTile)
	}
	if t.Request != req {
		return fmt.Errorf("%w: request %v, want %v", ErrInvalidTile, t.Request, req)
	}
	side := req.Side()
	res := int(req.Resolution)
	if len(t.Elevations) != side*side {
		return fmt.Errorf("%w: %d elevations, want %d", ErrInvalidTile, len(t.Elevations), side*side)
	}
	if len(t.Water) != res*res {
		return fmt.Errorf("%w: %d water samples, want %d", ErrInvalidTile, len(t.Water), res*res)
	}
	if len(t.Cover) != res*res {
		return fmt.Errorf("%w: %d cover samples, want %d", ErrInvalidTile, len(t.Cover), res*res)
	}
	for i, e := range t.Elevations {
		if math.IsNaN(float64(e)) || math.IsInf(float64(e), 0) {
			return fmt.Errorf("%w: elevation %d is %v", ErrInvalidTile, i, e)
		}
	}
	for i, w := range t.Water {
		if math.IsInf(float64(w), 0) {
			return fmt.Errorf("%w: water %d is %v", ErrInvalidTile, i, w)
		}
	}
	for i, c := range t.Cover {
		if c >= numCovers {
			return fmt.Errorf("%w: cover %d is %d", ErrInvalidTile, i, c)
		}
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	b := int(req.Border)
	for j := 0; j < res; j++ {
		row := t.Elevations[(j+b)*side+b : (j+b)*side+b+res]
		for _, e := range row {
			lo = min(lo, e)
			hi = max(hi, e)
		}
	}
	if lo != t.Min || hi != t.Max {
		return fmt.Errorf("%w: extrema %v..%v, recomputed %v..%v", ErrInvalidTile, t.Min, t.Max, lo, hi)
	}
	return nil
}

// Producer names whatever computed a tile: a namespace and the version of
// its arithmetic, written "name@version". Tiles from different producers or
// versions never stand in for each other.
type Producer struct {
	Name    string
	Version string
}

func (p Producer) String() string { return p.Name + "@" + p.Version }

// Source produces tiles.
//
// Tile returns a new tile the caller may keep but must not modify, or an
// error: the request's own validation error, ctx.Err() when ctx ends first,
// or a producer failure. Implementations are safe for concurrent use.
//
// Producer and Params identify the arithmetic: two sources with equal
// Producer and equal Params return identical tiles for identical requests.
// Params returns a struct value (not a pointer) whose exported fields are
// all the parameters that change the output; caches derive identity from it
// by reflection, so adding a field changes identity without a hand-kept list.
type Source interface {
	Producer() Producer
	Params() any
	Tile(ctx context.Context, req Request) (*Tile, error)
}
