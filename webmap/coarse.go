package webmap

import (
	"context"
	"fmt"
	"math"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// Coarse tiles.
//
// A tile of zoom k >= 1 draws one sample every 2^k blocks, read at that
// spacing: the procedural world's heightfield sampled at the pixel centres
// (Backend.Heightfield through zoom DrainageZoom, with rivers and lakes;
// Backend.Relief above it, without), a Minecraft world's summaries read
// one column per pixel (each chunk holding a sample read once). So a
// procedural tile costs about the same at every zoom, and none is built
// from finer tiles.

// DrainageZoom is the largest zoom whose procedural tiles are sampled
// with the world's drainage (Backend.Heightfield); coarser ones draw its
// relief (Backend.Relief). The procedural drainage is resolved on an
// 8-block grid, so from 8 blocks per pixel (zoom 3) a river is at most
// about a pixel wide, while a heightfield with it costs a drainage cell
// per 1024 x 1024 blocks spanned, whatever its resolution.
const DrainageZoom = 2

// coarseBlock bounds the edge, in pixels, of one heightfield request of a
// coarse tile: a zoom-8 tile spans 131,072 blocks, beyond what one
// procedural request may (procgen.MaxSpan); 256 pixels span at most 65,536.
const coarseBlock = TileSize / 2

// pixelSpan returns the pixels [lo, hi) of a coarse tile axis whose blocks
// [o+p*s, o+(p+1)*s) meet the blocks [minB, maxB) (empty: lo >= hi).
func pixelSpan(o, s, minB, maxB int64) (lo, hi int) {
	l := floorDiv(minB-o, s)
	h := floorDiv(maxB-o+s-1, s)
	return int(min(max(l, 0), TileSize)), int(min(max(h, 0), TileSize))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// renderCoarse draws tile (zoom >= 1, tx, tz) of w at its own resolution,
// with at most RenderWorkers renders at once.
func (m *Map) renderCoarse(ctx context.Context, w *worldInfo, zoom int, tx, tz int64) (*Surface, error) {
	s := int64(1) << zoom
	span := int64(TileSize) << zoom
	ox, oz := tx*span, tz*span
	ext := w.extent
	x0, x1 := pixelSpan(ox, s, ext.MinX*world.ChunkSize, (ext.MaxX+1)*world.ChunkSize)
	z0, z1 := pixelSpan(oz, s, ext.MinZ*world.ChunkSize, (ext.MaxZ+1)*world.ChunkSize)
	surf := NewSurface(TileSize, w.MinY, w.MaxY)
	surf.Scale = int(s)
	if x0 >= x1 || z0 >= z1 {
		return surf, nil
	}
	if w.Kind == KindMinecraft {
		summary := func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) { return m.b.Summary(ctx, w.Name, c) }
		return surf, loadCoarseSurface(ctx, summary, surf, ox, oz, s, x0, x1, z0, z1, ext)
	}
	field := m.b.Relief
	if zoom <= DrainageZoom {
		field = m.b.Heightfield
	}
	for bz := z0; bz < z1; bz += coarseBlock {
		for bx := x0; bx < x1; bx += coarseBlock {
			n := min(coarseBlock, max(x1-bx, z1-bz))
			req := terrain.Request{
				OriginX: ox + int64(bx)*s, OriginZ: oz + int64(bz)*s,
				Size: int32(int64(n) * s), Resolution: int32(n),
			}
			t, err := field(ctx, w.Name, req)
			if err != nil {
				return nil, fmt.Errorf("webmap: terrain of %v: %w", req, err)
			}
			if err := t.Validate(req); err != nil {
				return nil, fmt.Errorf("webmap: terrain of %v: %w", req, err)
			}
			surf.setTile(t, bx, bz, min(x1, bx+n), min(z1, bz+n))
		}
	}
	return surf, nil
}

// coverLook is how the map draws a heightfield cover: the biome and
// ground block the procedural world gives its columns.
type coverLook struct {
	biome  world.BiomeID
	ground world.BlockID
}

var (
	waterBlock = world.Block("minecraft:water")
	lavaBlock  = world.Block("minecraft:lava")
)

// coverLooks follows world/procworld's columns, cover by cover.
var coverLooks = [terrain.NumCovers]coverLook{
	terrain.CoverOcean:     {world.Biome("minecraft:ocean"), waterBlock},
	terrain.CoverBeach:     {world.Biome("minecraft:beach"), world.Block("minecraft:sand")},
	terrain.CoverPlains:    {world.Biome("minecraft:plains"), world.Block("minecraft:grass_block")},
	terrain.CoverForest:    {world.Biome("minecraft:forest"), world.Block("minecraft:grass_block")},
	terrain.CoverDesert:    {world.Biome("minecraft:desert"), world.Block("minecraft:sand")},
	terrain.CoverMountains: {world.Biome("minecraft:stony_peaks"), world.Block("minecraft:stone")},
	terrain.CoverSnow:      {world.Biome("minecraft:snowy_plains"), world.Block("minecraft:snow_block")},
	terrain.CoverSwamp:     {world.Biome("minecraft:swamp"), world.Block("minecraft:grass_block")},
	terrain.CoverVolcanic:  {world.Biome("rtp:volcanic"), world.Block("minecraft:basalt")},
	terrain.CoverLava:      {world.Biome("rtp:volcanic"), lavaBlock},
	terrain.CoverRiver:     {world.Biome("minecraft:river"), waterBlock},
	terrain.CoverLake:      {world.Biome("rtp:lake"), waterBlock},
}

// topY returns floor(e) clamped to [minY, maxY-1].
func topY(e float32, minY, maxY int) int16 {
	f := math.Floor(float64(e))
	return int16(min(max(f, float64(minY)), float64(maxY-1)))
}

// setTile copies the interior samples of t (a heightfield validated
// against its request, one sample per column) into the columns [x0, x1)
// x [z0, z1) of s, sample (0, 0) at column (x0, z0). Water covers and
// samples under water are fluid, their top the water surface.
func (s *Surface) setTile(t *terrain.Tile, x0, z0, x1, z1 int) {
	res := int(t.Request.Resolution)
	for j := range min(res, z1-z0) {
		for i := range min(res, x1-x0) {
			k := j*res + i
			look := coverLooks[t.Cover[k]]
			e := t.Interior(i, j)
			fluid := look.ground == waterBlock || look.ground == lavaBlock
			if wl := t.Water[k]; !math.IsNaN(float64(wl)) {
				fluid = true
				e = max(e, wl)
				if look.ground != lavaBlock {
					look.ground = waterBlock
				}
			}
			o := (z0+j)*s.Size + x0 + i
			s.Top[o], s.Ground[o], s.Biome[o], s.Fluid[o], s.Present[o] = topY(e, s.MinY, s.MaxY), look.ground, look.biome, fluid, true
		}
	}
}

// loadCoarseSurface fills the columns [x0, x1) x [z0, z1) of s, a tile
// whose column (0, 0) covers blocks from (ox, oz), stride blocks a column:
// column (i, j) is the summary column at block (ox + i*stride + stride/2,
// oz + j*stride + stride/2). It reads each chunk holding a sample once,
// skipping the chunks outside ext (left absent); ungenerated and outside
// chunks stay absent, any other error ends the read.
func loadCoarseSurface(ctx context.Context, summary func(context.Context, geom.Chunk) (*world.Chunk, error), s *Surface, ox, oz, stride int64, x0, x1, z0, z1 int, ext ChunkRect) error {
	// Runs of consecutive samples along an axis that share a chunk.
	type run struct {
		chunk  int64
		lo, hi int // samples [lo, hi)
	}
	runs := func(o int64, lo, hi int) []run {
		var out []run
		for i := lo; i < hi; i++ {
			c := (o + int64(i)*stride + stride/2) >> geom.ChunkShift
			if n := len(out); n > 0 && out[n-1].chunk == c {
				out[n-1].hi = i + 1
				continue
			}
			out = append(out, run{chunk: c, lo: i, hi: i + 1})
		}
		return out
	}
	xs, zs := runs(ox, x0, x1), runs(oz, z0, z1)
	for _, rz := range zs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rz.chunk < ext.MinZ || rz.chunk > ext.MaxZ {
			continue
		}
		for _, rx := range xs {
			if rx.chunk < ext.MinX || rx.chunk > ext.MaxX {
				continue
			}
			ch, err := summary(ctx, geom.Chunk{X: rx.chunk, Z: rz.chunk})
			if err != nil {
				if Ungenerated(err) {
					continue
				}
				return err
			}
			for j := rz.lo; j < rz.hi; j++ {
				lz := int((oz + int64(j)*stride + stride/2) & (world.ChunkSize - 1))
				for i := rx.lo; i < rx.hi; i++ {
					lx := int((ox + int64(i)*stride + stride/2) & (world.ChunkSize - 1))
					col := ch.Column(lx, lz)
					if col.Top == world.NoTop {
						continue
					}
					o := j*s.Size + i
					s.Top[o], s.Ground[o], s.Biome[o], s.Fluid[o], s.Present[o] = col.Top, col.Ground, col.Biome, col.Fluid, true
				}
			}
		}
	}
	return nil
}
