package geom

import (
	"math/rand/v2"
	"testing"
)

var (
	sinkChunk Chunk
	sinkIndex int64
)

func benchShapes(b *testing.B) []struct {
	name string
	s    Shape
} {
	b.Helper()
	must := func(s Shape, err error) Shape {
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	return []struct {
		name string
		s    Shape
	}{
		{"circle/r=1000", must(NewCircle(Chunk{}, 1000, 0))},
		{"circle/r=10000", must(NewCircle(Chunk{}, 10_000, 0))},
		{"circle/r=1000000", must(NewCircle(Chunk{}, 1_000_000, 0))},
		{"square/r=10000", must(NewSquare(Chunk{}, 10_000, 0))},
		{"rectangle/r=10000", must(NewRectangle(RectangleSpec{RadiusX: 10_000, RadiusZ: 6_000,
			InnerX: 2_000, InnerZ: 1_000, Rotation: 30}))},
	}
}

// benchIndices returns 4096 random indices below n.
func benchIndices(n int64) []int64 {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	idx := make([]int64, 4096)
	for k := range idx {
		idx[k] = rng.Int64N(n)
	}
	return idx
}

func BenchmarkShapeChunk(b *testing.B) {
	for _, bs := range benchShapes(b) {
		b.Run(bs.name, func(b *testing.B) {
			idx := benchIndices(bs.s.Len())
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				sinkChunk = bs.s.Chunk(idx[k&4095])
				k++
			}
		})
	}
}

func BenchmarkShapeIndex(b *testing.B) {
	for _, bs := range benchShapes(b) {
		b.Run(bs.name, func(b *testing.B) {
			chunks := make([]Chunk, 4096)
			for k, i := range benchIndices(bs.s.Len()) {
				chunks[k] = bs.s.Chunk(i)
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				sinkIndex, _ = bs.s.Index(chunks[k&4095])
				k++
			}
		})
	}
}

func BenchmarkShapeBeyond(b *testing.B) {
	for _, bs := range benchShapes(b) {
		b.Run(bs.name, func(b *testing.B) {
			// Half in the clipped rings, half in whole rings.
			idx := benchIndices(2 * bs.s.Len())
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				sinkChunk = bs.s.Beyond(idx[k&4095])
				k++
			}
		})
	}
}

func BenchmarkPick(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	us := make([]float64, 4096)
	for k := range us {
		us[k] = rng.Float64()
	}
	for _, bd := range []struct {
		name string
		d    Distribution
	}{
		{"flat", Flat{}},
		{"weighted", Weighted{Exponent: 2}},
		{"normal", Normal{Mean: 0.5, Deviation: 0.2}},
	} {
		b.Run(bd.name, func(b *testing.B) {
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				sinkIndex = bd.d.Pick(us[k&4095], 314_159_265)
				k++
			}
		})
	}
}
