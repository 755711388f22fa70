package procworld

import (
	"context"
	"math"
	"testing"
	"unsafe"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
)

// TestGridKeepsWhatBuildReads compacts generated tiles, dry and wet, and
// checks every sample against the tile: each floor is floorY of its
// elevation, each water surface floorY of the tile's or noWater where the
// tile has NaN, the covers are the tile's, and a tile dry everywhere keeps
// no water at all.
func TestGridKeepsWhatBuildReads(t *testing.T) {
	p := procgen.DefaultParams()
	p.Seed = 7
	gen, err := procgen.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var dry, wet int
	for k := int64(0); k < 24 && (dry == 0 || wet == 0); k++ {
		req := terrain.Request{OriginX: k * 512, OriginZ: -k * 384, Size: 64, Resolution: 64, Border: 1}
		tile, err := gen.Tile(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		g := newGrid(tile)
		if g.originX != req.OriginX || g.originZ != req.OriginZ || g.side != req.Side() || g.border != 1 || g.res != 64 {
			t.Fatalf("grid of %v: origin (%d, %d), side %d, border %d, res %d", req, g.originX, g.originZ, g.side, g.border, g.res)
		}
		for i, e := range tile.Elevations {
			if int(g.floors[i]) != floorY(e) {
				t.Fatalf("%v: floor %d is %d, want floorY(%v) = %d", req, i, g.floors[i], e, floorY(e))
			}
		}
		anyWet := false
		for i, w := range tile.Water {
			want := int16(noWater)
			if !math.IsNaN(float64(w)) {
				want, anyWet = int16(floorY(w)), true
			}
			if got := g.waterAt(i); got != want {
				t.Fatalf("%v: water %d is %d, want %d (tile %v)", req, i, got, want, w)
			}
			if g.cover[i] != tile.Cover[i] {
				t.Fatalf("%v: cover %d is %v, want %v", req, i, g.cover[i], tile.Cover[i])
			}
		}
		if anyWet {
			wet++
		} else {
			dry++
			if g.water != nil {
				t.Fatalf("%v: a dry tile keeps %d water samples", req, len(g.water))
			}
		}
	}
	if dry == 0 || wet == 0 {
		t.Fatalf("found %d dry and %d wet tiles; the test needs both", dry, wet)
	}
}

// TestColumnSize pins the column summary's size: a resident chunk holds
// 256 of them, and field order alone decides between 20 bytes and 24.
func TestColumnSize(t *testing.T) {
	if got := unsafe.Sizeof(world.Column{}); got != 20 {
		t.Errorf("world.Column is %d bytes, want 20", got)
	}
}

// BenchmarkNewGrid measures compacting a 64-block tile with water: the
// cost a tile read from the archive adds before its chunks are built.
func BenchmarkNewGrid(b *testing.B) {
	p := procgen.DefaultParams()
	gen, err := procgen.New(p)
	if err != nil {
		b.Fatal(err)
	}
	var tile *terrain.Tile
	for k := int64(0); tile == nil; k++ {
		req := terrain.Request{OriginX: k * 512, OriginZ: 0, Size: 64, Resolution: 64, Border: 1}
		t, err := gen.Tile(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if newGrid(t).water != nil {
			tile = t
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		newGrid(tile)
	}
}
