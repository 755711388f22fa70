package procgen

import (
	"context"
	"flag"
	"math"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// shares samples an area of tiles and returns the fraction of each cover
// and of steep dry samples (slope above 1, i.e. 45 degrees).
func shares(t testing.TB, g *Generator, x0, z0 int64, tiles int, size, res int32) (cover [terrain.NumCovers]float64, steep float64) {
	t.Helper()
	total := 0
	spacing := float64(size) / float64(res)
	for tz := range tiles {
		for tx := range tiles {
			req := terrain.Request{OriginX: x0 + int64(tx)*int64(size), OriginZ: z0 + int64(tz)*int64(size), Size: size, Resolution: res, Border: 1}
			tile, err := g.Tile(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			side := req.Side()
			for j := range int(res) {
				for i := range int(res) {
					k := j*int(res) + i
					cover[tile.Cover[k]]++
					total++
					if !math.IsNaN(float64(tile.Water[k])) || tile.Cover[k] == terrain.CoverLava {
						continue
					}
					e := func(di, dj int) float64 { return float64(tile.Elevations[(j+1+dj)*side+i+1+di]) }
					dx := (e(1, 0) - e(-1, 0)) / (2 * spacing)
					dz := (e(0, 1) - e(0, -1)) / (2 * spacing)
					if dx*dx+dz*dz > 1 {
						steep++
					}
				}
			}
		}
	}
	for c := range cover {
		cover[c] /= float64(total)
	}
	return cover, steep / float64(total)
}

var measure = flag.Bool("procgen.shares", false, "measure cover and steep shares over a large area")

// TestMeasureShares reports cover shares over 64 tiles of 512 blocks at
// 2-block spacing spread across a 32768-block square (a measurement for
// humans; TestCoverDistribution is the assertion).
func TestMeasureShares(t *testing.T) {
	if !*measure {
		t.Skip("a measurement, not a test: run with -procgen.shares")
	}
	g, err := NewWithOptions(DefaultParams(), Options{CacheCells: 8})
	if err != nil {
		t.Fatal(err)
	}
	var cov [terrain.NumCovers]float64
	var steep float64
	const n = 8
	for tz := range n {
		for tx := range n {
			c, s := shares(t, g, int64(tx-n/2)*4096+300, int64(tz-n/2)*4096+300, 1, 512, 256)
			for k := range c {
				cov[k] += c[k] / (n * n)
			}
			steep += s / (n * n)
		}
	}
	land, unsafeLand := 1-cov[terrain.CoverOcean], steep
	for c, v := range cov {
		t.Logf("%-10s %5.2f%%", terrain.Cover(c), 100*v)
		switch terrain.Cover(c) {
		case terrain.CoverRiver, terrain.CoverLake, terrain.CoverLava:
			unsafeLand += v
		}
	}
	t.Logf("steep (slope > 1) %.2f%% of all samples", 100*steep)
	t.Logf("unsafe: %.2f%% of all samples, %.2f%% of land (river, lake, lava, steep)", 100*(unsafeLand+cov[terrain.CoverOcean]), 100*unsafeLand/land)
}
