package meshcache_test

import (
	"fmt"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/mesh"
	"github.com/rtpengine/rtp/terrain/meshcache"
)

func Example() {
	var cache meshcache.Cache
	capacity := meshcache.ProfileBalanced.Capacity()

	tile := &terrain.Tile{
		Request:    terrain.Request{OriginX: 256, OriginZ: -512, Size: 16, Resolution: 2},
		Elevations: []float32{64, 65, 64, 66},
	}
	full, err := mesh.Build(tile, mesh.Full)
	if err != nil {
		panic(err)
	}
	fmt.Println(cache.Store("tile:16:-32", full, meshcache.SourceBakedFull, capacity))
	fmt.Println(cache.Store("tile:16:-32:tint", full, meshcache.SourceBiomeTint, capacity))

	// Later, the tile is revisited.
	if r, ok := cache.Restore("tile:16:-32"); ok {
		fmt.Println(r.Source, r.Mesh == full, r.Mesh.TriangleCount())
	}
	fmt.Printf("%+v\n", cache.Snapshot().Entries)
	// Output:
	// true
	// false
	// baked_full true 2
	// [{Key:tile:16:-32 Source:baked_full}]
}
