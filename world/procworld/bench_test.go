package procworld_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// benchChunks are chunks on distinct tiles for every tile size up to 256
// (256 blocks apart along x), within a few drainage cells.
func benchChunks() []geom.Chunk {
	out := make([]geom.Chunk, 8)
	for i := range out {
		out[i] = geom.Chunk{X: int64(i)*16 + 3, Z: int64(i%3)*16 + 5}
	}
	return out
}

// sweepChunks are the 16x16 chunks of one 256-block square, in row order.
func sweepChunks() []geom.Chunk {
	out := make([]geom.Chunk, 0, 256)
	for z := range int64(16) {
		for x := range int64(16) {
			out = append(out, geom.Chunk{X: 64 + x, Z: -32 + z})
		}
	}
	return out
}

// warmArchive returns an archive over a memstore in front of a fresh
// generator that already holds the tiles of chunks at the given tile size.
func warmArchive(b *testing.B, size int, chunks []geom.Chunk) *archive.Archive {
	b.Helper()
	a := newArchive(b, memstore.New(archive.Limits{}))
	w, err := procworld.New(a, procworld.Options{TileSize: size})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, pos := range chunks {
		if _, err := w.Load(ctx, pos); err != nil {
			b.Fatal(err)
		}
	}
	if err := a.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return a
}

type loadFunc func(w *procworld.World, ctx context.Context, pos geom.Chunk) (*world.Chunk, error)

// BenchmarkLoadChunk measures World.Load; BenchmarkSummary the same for
// World.Summary. Variants:
//
//   - cached: the chunk's tile is in the World's tile cache, so this is
//     the cost of turning samples into a chunk alone.
//   - tile=T/archive: every Load reads its tile (T x T blocks) from a warm
//     archive over a memstore (the tile cache holds one tile and the
//     chunks rotate over 8 tiles): the cost of a chunk picked at random.
//   - tile=T/sweep: Loads walk the 256 chunks of a 256-block square in
//     row order over a warm archive with the default tile cache, so one
//     archive read serves T*T/256 chunks: the cost of a chunk next to the
//     last one.
//   - tile=T/generate: as archive, but straight from the generator (its
//     drainage cells warm): what a chunk costs when the archive misses.
func BenchmarkLoadChunk(b *testing.B) {
	benchChunk(b, (*procworld.World).Load)
}

func BenchmarkSummary(b *testing.B) {
	benchChunk(b, (*procworld.World).Summary)
}

func benchChunk(b *testing.B, load loadFunc) {
	ctx := context.Background()
	b.Run("cached", func(b *testing.B) {
		w, err := procworld.New(newGenerator(b), procworld.Options{})
		if err != nil {
			b.Fatal(err)
		}
		pos := benchChunks()[0]
		if _, err := load(w, ctx, pos); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := load(w, ctx, pos); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, size := range []int{16, 32, 64, 128, 256} {
		b.Run(fmt.Sprintf("tile=%d/archive", size), func(b *testing.B) {
			chunks := benchChunks()
			a := warmArchive(b, size, chunks)
			w, err := procworld.New(a, procworld.Options{TileSize: size, CacheTiles: 1})
			if err != nil {
				b.Fatal(err)
			}
			before := stats(b, a)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := load(w, ctx, chunks[i%len(chunks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			if after := stats(b, a); after.Generations != before.Generations {
				b.Fatalf("generations %d -> %d: the archive was not warm", before.Generations, after.Generations)
			}
		})
		b.Run(fmt.Sprintf("tile=%d/sweep", size), func(b *testing.B) {
			chunks := sweepChunks()
			a := warmArchive(b, size, chunks)
			i := 0
			var w *procworld.World
			b.ReportAllocs()
			for b.Loop() {
				if i%len(chunks) == 0 {
					var err error
					if w, err = procworld.New(a, procworld.Options{TileSize: size}); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := load(w, ctx, chunks[i%len(chunks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("tile=%d/generate", size), func(b *testing.B) {
			chunks := benchChunks()
			w, err := procworld.New(newGenerator(b), procworld.Options{TileSize: size, CacheTiles: 1})
			if err != nil {
				b.Fatal(err)
			}
			for _, pos := range chunks { // warm the drainage cells
				if _, err := load(w, ctx, pos); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := load(w, ctx, chunks[i%len(chunks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func stats(b *testing.B, a *archive.Archive) archive.Stats {
	b.Helper()
	s, err := a.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkBlock measures the synthesised BlockReader over a whole column
// scan, as a linear vertical strategy reads it.
func BenchmarkBlock(b *testing.B) {
	c := benchLoaded(b)
	var sink world.BlockID
	b.ReportAllocs()
	for b.Loop() {
		for y := procworld.MinY; y < procworld.MaxY; y++ {
			sink ^= c.Blocks.Block(7, y, 9)
		}
	}
	_ = sink
}

// BenchmarkColumn measures deriving a column summary from a loaded chunk
// (its tile cached): each op reads all 256 columns, as a map render or a
// whole-chunk screening does; a landing check reads one or two.
func BenchmarkColumn(b *testing.B) {
	c := benchLoaded(b)
	var sink int16
	b.ReportAllocs()
	for b.Loop() {
		for z := range world.ChunkSize {
			for x := range world.ChunkSize {
				sink ^= c.Column(x, z).Top
			}
		}
	}
	_ = sink
}

// benchLoaded returns the first benchmark chunk, loaded from a world of
// the default generator (its tile then cached).
func benchLoaded(b *testing.B) *world.Chunk {
	b.Helper()
	w, err := procworld.New(newGenerator(b), procworld.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := w.Load(context.Background(), benchChunks()[0])
	if err != nil {
		b.Fatal(err)
	}
	return c
}
