package anvil_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/worldtest"
)

// TestSourceContract runs the world.Source contract suite on real saves
// of several game versions (numeric ids, the flattening, the 1.18 height
// change), with and without block data: present chunks and empty slots of
// the fixture's region file, and a region without a file.
func TestSourceContract(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		region geom.Region
	}{
		{"prismarine-provider-anvil/1.12.2", geom.Region{X: 0, Z: -1}},
		{"prismarine-provider-anvil/1.16", geom.Region{X: 0, Z: -1}},
		{"prismarine-provider-anvil/1.20.6", geom.Region{X: 0, Z: 0}},
	} {
		dir := anvilfixture.Path(t, tc.dir)
		present, ungenerated := scanRegion(t, dir, tc.region)
		// A region without a file holds no chunk at all.
		ungenerated = append(ungenerated, geom.Region{X: tc.region.X + 40, Z: tc.region.Z}.Origin())
		for _, blocks := range []bool{false, true} {
			name := filepath.Base(tc.dir)
			if blocks {
				name += "/blocks"
			}
			t.Run(name, func(t *testing.T) {
				worldtest.Run(t, func(t *testing.T) worldtest.Case {
					w, err := anvil.Open(dir, anvil.Options{Blocks: blocks})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = w.Close() })
					return worldtest.Case{Source: w, Present: present, Ungenerated: ungenerated}
				})
			})
		}
	}
}

// scanRegion returns up to 12 chunks of region that load and up to 4 that
// are not generated, read through a world of its own.
func scanRegion(t *testing.T, dir string, region geom.Region) (present, ungenerated []geom.Chunk) {
	t.Helper()
	w, err := anvil.Open(dir, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < 1024 && (len(present) < 12 || len(ungenerated) < 4); i++ {
		c := anvil.SlotChunk(region, i)
		_, err := w.Load(t.Context(), c)
		switch {
		case err == nil && len(present) < 12:
			present = append(present, c)
		case errors.Is(err, world.ErrUngenerated) && len(ungenerated) < 4:
			ungenerated = append(ungenerated, c)
		}
	}
	if len(present) == 0 {
		t.Fatalf("%s: no chunk of region %v loads", dir, region)
	}
	return present, ungenerated
}
