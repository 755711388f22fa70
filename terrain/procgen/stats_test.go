package procgen

import (
	"context"
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
