package anvil

import (
	"bytes"
	stdzlib "compress/zlib"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Tnze/go-mc/nbt"
	kpzlib "github.com/klauspost/compress/zlib"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world"
)

// benchRegion is one fixture region with its stored chunks.
type benchRegion struct {
	w      *World
	f      *RegionFile
	chunks []geom.Chunk
}

// benchRegions opens every fixture region: the same chunks for every
// benchmark below (17 files, 2,910 chunks, every layout since 1.8).
func benchRegions(b *testing.B) ([]benchRegion, int) {
	b.Helper()
	var out []benchRegion
	total := 0
	for _, fx := range fixtures {
		file := anvilfixture.Path(b, fx.path)
		w, err := Open(filepath.Dir(file), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		osf, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { osf.Close() })
		r := regionOf(b, file)
		h, err := w.Header(r)
		if err != nil {
			b.Fatal(err)
		}
		cs := h.Chunks(r)
		total += len(cs)
		out = append(out, benchRegion{w: w, f: NewRegionFile(r, osf, -1, nil, 0), chunks: cs})
	}
	return out, total
}

func reportChunks(b *testing.B, perOp int) {
	b.ReportMetric(float64(perOp)*float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkScreenRegion screens every chunk of every fixture region as
// the engine does: read, decompress, decode the column summaries (or stop
// at an unfinished status). One op is all 2,910 chunks.
func BenchmarkScreenRegion(b *testing.B) {
	regions, total := benchRegions(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range regions {
			for _, c := range r.chunks {
				if _, err := r.w.Load(ctx, c); err != nil && !errors.Is(err, world.ErrUngenerated) {
					b.Fatal(err)
				}
			}
		}
	}
	reportChunks(b, total)
}

// BenchmarkInflateOnly reads and decompresses the same chunks and does
// nothing else: the floor under screening.
func BenchmarkInflateOnly(b *testing.B) {
	regions, total := benchRegions(b)
	var raw, out []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range regions {
			for _, c := range r.chunks {
				var err error
				if out, raw, err = r.f.ReadChunk(c, raw, out); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	reportChunks(b, total)
}

// BenchmarkReflectiveDecode reads and decompresses the same chunks, then
// decodes what screening needs (status, heightmaps, section palettes, block
// data, biomes) with a general reflective NBT decoder into typed structs.
func BenchmarkReflectiveDecode(b *testing.B) {
	regions, total := benchRegions(b)
	var raw, out []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range regions {
			for _, c := range r.chunks {
				var err error
				if out, raw, err = r.f.ReadChunk(c, raw, out); err != nil {
					b.Fatal(err)
				}
				var v oracleNBT
				if err := nbt.Unmarshal(out, &v); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	reportChunks(b, total)
}

// BenchmarkInflate compares inflate implementations on the same payloads:
// the standard library's zlib and klauspost/compress's zlib (both check
// the Adler-32 trailer), and Decompress (klauspost/compress's flate
// without the trailer, as the reader uses it).
func BenchmarkInflate(b *testing.B) {
	regions, total := benchRegions(b)
	var payloads [][]byte
	for _, r := range regions {
		for _, c := range r.chunks {
			_, p, _, err := r.f.Raw(c, nil)
			if err != nil {
				b.Fatal(err)
			}
			payloads = append(payloads, p)
		}
	}
	zlibs := []struct {
		name string
		new  func(io.Reader) (io.ReadCloser, error)
	}{
		{"stdlib-zlib", stdzlib.NewReader},
		{"klauspost-zlib", kpzlib.NewReader},
	}
	for _, z := range zlibs {
		b.Run(z.name, func(b *testing.B) {
			var src bytes.Reader
			zr, _ := z.new(bytes.NewReader(payloads[0]))
			dst := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range payloads {
					src.Reset(p)
					if err := zr.(interface {
						Reset(io.Reader, []byte) error
					}).Reset(&src, nil); err != nil {
						b.Fatal(err)
					}
					if _, err := readLimit(zr, dst, DefaultMaxChunkBytes, "zlib"); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportChunks(b, total)
		})
	}
	b.Run("Decompress", func(b *testing.B) {
		dst := make([]byte, 0, 1<<20)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range payloads {
				if _, err := Decompress(CompressionZlib, p, dst, DefaultMaxChunkBytes); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportChunks(b, total)
	})
}

// BenchmarkScreenRatios measures the three of the benchmarks above region
// by region, interleaved, so that load from other processes falls on all
// three alike, and reports the two ratios the design sets targets for:
// screen/inflate (at most 1.3) and reflective/screen (at least 2).
func BenchmarkScreenRatios(b *testing.B) {
	regions, total := benchRegions(b)
	ctx := context.Background()
	var raw, out []byte
	var tInflate, tScreen, tReflect time.Duration
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range regions {
			t0 := time.Now()
			for _, c := range r.chunks {
				var err error
				if out, raw, err = r.f.ReadChunk(c, raw, out); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for _, c := range r.chunks {
				if _, err := r.w.Load(ctx, c); err != nil && !errors.Is(err, world.ErrUngenerated) {
					b.Fatal(err)
				}
			}
			t2 := time.Now()
			for _, c := range r.chunks {
				var err error
				if out, raw, err = r.f.ReadChunk(c, raw, out); err != nil {
					b.Fatal(err)
				}
				var v oracleNBT
				if err := nbt.Unmarshal(out, &v); err != nil {
					b.Fatal(err)
				}
			}
			t3 := time.Now()
			tInflate += t1.Sub(t0)
			tScreen += t2.Sub(t1)
			tReflect += t3.Sub(t2)
		}
	}
	n := float64(total) * float64(b.N)
	b.ReportMetric(n/tScreen.Seconds(), "screen-chunks/s")
	b.ReportMetric(n/tInflate.Seconds(), "inflate-chunks/s")
	b.ReportMetric(n/tReflect.Seconds(), "reflective-chunks/s")
	b.ReportMetric(tScreen.Seconds()/tInflate.Seconds(), "screen/inflate")
	b.ReportMetric(tReflect.Seconds()/tScreen.Seconds(), "reflective/screen")
}

// BenchmarkDecodeOnly decodes the same chunks, already decompressed: what
// screening adds to the floor.
func BenchmarkDecodeOnly(b *testing.B) {
	regions, total := benchRegions(b)
	var chunks [][]byte
	for _, r := range regions {
		for _, c := range r.chunks {
			out, _, err := r.f.ReadChunk(c, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, out)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range chunks {
			if _, _, err := Decode(c, DecodeOptions{}); err != nil && !errors.Is(err, world.ErrUngenerated) {
				b.Fatal(err)
			}
		}
	}
	reportChunks(b, total)
}
