package procworld

import (
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// A column's blocks are described, not stored: its summary (the top block
// and the two above) plus a profile of at most maxLayers layers going down
// from the top, each a block down to a bottom y. Below the last layer lies
// stone (deepslate under y 0) and bedrock at MinY. Block computes any block
// from that in a few comparisons. Rejected: materialising the blocks
// (16x16x384 block IDs, 384 KiB a chunk, for reads that touch a few dozen
// blocks per column at most).
//
// A profile names its blocks by their index in palette, one byte each,
// not by world.BlockID (four bytes, and padding after each bottom).

const maxLayers = 4

// layer is one run of a column: block from bottom up to the bottom of the
// layer above (the top, for the first layer).
type layer struct {
	bottom int16
	block  world.BlockID
}

// profile lists a column's layers from the top down, bottoms strictly
// decreasing, the first one's at or below the top: bottoms[k] and
// palette[blocks[k]] for k < n.
type profile struct {
	n       uint8
	blocks  [maxLayers]uint8
	bottoms [maxLayers]int16
}

// palette lists every block the world emits, in the order paletteBlock
// made them, after air (index 0), so that a profile names one in a byte;
// paletteOf maps a block back to its index. Both are complete once the
// package's variables are initialised, and read-only afterwards.
var (
	palette   = []world.BlockID{world.Air}
	paletteOf []uint8
)

// paletteBlock returns the block state name and adds it to the palette.
// Only package variable initialisers call it.
func paletteBlock(name string) world.BlockID {
	b := world.Block(name)
	if !slices.Contains(palette, b) {
		palette = append(palette, b)
	}
	return b
}

func init() {
	if len(palette) > math.MaxUint8+1 {
		panic("procworld: more blocks than a profile's byte can name")
	}
	paletteOf = make([]uint8, slices.Max(palette)+1)
	for i, b := range palette {
		paletteOf[b] = uint8(i)
	}
}

// paletteIndex returns b's index in palette. Every block the world emits
// is in it (paletteBlock); any other would read back as air.
func paletteIndex(b world.BlockID) uint8 {
	if int(b) < len(paletteOf) {
		return paletteOf[b]
	}
	return 0
}

// set replaces p's layers; it does nothing on a nil p (a summary has no
// profiles).
func (p *profile) set(ls ...layer) {
	if p == nil {
		return
	}
	n := min(len(ls), maxLayers)
	for k, l := range ls[:n] {
		p.bottoms[k], p.blocks[k] = l.bottom, paletteIndex(l.block)
	}
	p.n = uint8(n)
}

// chunk is a loaded chunk of the procedural world. It stores neither
// column summaries nor block profiles: it keeps what they are computed
// from, its tile's grid (shared with the tile cache and the tile's other
// chunks), where the chunk lies in it, and its decorations, one byte a
// column, and derives a column's summary and profile when asked.
//
// Every ready place keeps its chunk resident, thousands of them on a busy
// server. Stored, a chunk's summaries and profiles took 9 KiB; derived, a
// chunk takes some 400 bytes, and its tile's grid is held anyway while the
// tile cache keeps it. Deriving a column costs about 50 ns
// (BenchmarkColumn); a landing check reads one or two columns, and the
// default surface strategy reads no block below the top.
//
// What a chunk gives never changes once it is built (last only caches a
// derivation), and it is safe for concurrent reads.
type chunk struct {
	c world.Chunk
	w *World
	g *grid
	// last is the column Block derived last: a vertical search reads
	// one column's blocks y by y, and deriving the column for each would
	// cost its scan eight times as much. Readers on several goroutines
	// may replace it in turn; each value is immutable.
	last atomic.Pointer[lastColumn]
	// i0 and j0 are the interior sample of the grid under the chunk's
	// column (0, 0).
	i0, j0 int
	// decor holds each column's decorations (see packDecor), indexed
	// z*16 + x.
	decor [chunkColumns]uint8
}

var (
	_ world.BlockReader  = (*chunk)(nil)
	_ world.ColumnReader = (*chunk)(nil)
	_ world.Sizer        = (*chunk)(nil)
)

// Decorations of a column, packed in a byte: the canopy's height over the
// ground (0: none; at most maxHeight), whether the column holds a trunk,
// swamp water and powder snow.
const (
	decorHeight = 0x07
	decorTrunk  = 0x08
	decorSwamp  = 0x10
	decorPowder = 0x20
)

// packDecor returns the decorations of chunk-local column i whose cover is
// cv, reading only the streams that cover uses.
func packDecor(d *chunkDecor, cv terrain.Cover, i int) uint8 {
	var b uint8
	switch cv {
	case terrain.CoverForest:
		t := d.tree(i)
		b = t.height & decorHeight
		if t.trunk {
			b |= decorTrunk
		}
	case terrain.CoverSwamp:
		if d.swamp(i) {
			b |= decorSwamp
		}
	case terrain.CoverSnow:
		if d.powder(i) {
			b |= decorPowder
		}
	}
	return b
}

// newChunk returns chunk pos, which lies in grid t, with its block reader
// when blocks is set (a Load) and without it otherwise (a Summary).
func (w *World) newChunk(t *grid, pos geom.Chunk, blocks bool) *world.Chunk {
	o := pos.Origin()
	ch := &chunk{w: w, g: t, i0: int(o.X - t.originX), j0: int(o.Z - t.originZ)}
	ch.c = world.Chunk{Pos: pos, MinY: MinY, MaxY: MaxY, Summaries: ch}
	if blocks {
		ch.c.Blocks = ch
	}
	d := chunkDecor{seed: w.seed, ox: o.X, oz: o.Z}
	for z := range world.ChunkSize {
		row := t.cover[(ch.j0+z)*t.res+ch.i0:]
		for x := range world.ChunkSize {
			i := z*world.ChunkSize + x
			ch.decor[i] = packDecor(&d, row[x], i)
		}
	}
	return &ch.c
}

// site returns what the grid says about chunk-local column (x, z).
func (ch *chunk) site(x, z int) site {
	t := ch.g
	side, bd := t.side, t.border
	i, j := ch.i0+x, ch.j0+z
	f := (j+bd)*side + i + bd
	k := j*t.res + i
	o := ch.c.Pos.Origin()
	s := site{
		x:     o.X + int64(x),
		z:     o.Z + int64(z),
		floor: int(t.floors[f]),
		water: t.waterAt(k),
		cover: t.cover[k],
	}
	for _, n := range [4]int16{t.floors[f-1], t.floors[f+1], t.floors[f-side], t.floors[f+side]} {
		d := int(n) - s.floor
		s.slope = max(s.slope, d, -d)
	}
	if s.cover == terrain.CoverVolcanic {
		s.nearLava = lavaAround(t, i, j, x, z)
	}
	return s
}

// derive computes chunk-local column (x, z): its summary and, when p is
// not nil, its profile.
func (ch *chunk) derive(x, z int, col *world.Column, p *profile) {
	s := ch.site(x, z)
	ch.w.column(&s, ch.decor[z*world.ChunkSize+x], col, p)
	col.Fluid = world.IsFluid(col.Ground)
}

// Column implements world.ColumnReader.
func (ch *chunk) Column(x, z int) world.Column {
	var col world.Column
	if uint(x) < world.ChunkSize && uint(z) < world.ChunkSize {
		ch.derive(x, z, &col, nil)
	}
	return col
}

// Block implements world.BlockReader: the block at chunk-local (x, z) and
// world y; Air outside the chunk or the build height.
func (ch *chunk) Block(x, y, z int) world.BlockID {
	if uint(x) >= world.ChunkSize || uint(z) >= world.ChunkSize || y < MinY || y >= MaxY {
		return world.Air
	}
	l := ch.last.Load()
	if l == nil || l.x != x || l.z != z {
		l = &lastColumn{x: x, z: z}
		ch.derive(x, z, &l.col, &l.p)
		ch.last.Store(l)
	}
	return blockIn(&l.col, &l.p, y)
}

// lastColumn is one derived column of a chunk, summary and profile.
type lastColumn struct {
	x, z int
	col  world.Column
	p    profile
}

// blockIn returns the block at y, MinY <= y < MaxY, of a column with
// summary col and profile p.
func blockIn(col *world.Column, p *profile, y int) world.BlockID {
	top := int(col.Top)
	switch {
	case y > top+2:
		return world.Air
	case y > top:
		return col.Above[y-top-1]
	case y == top:
		return col.Ground
	case y == MinY:
		return bedrock
	}
	for k := range int(p.n) {
		if y >= int(p.bottoms[k]) {
			return palette[p.blocks[k]]
		}
	}
	if y < 0 {
		return deepslate
	}
	return stone
}

// MemSize implements world.Sizer: the chunk beyond its world.Chunk head
// (counted by world.Chunk.MemSize) and its share of the tile's grid, which
// the tile's chunks hold together.
func (ch *chunk) MemSize() int64 {
	n := int64(unsafe.Sizeof(*ch)-unsafe.Sizeof(ch.c)) + int64(unsafe.Sizeof(lastColumn{}))
	per := max(int64(ch.g.res/world.ChunkSize), 1)
	return n + ch.g.memSize()/(per*per)
}
