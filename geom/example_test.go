package geom_test

import (
	"fmt"

	"github.com/rtpengine/rtp/geom"
)

// The spiral starts at the centre and walks each Chebyshev ring from +x
// towards +z.
func ExampleNewCircle() {
	c, err := geom.NewCircle(geom.Chunk{X: 100, Z: -50}, 1, 0)
	if err != nil {
		panic(err)
	}
	for i := range c.Len() {
		fmt.Println(i, c.Chunk(i))
	}
	fmt.Println(c.Beyond(0), c.Beyond(1))
	// Output:
	// 0 chunk(100, -50)
	// 1 chunk(101, -50)
	// 2 chunk(100, -49)
	// 3 chunk(99, -50)
	// 4 chunk(100, -51)
	// chunk(101, -49) chunk(99, -49)
}

// In expand mode the ranks stay within the shape's size while the
// universe grows by the bad cells, and an index past the shape is a chunk
// of its extension.
func ExampleExpand() {
	sq, err := geom.NewSquare(geom.Chunk{}, 1, 0) // 9 chunks
	if err != nil {
		panic(err)
	}
	bad := int64(4) // say the memory table holds 4 bad indices
	var d geom.Distribution = geom.Expand{}
	fmt.Println(geom.ExpandedUniverse(sq, bad), d.Pick(0.99, sq.Len()))
	i, _ := geom.IndexOf(sq, geom.Chunk{X: 2, Z: -1})
	fmt.Println(i, geom.ChunkAt(sq, i))
	// Output:
	// 13 8
	// 9 chunk(2, -1)
}

func ExampleNewRectangle() {
	r, err := geom.NewRectangle(geom.RectangleSpec{RadiusX: 10, RadiusZ: 2, Rotation: 90})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Len(), r.Contains(geom.Chunk{X: 0, Z: 10}), r.Contains(geom.Chunk{X: 10, Z: 0}))
	_, err = geom.NewRectangle(geom.RectangleSpec{RadiusX: -1, InnerZ: 3})
	fmt.Println(err)
	// Output:
	// 105 true false
	// geom: rectangle radius x -1 outside [0, 2097152]
	// geom: rectangle inner z 3 exceeds radius z 0
}
