package procworld_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// fuzzTile builds a 16-block tile from data, cycling through it: byte 0
// chooses how elevations are read (0: int16/64, from far below MinY to far
// above MaxY; otherwise raw float32 bits, which may be huge, NaN or
// infinite), then per sample its elevation, a water byte (even: dry;
// odd: a surface up to 16 blocks off the elevation, either way) and a
// cover byte (255 is no cover at all).
func fuzzTile(data []byte, req terrain.Request) *terrain.Tile {
	if len(data) == 0 {
		data = []byte{0}
	}
	pos := 0
	next := func() byte {
		b := data[pos%len(data)]
		pos++
		return b
	}
	raw := next() != 0
	side, res, bd := req.Side(), int(req.Resolution), int(req.Border)
	t := flatTile(req)
	for i := range t.Elevations {
		if raw {
			t.Elevations[i] = math.Float32frombits(binary.LittleEndian.Uint32([]byte{next(), next(), next(), next()}))
		} else {
			t.Elevations[i] = float32(int16(binary.LittleEndian.Uint16([]byte{next(), next()}))) / 64
		}
	}
	t.Min, t.Max = float32(math.Inf(1)), float32(math.Inf(-1))
	for j := range res {
		for i := range res {
			e := t.Elevations[(j+bd)*side+i+bd]
			t.Min, t.Max = min(t.Min, e), max(t.Max, e)
			k := j*res + i
			if w := next(); w&1 == 1 {
				t.Water[k] = e + float32(int(w>>1)-64)/4
			}
			c := next()
			t.Cover[k] = terrain.Cover(c % byte(terrain.NumCovers))
			if c == 255 {
				t.Cover[k] = terrain.Cover(c)
			}
		}
	}
	return t
}

// FuzzChunk feeds arbitrary tiles to a World: it returns an error for an
// invalid tile (never panics) and otherwise a chunk whose blocks agree with
// its summaries.
func FuzzChunk(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0x80, 0x11, 1, 3})                    // y 70, wet, covers cycling
	f.Add([]byte{0, 0xff, 0x7f, 7, 2, 0x00, 0x80, 9, 11}) // the extremes of int16
	f.Add([]byte{1, 0, 0, 0x80, 0x7f})                    // +Inf
	f.Add([]byte{1, 0xff, 0xff, 0x7f, 0x7f, 0, 5})        // the largest float32
	f.Add([]byte{0, 0x10, 0x11, 0, 255})                  // an unknown cover
	for cv := range terrain.NumCovers {
		f.Add([]byte{0, 0x00, 0x13, 0, byte(cv), 0x40, 0x13, 0, byte(cv)})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &fakeSource{tile: func(req terrain.Request) *terrain.Tile { return fuzzTile(data, req) }}
		w, err := procworld.New(src, procworld.Options{TileSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		pos := geom.Chunk{X: -3, Z: 5}
		c, err := w.Load(context.Background(), pos)
		if err != nil {
			if !errors.Is(err, terrain.ErrInvalidTile) {
				t.Fatalf("Load = %v, want a chunk or terrain.ErrInvalidTile", err)
			}
			return
		}
		s, err := w.Summary(context.Background(), pos)
		if err != nil || *s.AllColumns() != *c.AllColumns() {
			t.Fatalf("Summary = %v; want Load's columns", err)
		}
		checkColumns(t, c)
	})
}

// checkColumns checks a loaded chunk's blocks against its summaries.
func checkColumns(t *testing.T, c *world.Chunk) {
	t.Helper()
	leaves := world.Block("minecraft:oak_leaves")
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			col := c.Column(x, z)
			top := int(col.Top)
			if top < procworld.MinY || top >= procworld.MaxY {
				t.Fatalf("(%d, %d): top %d outside the build height", x, z, top)
			}
			if col.Biome == 0 || col.Ground.IsAir() || col.Fluid != world.IsFluid(col.Ground) {
				t.Fatalf("(%d, %d): biome %v, ground %v, fluid %v", x, z, col.Biome, col.Ground, col.Fluid)
			}
			for y := procworld.MinY; y <= top+2; y++ {
				b := c.Blocks.Block(x, y, z)
				switch {
				case y == top && b != col.Ground:
					t.Fatalf("(%d, %d): block at top %d is %v, summary %v", x, z, y, b, col.Ground)
				case y > top && y < procworld.MaxY && b != col.Above[y-top-1]:
					t.Fatalf("(%d, %d): block %d above the top is %v, summary %v", x, z, y-top, b, col.Above[y-top-1])
				case y > top && y >= procworld.MaxY && (b != world.Air || col.Above[y-top-1] != world.Air):
					t.Fatalf("(%d, %d): above the build limit: block %v, summary %v", x, z, b, col.Above[y-top-1])
				case y < top && b.IsAir() && col.Ground != leaves:
					t.Fatalf("(%d, %d): air at %d under the top %d (%v)", x, z, y, top, col.Ground)
				}
			}
		}
	}
}
