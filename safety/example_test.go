package safety_test

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
)

func Example() {
	var rules safety.Rules
	err := yaml.Unmarshal([]byte(`
unsafe: ["#unsafe", "mymod:acid"]
biomes:
  deny: ["#ocean"]
`), &rules)
	if err != nil {
		panic(err)
	}
	k, err := safety.New(rules)
	if err != nil {
		panic(err)
	}

	c := world.NewChunk(geom.Chunk{X: 1, Z: 2}, -64, 320)
	for i := range c.Columns {
		c.Columns[i] = world.Column{
			Top:    70,
			Ground: world.Block("minecraft:grass_block[snowy=false]"),
			Above:  [2]world.BlockID{world.Air, world.Block("minecraft:short_grass")},
			Biome:  world.Biome("minecraft:plains"),
		}
	}
	c.Columns[4*world.ChunkSize+3].Ground = world.Block("mymod:acid")

	r, ok := k.CheckColumn(c, 3, 4)
	fmt.Println(ok, r.Reason, r.Cause())
	r, ok = k.CheckColumn(c, 5, 4)
	fmt.Println(ok, "y", r.Y)
	// Screen picks one of the safe columns at random.
	x, z, y, _, ok := k.Screen(c)
	fmt.Println(ok, x >= 0 && x < 16 && z >= 0 && z < 16 && (x != 3 || z != 4), y)
	// Output:
	// false ground unsafe safety
	// true y 71
	// true true 71
}
