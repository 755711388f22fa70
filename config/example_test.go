package config_test

import (
	"fmt"
	"strings"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
)

func ExampleLoad() {
	_, err := config.Load(strings.NewReader(`
server:
  listen: 127.0.0.1:9000
regions:
  spawn:
    world: world
    shape:
      kind: circle
      radius: 2000
      inner: 3000
    sinks:
      general: {capacity: -5}
  nether:
    world: nether
`), "rtp.yml")
	fmt.Println(err)
	// Output:
	// rtp.yml:10: regions.spawn.shape.inner: 3000 blocks (188 chunks) is not less than radius 2000 blocks (125 chunks): the hole must be smaller than the shape
	// rtp.yml:12: regions.spawn.sinks.general.capacity: -5: want 1 to 16777216
	// rtp.yml:14: regions.nether.world: no world named "nether" (worlds: world)
}

func ExampleRegion_BuildShape() {
	c := config.Default()
	r := c.Regions["default"]
	r.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, CenterX: -8, CenterZ: 100, Radius: 1000, Inner: 100}
	s, err := r.BuildShape()
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output:
	// square(center=chunk(-1, 6), radius=62, inner=7)
}
