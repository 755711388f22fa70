package anvil

import (
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// Landing is a place a player could stand: on the ground block at Y, with
// feet at Y+1, in block column Block. It is a plain value.
type Landing struct {
	Block geom.Block
	Y     int
}

// Landings returns where the reader's own simple rule lets a player land in
// chunk c, in column order. It is the reader's sanity check for tests and
// tools, not the engine's safety policy (which is configurable and lives in
// its own package). The rule: the ground block blocks movement and is not a
// fluid or a hazard (lava, water, magma, cactus, fire, powder snow, leaves,
// ...), and the two blocks above are air or short plants. In a chunk with
// a ceiling (world.Chunk.HasCeiling), each column is searched downwards
// from below its roof with c.Blocks (no landing without them), the head
// below the ceiling; elsewhere the column's top is the only candidate, so
// void columns have none.
func Landings(c *world.Chunk) []Landing {
	var out []Landing
	origin := c.Pos.Origin()
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			col := c.Column(x, z)
			if col.Top == world.NoTop {
				continue
			}
			at := geom.Block{X: origin.X + int64(x), Z: origin.Z + int64(z)}
			if !c.HasCeiling {
				if standable(col.Ground, col.Above[0], col.Above[1]) {
					out = append(out, Landing{Block: at, Y: int(col.Top)})
				}
				continue
			}
			if c.Blocks == nil {
				continue
			}
			// Ground at y, feet at y+1, head at y+2 below the ceiling.
			for y := min(int(col.Top), int(c.Ceiling)-3); y >= int(c.MinY); y-- {
				b := c.Blocks
				if standable(b.Block(x, y, z), b.Block(x, y+1, z), b.Block(x, y+2, z)) {
					out = append(out, Landing{Block: at, Y: y})
					break
				}
			}
		}
	}
	return out
}

// standable applies the rule of Landings to a ground block and the two
// blocks above it.
func standable(ground, above1, above2 world.BlockID) bool {
	g := classOf(ground)
	return g&blocking != 0 && g&(fluid|hazard) == 0 &&
		classOf(above1)&airLike != 0 && classOf(above2)&airLike != 0
}

func classOf(id world.BlockID) class {
	if id.IsAir() {
		return airLike
	}
	return classify(id.String())
}
