package worldtest

import (
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// TestSane: Sane accepts a good chunk and names each broken rule.
func TestSane(t *testing.T) {
	pos := geom.Chunk{X: 2, Z: -3}
	good := func() *world.Chunk {
		ch := world.NewChunk(pos, -64, 320)
		for i := range ch.Columns {
			ch.Columns[i] = world.Column{Top: 70, Ground: world.Block("minecraft:stone")}
		}
		ch.Columns[5] = world.Column{Top: world.NoTop}
		ch.Columns[6] = world.Column{Top: 62, Ground: world.Block("minecraft:water[level=0]"), Fluid: true}
		return ch
	}
	if err := Sane(good(), pos); err != nil {
		t.Fatalf("Sane(good) = %v", err)
	}
	for name, breakIt := range map[string]func(*world.Chunk){
		"position":   func(c *world.Chunk) { c.Pos.X++ },
		"height":     func(c *world.Chunk) { c.MaxY = c.MinY },
		"top high":   func(c *world.Chunk) { c.Columns[0].Top = 320 },
		"top low":    func(c *world.Chunk) { c.Columns[0].Top = -65 },
		"air top":    func(c *world.Chunk) { c.Columns[0].Ground = world.Air },
		"void solid": func(c *world.Chunk) { c.Columns[5].Ground = world.Block("minecraft:stone") },
		"fluid flag": func(c *world.Chunk) { c.Columns[6].Fluid = false },
		"dry fluid":  func(c *world.Chunk) { c.Columns[0].Fluid = true },
		"blocks":     func(c *world.Chunk) { c.Blocks = airBlocks{} },
	} {
		c := good()
		breakIt(c)
		if err := Sane(c, pos); err == nil {
			t.Errorf("%s: Sane accepted a broken chunk", name)
		}
	}
	if err := Sane(nil, pos); err == nil {
		t.Error("Sane(nil) = nil")
	}
}

type airBlocks struct{}

func (airBlocks) Block(x, y, z int) world.BlockID { return world.Air }
