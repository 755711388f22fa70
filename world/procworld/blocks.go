package procworld

import (
	"unsafe"

	"github.com/rtpengine/rtp/world"
)

// A column's blocks are described, not stored: its summary (the top block
// and the two above) plus a profile of at most maxLayers layers going down
// from the top, each a block down to a bottom y. Below the last layer lies
// stone (deepslate under y 0) and bedrock at MinY. Block computes any block
// from that in a few comparisons; a chunk costs 256 profiles (10 KiB)
// instead of 16x16x384 block IDs (384 KiB). Rejected: materialising the
// blocks (36 times the memory, for reads that touch a few dozen blocks per
// column at most).

const maxLayers = 4

// layer is one run of a column: block from bottom up to the bottom of the
// layer above (the top, for the first layer).
type layer struct {
	bottom int16
	block  world.BlockID
}

// profile lists a column's layers from the top down, bottoms strictly
// decreasing, the first one's at or below the top.
type profile struct {
	n      uint8
	layers [maxLayers]layer
}

// set replaces p's layers; it does nothing on a nil p (a summary has no
// profiles).
func (p *profile) set(ls ...layer) {
	if p == nil {
		return
	}
	p.n = uint8(copy(p.layers[:], ls))
}

// loaded is a loaded chunk and its block profiles in one allocation. It
// holds no pointer after the chunk's head: the garbage collector scans an
// object up to its last pointer, and a server keeps thousands of loaded
// chunks resident (every hot place holds one), so a pointer behind the
// 16 KiB of columns would have it scan them all in every cycle.
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
	for _, l := range p.layers[:p.n] {
		if y >= int(l.bottom) {
			return l.block
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
