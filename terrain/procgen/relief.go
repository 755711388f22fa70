package procgen

import (
	"context"

	"github.com/rtpengine/rtp/terrain"
)

// ReliefName is the producer name of a Relief: its tiles differ from the
// Generator's (no drainage), so they never share an identity with them.
const ReliefName = "procgen-relief"

// Relief is the generator's surface without its drainage: the ground of
// the noise fields (continents, hills, mountains, terraces, volcanoes),
// the sea, and the covers of dry land, but no rivers or lakes and no
// carving under them. It is a terrain.Source for zoomed-out maps.
//
// Why: drainage is computed on 1024-block cells (some tens of
// milliseconds each, see the package documentation), so a coarse tile
// sampled with it costs a cell per 1024 x 1024 blocks it spans whatever
// its resolution (a tile 8192 blocks across needs about 81); without it a
// sample costs the same at any spacing, and a tile of N x N samples costs
// about the same at every scale. Drainage is resolved on an 8-block node
// grid, so at 8 blocks or more per sample a channel is at most about a
// sample wide; lakes, which can be wider, are left out too.
//
// Every sample is a pure function of the Params and its position, as for
// the Generator: overlapping Relief tiles agree bit for bit on shared
// positions, at any origin and resolution. Where a position has no
// drainage (no river, lake or carving there) its sample equals the
// Generator's. Its Producer is ReliefName at the generator's Version, its
// Params the generator's, so an archive keeps its tiles apart from the
// generator's.
//
// Make one with Generator.Relief; the zero value is not usable. A Relief
// is safe for concurrent use.
type Relief struct {
	g *Generator
}

var _ terrain.Source = Relief{}

// Relief returns the relief of g: g's surface without drainage.
func (g *Generator) Relief() Relief { return Relief{g: g} }

// Producer returns procgen-relief@Version.
func (r Relief) Producer() terrain.Producer {
	return terrain.Producer{Name: ReliefName, Version: Version}
}

// Params returns the generator's Params value.
func (r Relief) Params() any { return r.g.params }

// Tile samples the relief for req. See terrain.Source for the contract;
// requests are limited as for the Generator.
func (r Relief) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	return r.g.tile(ctx, req, false)
}
