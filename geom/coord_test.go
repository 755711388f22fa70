package geom

import (
	"math/rand/v2"
	"testing"
)

func TestBlockChunk(t *testing.T) {
	tests := []struct {
		name string
		b    Block
		want Chunk
	}{
		{"origin", Block{0, 0}, Chunk{0, 0}},
		{"last of chunk 0", Block{15, 15}, Chunk{0, 0}},
		{"first of chunk 1", Block{16, 16}, Chunk{1, 1}},
		{"minus one", Block{-1, -1}, Chunk{-1, -1}},
		{"minus sixteen", Block{-16, -16}, Chunk{-1, -1}},
		{"minus seventeen", Block{-17, -17}, Chunk{-2, -2}},
		{"mixed signs", Block{-1, 31}, Chunk{-1, 1}},
		{"world border", Block{29_999_984, -29_999_984}, Chunk{1_874_999, -1_874_999}},
		{"world border minus one", Block{-29_999_985, 29_999_983}, Chunk{-1_875_000, 1_874_998}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Chunk(); got != tt.want {
				t.Errorf("%v.Chunk() = %v, want %v", tt.b, got, tt.want)
			}
		})
	}
}

func TestChunkRegion(t *testing.T) {
	tests := []struct {
		name string
		c    Chunk
		want Region
	}{
		{"origin", Chunk{0, 0}, Region{0, 0}},
		{"last of region 0", Chunk{31, 31}, Region{0, 0}},
		{"first of region 1", Chunk{32, 32}, Region{1, 1}},
		{"minus one", Chunk{-1, -1}, Region{-1, -1}},
		{"minus thirty-two", Chunk{-32, -32}, Region{-1, -1}},
		{"minus thirty-three", Chunk{-33, -33}, Region{-2, -2}},
		{"mixed signs", Chunk{-33, 64}, Region{-2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Region(); got != tt.want {
				t.Errorf("%v.Region() = %v, want %v", tt.c, got, tt.want)
			}
		})
	}
}

func TestBlockRegion(t *testing.T) {
	tests := []struct {
		b    Block
		want Region
	}{
		{Block{0, 0}, Region{0, 0}},
		{Block{511, 511}, Region{0, 0}},
		{Block{512, -1}, Region{1, -1}},
		{Block{-512, -513}, Region{-1, -2}},
	}
	for _, tt := range tests {
		if got := tt.b.Region(); got != tt.want {
			t.Errorf("%v.Region() = %v, want %v", tt.b, got, tt.want)
		}
	}
}

func TestOriginAndCenter(t *testing.T) {
	tests := []struct {
		c            Chunk
		origin, mid  Block
		regionOrigin Chunk
	}{
		{Chunk{0, 0}, Block{0, 0}, Block{8, 8}, Chunk{0, 0}},
		{Chunk{1, -1}, Block{16, -16}, Block{24, -8}, Chunk{0, -32}},
		{Chunk{-33, 40}, Block{-528, 640}, Block{-520, 648}, Chunk{-64, 32}},
	}
	for _, tt := range tests {
		if got := tt.c.Origin(); got != tt.origin {
			t.Errorf("%v.Origin() = %v, want %v", tt.c, got, tt.origin)
		}
		if got := tt.c.Center(); got != tt.mid {
			t.Errorf("%v.Center() = %v, want %v", tt.c, got, tt.mid)
		}
		if got := tt.c.Region().Origin(); got != tt.regionOrigin {
			t.Errorf("%v.Region().Origin() = %v, want %v", tt.c, got, tt.regionOrigin)
		}
	}
}

func TestLocal(t *testing.T) {
	chunks := []struct {
		c    Chunk
		x, z int
	}{
		{Chunk{0, 0}, 0, 0},
		{Chunk{31, 32}, 31, 0},
		{Chunk{-1, -32}, 31, 0},
		{Chunk{-33, -2}, 31, 30},
		{Chunk{-64, 65}, 0, 1},
	}
	for _, tt := range chunks {
		if x, z := tt.c.Local(); x != tt.x || z != tt.z {
			t.Errorf("%v.Local() = (%d, %d), want (%d, %d)", tt.c, x, z, tt.x, tt.z)
		}
	}
	blocks := []struct {
		b    Block
		x, z int
	}{
		{Block{0, 0}, 0, 0},
		{Block{15, 16}, 15, 0},
		{Block{-1, -16}, 15, 0},
		{Block{-17, -2}, 15, 14},
	}
	for _, tt := range blocks {
		if x, z := tt.b.Local(); x != tt.x || z != tt.z {
			t.Errorf("%v.Local() = (%d, %d), want (%d, %d)", tt.b, x, z, tt.x, tt.z)
		}
	}
}

// TestConversionsRandom checks, over random positions of both signs, that
// each conversion is the floor division it stands for and that Local is the
// remainder in range.
func TestConversionsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floorDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && a < 0 {
			q--
		}
		return q
	}
	for range 20000 {
		b := Block{rng.Int64N(1<<40) - 1<<39, rng.Int64N(1<<40) - 1<<39}
		c := b.Chunk()
		if want := (Chunk{floorDiv(b.X, 16), floorDiv(b.Z, 16)}); c != want {
			t.Fatalf("%v.Chunk() = %v, want %v", b, c, want)
		}
		x, z := b.Local()
		if x < 0 || x >= ChunkSize || z < 0 || z >= ChunkSize {
			t.Fatalf("%v.Local() = (%d, %d), outside [0, %d)", b, x, z, ChunkSize)
		}
		if o := c.Origin(); o.X+int64(x) != b.X || o.Z+int64(z) != b.Z {
			t.Fatalf("%v: origin %v plus local (%d, %d) is not the block", b, o, x, z)
		}
		r := c.Region()
		if want := (Region{floorDiv(c.X, 32), floorDiv(c.Z, 32)}); r != want || b.Region() != want {
			t.Fatalf("%v.Region() = %v, %v.Region() = %v, want %v", c, r, b, b.Region(), want)
		}
		lx, lz := c.Local()
		if lx < 0 || lx >= RegionSize || lz < 0 || lz >= RegionSize {
			t.Fatalf("%v.Local() = (%d, %d), outside [0, %d)", c, lx, lz, RegionSize)
		}
		if o := r.Origin(); o.X+int64(lx) != c.X || o.Z+int64(lz) != c.Z {
			t.Fatalf("%v: region origin %v plus local (%d, %d) is not the chunk", c, o, lx, lz)
		}
	}
}

func TestCoordStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Block{-1, 2}.String(), "block(-1, 2)"},
		{Chunk{3, -4}.String(), "chunk(3, -4)"},
		{Region{-5, 6}.String(), "region(-5, 6)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}
