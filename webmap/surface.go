package webmap

import (
	"context"
	"fmt"
	"math"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// SurfaceProducer names what draws a world without a heightfield of its
// own (a Minecraft save) for the map: the column summaries of its chunks
// (SurfaceTile and the block renderer). It is the World.Producer of such
// worlds, and so part of their tiles' keys: change its version when they
// would draw a save differently.
const SurfaceProducer = "anvil-surface@1"

// SurfaceTile builds the heightfield tile of req from column summaries, for
// worlds without a heightfield of their own (Minecraft saves): sample
// (i, j), border included, is the column at block
// (OriginX + floor((i+0.5)*Size/Resolution), same for z), its elevation the
// top face of its top block (Top+1). Fluid columns are water (lava for
// lava) at that height; other covers are plains. Columns of chunks summary
// reports ungenerated or outside take the lowest elevation found, so holes
// stay flat; when no sample has terrain it returns an error wrapping
// world.ErrUngenerated. Each chunk is read once.
func SurfaceTile(ctx context.Context, summary func(context.Context, geom.Chunk) (*world.Chunk, error), req terrain.Request) (*terrain.Tile, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	side, res, bd := req.Side(), int(req.Resolution), int(req.Border)
	// Block offset of each sample along an axis, border included.
	offs := make([]int64, side)
	for k := range side {
		i := k - bd
		offs[k] = int64(math.Floor((float64(i) + 0.5) * float64(req.Size) / float64(res)))
	}
	chunks := map[geom.Chunk]*world.Chunk{}
	get := func(c geom.Chunk) (*world.Chunk, error) {
		if ch, ok := chunks[c]; ok {
			return ch, nil
		}
		ch, err := summary(ctx, c)
		if err != nil {
			if !Ungenerated(err) {
				return nil, err
			}
			ch = nil
		}
		chunks[c] = ch
		return ch, nil
	}
	t := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, side*side),
		Water:      make([]float32, res*res),
		Cover:      make([]terrain.Cover, res*res),
	}
	present := make([]bool, side*side)
	fluid := make([]bool, side*side)
	lava := make([]bool, side*side)
	lowest := float32(math.Inf(1))
	for kz := range side {
		bz := req.OriginZ + offs[kz]
		for kx := range side {
			b := geom.Block{X: req.OriginX + offs[kx], Z: bz}
			ch, err := get(b.Chunk())
			if err != nil {
				return nil, fmt.Errorf("webmap: surface of %v: %w", req, err)
			}
			if ch == nil {
				continue
			}
			x, z := b.Local()
			col := ch.Column(x, z)
			if col.Top == world.NoTop {
				continue
			}
			k := kz*side + kx
			e := float32(col.Top) + 1
			t.Elevations[k], present[k], fluid[k] = e, true, col.Fluid
			lava[k] = col.Fluid && BlockColor(col.Ground.String()) == lavaColor
			lowest = min(lowest, e)
		}
	}
	if math.IsInf(float64(lowest), 1) {
		return nil, fmt.Errorf("webmap: surface of %v: %w", req, world.ErrUngenerated)
	}
	for k := range t.Elevations {
		if !present[k] {
			t.Elevations[k] = lowest
		}
	}
	t.Min, t.Max = float32(math.Inf(1)), float32(math.Inf(-1))
	nan := float32(math.NaN())
	for j := range res {
		for i := range res {
			k := (j+bd)*side + i + bd
			e := t.Elevations[k]
			t.Min, t.Max = min(t.Min, e), max(t.Max, e)
			o := j*res + i
			t.Water[o], t.Cover[o] = nan, terrain.CoverPlains
			switch {
			case lava[k]:
				t.Cover[o] = terrain.CoverLava
			case fluid[k]:
				t.Water[o], t.Cover[o] = e, terrain.CoverLake
			}
		}
	}
	return t, nil
}
