package procgen

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// FuzzTile checks that no combination of params and request panics: New
// rejects invalid params, Tile rejects invalid requests, and everything
// else yields a tile that validates. Generation is costly (a fresh seed
// means fresh drainage cells), so requests whose samples spread over more
// than 2048 blocks are only validated: they run with a cancelled context,
// which must still return an error.
func FuzzTile(f *testing.F) {
	f.Add(int64(0), 1.0, 63, true, 0.35, int64(100), int64(-200), int32(64), int32(8), int32(1))
	f.Add(int64(-7), 0.5, -64, false, 1.0, int64(-1030), int64(1030), int32(16), int32(16), int32(0))
	f.Add(int64(3), 4.0, 319, true, 0.0, int64(MaxCoordinate-16), int64(0), int32(16), int32(3), int32(4))
	f.Add(int64(0), 0.0, 500, true, 2.0, int64(0), int64(0), int32(0), int32(0), int32(-1))
	f.Add(int64(1), 1.0, 63, true, 0.35, int64(-1<<62), int64(1<<62), int32(1<<30), int32(4096), int32(64))
	f.Fuzz(func(t *testing.T, seed int64, relief float64, sea int, clamp bool, volc float64, ox, oz int64, size, res, border int32) {
		p := DefaultParams()
		p.Seed, p.Relief, p.SeaLevel, p.SeabedClamp = seed, relief, sea, clamp
		p.Biome.VolcanicFrequency = volc
		g, err := NewWithOptions(p, Options{CacheCells: 4})
		if err != nil {
			if p.Validate() == nil {
				t.Fatalf("New rejected valid params: %v", err)
			}
			return
		}
		req := terrain.Request{OriginX: ox, OriginZ: oz, Size: size, Resolution: res, Border: border}
		ctx := context.Background()
		if res <= 0 || res > 32 || int64(size)*int64(req.Side())/int64(res) > 2048 {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		tile, err := g.Tile(ctx, req)
		if err != nil {
			if tile != nil {
				t.Fatalf("Tile returned a tile and an error %v", err)
			}
			return
		}
		if err := tile.Validate(req); err != nil {
			t.Fatalf("Tile(%v) is invalid: %v", req, err)
		}
	})
}
