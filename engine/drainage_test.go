package engine_test

import (
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/terrain/procgen"
)

// TestDrainageCellsCoverRegions: the generator keeps every drainage cell
// (1024 blocks square) its regions touch, so random screening over them
// computes each once: the default region of radius 4096 touches about 81.
// A small region keeps the generator's default, a huge one the bound.
func TestDrainageCellsCoverRegions(t *testing.T) {
	for _, tc := range []struct {
		radius   int64
		min, max int
	}{
		{4096, 81, 120},
		{256, procgen.DefaultCacheCells, procgen.DefaultCacheCells},
		{1 << 20, 512, 512},
	} {
		cfg := testConfig(t)
		rc := cfg.Regions[config.DefaultRegionName]
		rc.Shape.Radius = tc.radius
		cfg.Regions[config.DefaultRegionName] = rc
		e := newEngine(t, cfg)
		if got := engine.DrainageCells(e, config.DefaultWorldName); got < tc.min || got > tc.max {
			t.Errorf("radius %d: %d drainage cells kept, want %d to %d", tc.radius, got, tc.min, tc.max)
		}
	}
}

// TestTileSizeFitsArchive: the procedural world reads the smallest tiles
// whose count over its regions the archive holds: one chunk a tile for a
// small region, 32 blocks for the default region of radius 4096 (205,887
// chunks, 51,472 tiles of 65,536 entries), and the default 64 beyond;
// unless its tile cache holds every tile of the region at some size,
// when it reads the smallest such (the load-test configuration: radius
// 2048, 4,096 tiles cached, 3,217 tiles of 64 blocks against 12,868 of
// 32).
func TestTileSizeFitsArchive(t *testing.T) {
	for _, tc := range []struct {
		radius    int64
		tileCache int // 0: the default
		want      int
	}{
		{512, 0, 16},
		{4096, 0, 32},
		{16384, 0, 64},
		{2048, 0, 16},
		{2048, 4096, 64},
		{2048, 16384, 32},
		{512, 4096, 16},
		{16384, 65536, 64},
	} {
		cfg := testConfig(t)
		rc := cfg.Regions[config.DefaultRegionName]
		rc.Shape.Radius = tc.radius
		cfg.Regions[config.DefaultRegionName] = rc
		if tc.tileCache != 0 {
			w := cfg.Worlds[config.DefaultWorldName]
			w.TileCache = tc.tileCache
			cfg.Worlds[config.DefaultWorldName] = w
		}
		e := newEngine(t, cfg)
		if got := engine.TileSize(e, config.DefaultWorldName); got != tc.want {
			t.Errorf("radius %d, tile cache %d: tile size %d, want %d", tc.radius, tc.tileCache, got, tc.want)
		}
	}
}
