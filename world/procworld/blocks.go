package procworld

import (
	"math"
	"slices"
	"unsafe"

	"github.com/rtpengine/rtp/world"
)

// A column's blocks are described, not stored: its summary (the top block
// and the two above) plus a profile of at most maxLayers layers going down
// from the top, each a block down to a bottom y. Below the last layer lies
// stone (deepslate under y 0) and bedrock at MinY. Block computes any block
// from that in a few comparisons; a chunk costs 256 profiles (3.5 KiB)
// instead of 16x16x384 block IDs (384 KiB). Rejected: materialising the
// blocks (100 times the memory, for reads that touch a few dozen blocks
// per column at most).
//
// A profile names its blocks by their index in palette, one byte each,
// not by world.BlockID (four bytes, and padding after each bottom): 14
// bytes a column instead of 36. Every ready place keeps its chunk
// resident, so that is 5.5 KiB less per ready place and per promotion
// written, and a chunk of 10 KiB instead of 16.

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

// loaded is a loaded chunk and its block profiles in one allocation. It
// holds no pointer after the chunk's head: the garbage collector scans an
// object up to its last pointer, and a server keeps thousands of loaded
// chunks resident (every hot place holds one), so a pointer behind the
// 5 KiB of columns and 3.5 KiB of profiles would have it scan them all
// in every cycle.
type loaded struct {
	chunk world.Chunk
	cols  [world.ChunkSize * world.ChunkSize]profile
}

// blocks is the world.BlockReader of a loaded chunk: the same memory as
// loaded, so it reaches the columns without a pointer back to the chunk.
// It is immutable once built and safe for concurrent reads.
type blocks loaded

var (
	_ world.BlockReader = (*blocks)(nil)
	_ world.Sizer       = (*blocks)(nil)
)

// Block implements world.BlockReader: the block at chunk-local (x, z) and
// world y; Air outside the chunk or the build height.
func (b *blocks) Block(x, y, z int) world.BlockID {
	if uint(x) >= world.ChunkSize || uint(z) >= world.ChunkSize || y < MinY || y >= MaxY {
		return world.Air
	}
	i := z*world.ChunkSize + x
	col := &b.chunk.Columns[i]
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
	p := &b.cols[i]
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

// MemSize implements world.Sizer: the profiles (the chunk itself is
// counted by world.Chunk.MemSize).
func (b *blocks) MemSize() int64 { return int64(unsafe.Sizeof(*b) - unsafe.Sizeof(b.chunk)) }
