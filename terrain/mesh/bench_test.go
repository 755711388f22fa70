package mesh

import (
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// benchTile is a 256x256 tile with a one-sample border, the size a map
// client requests per tile.
func benchTile() *terrain.Tile {
	return makeTile(terrain.Request{OriginX: 1 << 20, OriginZ: -(1 << 20), Size: 256, Resolution: 256, Border: 1}, hills)
}

func BenchmarkBuildFull(b *testing.B) {
	tile := benchTile()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(tile, Full); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(256*256), "ns/vertex")
}

func BenchmarkBuildLow(b *testing.B) {
	tile := benchTile()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(tile, Low); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	m := mustBuild(b, benchTile(), 1)
	buf, err := Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendEncode(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	buf, err := Encode(mustBuild(b, benchTile(), 1))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
