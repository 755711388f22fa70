package webmap

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// TileSize is the edge of a map tile in pixels, and of a zoom-0 tile in
// blocks.
const TileSize = 512

// tileChunks is the edge of a zoom-0 tile in chunks.
const tileChunks = TileSize / world.ChunkSize

// MaxZoom is the largest zoom level: 2^MaxZoom blocks per pixel.
const MaxZoom = 8

// RendererVersion identifies the arithmetic of the renderers (colours,
// shading, coarse sampling). It is part of every tile's key and ETag: change
// it whenever a tile of the same terrain would come out different.
const RendererVersion = 2

// Surface is the top of a square of block columns: the input of the
// renderers. Columns are indexed z*Size + x.
//
// The zero value is an empty surface; use NewSurface. A Surface is not
// safe for concurrent mutation.
type Surface struct {
	Size       int
	MinY, MaxY int
	// Scale is the blocks between neighbouring columns (the stride of a
	// coarse tile); 0 means 1. Relief shading divides height differences
	// by it.
	Scale   int
	Top     []int16 // world.NoTop where absent
	Ground  []world.BlockID
	Biome   []world.BiomeID
	Fluid   []bool
	Present []bool // the column has terrain (its chunk was generated)
}

// NewSurface returns an empty (all absent) surface of size x size columns.
func NewSurface(size, minY, maxY int) *Surface {
	n := size * size
	s := &Surface{
		Size: size, MinY: minY, MaxY: maxY,
		Top: make([]int16, n), Ground: make([]world.BlockID, n), Biome: make([]world.BiomeID, n),
		Fluid: make([]bool, n), Present: make([]bool, n),
	}
	for i := range s.Top {
		s.Top[i] = world.NoTop
	}
	return s
}

// SetChunk copies the columns of c, whose chunk-local (0, 0) column sits at
// surface column (x0, z0), into s (columns outside s are ignored).
func (s *Surface) SetChunk(c *world.Chunk, x0, z0 int) {
	for z := range world.ChunkSize {
		sz := z0 + z
		if sz < 0 || sz >= s.Size {
			continue
		}
		for x := range world.ChunkSize {
			sx := x0 + x
			if sx < 0 || sx >= s.Size {
				continue
			}
			col := c.Column(x, z)
			i := sz*s.Size + sx
			if col.Top == world.NoTop {
				continue
			}
			s.Top[i], s.Ground[i], s.Biome[i], s.Fluid[i], s.Present[i] = col.Top, col.Ground, col.Biome, col.Fluid, true
		}
	}
}

// loadSurface reads the summaries of the zoom-0 tile (tx, tz) through
// summary, skipping the chunks keep refuses (left absent). Ungenerated and
// outside chunks stay absent; any other error ends the read.
func loadSurface(ctx context.Context, summary func(context.Context, geom.Chunk) (*world.Chunk, error), tx, tz int64, minY, maxY int, keep func(geom.Chunk) bool) (*Surface, error) {
	s := NewSurface(TileSize, minY, maxY)
	c0 := geom.Chunk{X: tx * tileChunks, Z: tz * tileChunks}
	for cz := range int64(tileChunks) {
		for cx := range int64(tileChunks) {
			c := geom.Chunk{X: c0.X + cx, Z: c0.Z + cz}
			if keep != nil && !keep(c) {
				continue
			}
			ch, err := summary(ctx, c)
			if err != nil {
				if Ungenerated(err) {
					continue
				}
				return nil, err
			}
			s.SetChunk(ch, int(cx)*world.ChunkSize, int(cz)*world.ChunkSize)
		}
	}
	return s, nil
}

// shade scales channel v by f, clamped to [0, 255].
func shade(v uint8, f float32) uint8 {
	x := float32(v)*f + 0.5
	switch {
	case x <= 0:
		return 0
	case x >= 255:
		return 255
	}
	return uint8(x)
}

// neighbours returns the heights left, right, up (-z) and down (+z) of
// column (x, z), each h where that column is absent or beyond the edge.
func (s *Surface) neighbours(x, z, i int, h float32) (l, r, u, d float32) {
	l, r, u, d = h, h, h, h
	n := s.Size
	if x > 0 && s.Present[i-1] {
		l = float32(s.Top[i-1])
	}
	if x < n-1 && s.Present[i+1] {
		r = float32(s.Top[i+1])
	}
	if z > 0 && s.Present[i-n] {
		u = float32(s.Top[i-n])
	}
	if z < n-1 && s.Present[i+n] {
		d = float32(s.Top[i+n])
	}
	return l, r, u, d
}

// Light of the procedural hillshade: from the north-west (-x, -z), 45
// degrees up, as is usual for relief maps.
var lightDir = func() [3]float32 {
	x, y, z := -1.0, math.Sqrt2, -1.0
	n := math.Sqrt(x*x + y*y + z*z)
	return [3]float32{float32(x / n), float32(y / n), float32(z / n)}
}()

// RenderRelief draws s as a shaded relief (the procedural renderer):
// colour by biome (by ground block for biomes no rule knows), darkened
// towards the bottom of the build height, hillshaded from the north-west
// by the surface normal of central differences; fluids flat blue (lava
// orange), lightly shaded. Absent columns are transparent. Edge columns
// use their own height for the missing neighbour. Slopes are in blocks per
// block: height differences are divided by the Scale.
func RenderRelief(s *Surface) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, s.Size, s.Size))
	span := float32(max(s.MaxY-s.MinY, 1))
	step := 2 * float32(max(s.Scale, 1))
	for z := range s.Size {
		row := img.Pix[z*img.Stride:]
		for x := range s.Size {
			i := z*s.Size + x
			if !s.Present[i] {
				continue
			}
			h := float32(s.Top[i])
			var base color.RGBA
			switch {
			case s.Fluid[i]:
				base = waterColor
				if blockColorOf(s.Ground[i]) == lavaColor {
					base = lavaColor
				}
			default:
				if c, ok := biomeColorOf(s.Biome[i]); ok {
					base = c
				} else {
					base = blockColorOf(s.Ground[i])
				}
			}
			// Central differences, blocks per block.
			l, rt, u, dn := s.neighbours(x, z, i, h)
			dx, dz := (rt-l)/step, (dn-u)/step
			// Normal of y = f(x, z): (-dx, 1, -dz), normalised; its
			// lambert over a flat surface's.
			inv := 1 / float32(math.Sqrt(float64(dx*dx+1+dz*dz)))
			rel := (1 - (dx*lightDir[0]+dz*lightDir[2])/lightDir[1]) * inv
			var f float32
			if s.Fluid[i] {
				f = 0.9 + 0.1*rel
			} else {
				f = (0.55 + 0.3825*rel) * (0.8 + 0.35*(h-float32(s.MinY))/span)
			}
			p := row[4*x : 4*x+4 : 4*x+4]
			p[0], p[1], p[2], p[3] = shade(base.R, f), shade(base.G, f), shade(base.B, f), 255
		}
	}
	return img
}

// RenderBlocks draws s as a Minecraft map (the Minecraft renderer): each
// column the colour of its top block, brighter where it stands higher than
// its north and west neighbours and darker where lower, as the game's own
// maps shade; absent (ungenerated) columns are transparent. Edge columns
// compare with themselves (no shading across the tile edge).
func RenderBlocks(s *Surface) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, s.Size, s.Size))
	for z := range s.Size {
		row := img.Pix[z*img.Stride:]
		for x := range s.Size {
			i := z*s.Size + x
			if !s.Present[i] {
				continue
			}
			h := float32(s.Top[i])
			base := blockColorOf(s.Ground[i])
			l, _, u, _ := s.neighbours(x, z, i, h)
			d := (h - u) + (h - l)
			d = min(max(d, -6), 6)
			f := 1 + d*0.05
			if s.Fluid[i] {
				f = 1 + d*0.01
			}
			p := row[4*x : 4*x+4 : 4*x+4]
			p[0], p[1], p[2], p[3] = shade(base.R, f), shade(base.G, f), shade(base.B, f), 255
		}
	}
	return img
}

// pngEncoder reuses its buffers across encodes.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

// pngPool is a one-slot png.EncoderBufferPool safe for concurrent use.
type pngPool struct{ ch chan *png.EncoderBuffer }

func (p *pngPool) Get() *png.EncoderBuffer {
	if p.ch == nil {
		return nil
	}
	select {
	case b := <-p.ch:
		return b
	default:
		return nil
	}
}

func (p *pngPool) Put(b *png.EncoderBuffer) {
	if p.ch == nil {
		return
	}
	select {
	case p.ch <- b:
	default:
	}
}

func init() {
	pngEncoder.BufferPool.(*pngPool).ch = make(chan *png.EncoderBuffer, 8)
}

// encodePNG returns img as PNG bytes.
func encodePNG(img *image.NRGBA) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64 << 10)
	if err := pngEncoder.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodePNG decodes a tile PNG into non-premultiplied RGBA.
func decodePNG(b []byte) (*image.NRGBA, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	want := image.Rect(0, 0, TileSize, TileSize)
	if img.Bounds() != want {
		return nil, fmt.Errorf("webmap: tile PNG of %v, want %v", img.Bounds(), want)
	}
	switch m := img.(type) {
	case *image.NRGBA:
		return m, nil
	case *image.RGBA:
		if m.Opaque() { // premultiplied equals non-premultiplied at alpha 255
			return &image.NRGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}, nil
		}
	}
	out := image.NewNRGBA(want)
	draw.Draw(out, want, img, image.Point{}, draw.Src)
	return out, nil
}
