package geom

import "fmt"

// Block is a block (voxel column) position in the horizontal plane. Y is not
// part of it: selection works on columns.
type Block struct{ X, Z int64 }

// Chunk is a chunk position: a 16x16 column of blocks.
type Chunk struct{ X, Z int64 }

// Region is a region position: 32x32 chunks, as in Minecraft region files.
type Region struct{ X, Z int64 }

const (
	// ChunkShift is log2 of the chunk edge in blocks.
	ChunkShift = 4
	// RegionShift is log2 of the region edge in chunks.
	RegionShift = 5
	// ChunkSize is the chunk edge in blocks.
	ChunkSize = 1 << ChunkShift
	// RegionSize is the region edge in chunks.
	RegionSize = 1 << RegionShift
)

// Chunk returns the chunk containing b. Arithmetic shifts floor towards
// negative infinity, so block -1 lies in chunk -1, not chunk 0.
func (b Block) Chunk() Chunk { return Chunk{b.X >> ChunkShift, b.Z >> ChunkShift} }

// Region returns the region containing c.
func (c Chunk) Region() Region { return Region{c.X >> RegionShift, c.Z >> RegionShift} }

// Origin returns the block at the minimum corner of c.
func (c Chunk) Origin() Block { return Block{c.X << ChunkShift, c.Z << ChunkShift} }

// Center returns the block nearest the middle of c (offset 8, 8).
func (c Chunk) Center() Block {
	return Block{c.X<<ChunkShift + ChunkSize/2, c.Z<<ChunkShift + ChunkSize/2}
}

// Local returns the position of c inside its region, each in [0, 32).
func (c Chunk) Local() (x, z int) {
	return int(c.X & (RegionSize - 1)), int(c.Z & (RegionSize - 1))
}

// Origin returns the chunk at the minimum corner of r.
func (r Region) Origin() Chunk { return Chunk{r.X << RegionShift, r.Z << RegionShift} }

// Region returns the region containing b.
func (b Block) Region() Region { return b.Chunk().Region() }

// Local returns the position of b inside its chunk, each in [0, 16).
func (b Block) Local() (x, z int) {
	return int(b.X & (ChunkSize - 1)), int(b.Z & (ChunkSize - 1))
}

func (b Block) String() string  { return fmt.Sprintf("block(%d, %d)", b.X, b.Z) }
func (c Chunk) String() string  { return fmt.Sprintf("chunk(%d, %d)", c.X, c.Z) }
func (r Region) String() string { return fmt.Sprintf("region(%d, %d)", r.X, r.Z) }
