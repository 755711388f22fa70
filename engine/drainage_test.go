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
// chunks, 51,472 tiles of 65,536 entries), and the default 64 beyond.
func TestTileSizeFitsArchive(t *testing.T) {
	for _, tc := range []struct {
		radius int64
		want   int
	}{
		{512, 16},
		{4096, 32},
		{16384, 64},
	} {
		cfg := testConfig(t)
		rc := cfg.Regions[config.DefaultRegionName]
		rc.Shape.Radius = tc.radius
		cfg.Regions[config.DefaultRegionName] = rc
		e := newEngine(t, cfg)
		if got := engine.TileSize(e, config.DefaultWorldName); got != tc.want {
			t.Errorf("radius %d: tile size %d, want %d", tc.radius, got, tc.want)
		}
	}
}
