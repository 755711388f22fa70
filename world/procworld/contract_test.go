package procworld_test

import (
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world/procworld"
	"github.com/rtpengine/rtp/world/worldtest"
)

// TestSourceContract runs the world.Source contract suite on the default
// procedural world: chunks around the origin and across a tile edge, and
// chunks past the world's edge.
func TestSourceContract(t *testing.T) {
	worldtest.Run(t, func(t *testing.T) worldtest.Case {
		gen, err := procgen.New(procgen.DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		w, err := procworld.New(gen, procworld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return worldtest.Case{
			Source:  w,
			Present: []geom.Chunk{{X: 0, Z: 0}, {X: -1, Z: 3}, {X: 3, Z: 4}, {X: 4, Z: 4}, {X: -40, Z: 17}},
			Outside: []geom.Chunk{{X: procworld.MaxChunk, Z: 0}, {X: 0, Z: -procworld.MaxChunk - 1}},
		}
	})
}
