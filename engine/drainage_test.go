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
