package webmap

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rtpengine/rtp/geom"
)

// TestRegionJSON: a region encodes as the page reads it. A circle or a
// square gives its radius and hole; a rectangle its half-extents,
// rotation and the larger half-extent of its hole, never the radius or
// hole of the other kinds; zeros but the centre are left out.
func TestRegionJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Region
		want string
	}{
		{"circle", Region{Name: "c", World: "w", Shape: geom.ShapeSpec{Kind: geom.ShapeCircle, CenterX: -3, Radius: 300, Inner: 20, RadiusX: 7, InnerX: 2, Rotation: 9},
			Chunks: [4]int64{-20, -20, 19, 19}, Border: &Border{CenterX: 0.5, Size: 1000}},
			`{"name":"c","world":"w","shape":{"kind":"circle","centerX":-3,"centerZ":0,"radius":300,"innerRadius":20},"chunks":[-20,-20,19,19],"border":{"centerX":0.5,"centerZ":0,"size":1000}}`},
		{"square without a hole", Region{Name: "s", World: "w", Shape: geom.ShapeSpec{Kind: geom.ShapeSquare, CenterZ: 5, Radius: 64}},
			`{"name":"s","world":"w","shape":{"kind":"square","centerX":0,"centerZ":5,"radius":64},"chunks":[0,0,0,0],"border":null}`},
		{"rectangle", Region{Name: "r", World: "w", Shape: geom.ShapeSpec{Kind: geom.ShapeRectangle, Radius: 4096, Inner: 1,
			RadiusX: 1000, RadiusZ: 300, InnerX: 50, InnerZ: 100, Rotation: 30}},
			`{"name":"r","world":"w","shape":{"kind":"rectangle","centerX":0,"centerZ":0,"radiusX":1000,"radiusZ":300,"rotation":30,"innerRadius":100},"chunks":[0,0,0,0],"border":null}`},
	} {
		got, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: Marshal = %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// Every field of Region has its key: a field added to Region and not
	// to regionJSON fails here.
	var keys map[string]json.RawMessage
	b, _ := json.Marshal(Region{})
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if n := reflect.TypeFor[Region]().NumField(); len(keys) != n || reflect.TypeFor[regionJSON]().NumField() != n {
		t.Errorf("Region has %d fields, its JSON %d keys (%s)", n, len(keys), b)
	}
}
