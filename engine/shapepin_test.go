package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stores/sqlite"
)

// defaultRegionKey is the persisted identity of rtp serve's default region
// (no configuration file), as the engine computed it before the shape had
// one type: a change drops every location kept across the upgrade.
const defaultRegionKey = `{"World":{"Kind":"procedural","Procedural":{"Seed":0,"Relief":1,"SeaLevel":63,"SeabedClamp":true,` +
	`"Biome":{"TemperatureScale":2400,"TemperatureOffset":0,"MoistureScale":1800,"MoistureOffset":0,"VolcanicFrequency":0.35,"SnowLine":105}},` +
	`"Path":"","Dimension":"overworld","RegionDir":""},` +
	`"Shape":{"Kind":"circle","CenterX":0,"CenterZ":0,"Radius":4096,"Inner":0,"RadiusX":4096,"RadiusZ":4096,"InnerX":0,"InnerZ":0,"Rotation":0},` +
	`"Safety":{"Unsafe":["#unsafe"],"AirLike":null,"Solid":null,"UnknownBlocks":"unsafe","KnownNamespaces":null,"Headroom":2,` +
	`"MinY":null,"MaxY":null,"Biomes":{"Allow":null,"Deny":null},"Vertical":{"Strategy":"surface","Direction":"","Start":null,"Step":0,"Y":null},` +
	`"Border":null},"Verifiers":["claims"]}`

// TestRegionKeyOfDefaultConfig: the default configuration's region keeps
// the key it was persisted under.
func TestRegionKeyOfDefaultConfig(t *testing.T) {
	s, err := config.Default().Spec()
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.RegionKey(s, config.DefaultRegionName, []string{"claims"})
	if err != nil {
		t.Fatal(err)
	}
	if got != defaultRegionKey {
		t.Errorf("RegionKey(default config) =\n%s\nwant\n%s", got, defaultRegionKey)
	}
}

// TestRegionKeyShapes: the shape part of the key, for shapes written in
// a configuration file and in a Spec, is what it was before the shape had
// one type.
func TestRegionKeyShapes(t *testing.T) {
	fromFile := func(shape string) engine.Spec {
		t.Helper()
		c, err := config.Load(strings.NewReader("regions:\n  r:\n    shape: "+shape+"\n"), "rtp.yml")
		if err != nil {
			t.Fatalf("config.Load(%s): %v", shape, err)
		}
		s, err := c.Spec()
		if err != nil {
			t.Fatalf("Spec(%s): %v", shape, err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		spec engine.Spec
		want string
	}{
		{"file square with a hole", fromFile("{kind: square, center_x: 16, radius: 512, inner: 64}"),
			`{"Kind":"square","CenterX":16,"CenterZ":0,"Radius":512,"Inner":64,"RadiusX":4096,"RadiusZ":4096,"InnerX":0,"InnerZ":0,"Rotation":0}`},
		{"file rectangle", fromFile("{kind: rectangle, center_x: -100, center_z: 37, radius_x: 1000, radius_z: 300, inner_x: 100, inner_z: 50, rotation: 30}"),
			`{"Kind":"rectangle","CenterX":-100,"CenterZ":37,"Radius":4096,"Inner":0,"RadiusX":1000,"RadiusZ":300,"InnerX":100,"InnerZ":50,"Rotation":30}`},
		// A radius of 0 written in the file takes the engine's default
		// radius, as it always has.
		{"file radius 0", fromFile("{radius: 0}"),
			`{"Kind":"circle","CenterX":0,"CenterZ":0,"Radius":4096,"Inner":0,"RadiusX":4096,"RadiusZ":4096,"InnerX":0,"InnerZ":0,"Rotation":0}`},
		{"spec radius only", engine.Spec{Regions: map[string]engine.RegionSpec{"r": {Shape: geom.ShapeSpec{Radius: 256}}}},
			`{"Kind":"circle","CenterX":0,"CenterZ":0,"Radius":256,"Inner":0,"RadiusX":4096,"RadiusZ":4096,"InnerX":0,"InnerZ":0,"Rotation":0}`},
		{"spec rectangle", engine.Spec{Regions: map[string]engine.RegionSpec{"r": {Shape: geom.ShapeSpec{Kind: geom.ShapeRectangle, RadiusZ: 64, Rotation: -12.5}}}},
			`{"Kind":"rectangle","CenterX":0,"CenterZ":0,"Radius":4096,"Inner":0,"RadiusX":4096,"RadiusZ":64,"InnerX":0,"InnerZ":0,"Rotation":-12.5}`},
	} {
		key, err := engine.RegionKey(c.spec, "r", nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var parts map[string]json.RawMessage
		if err := json.Unmarshal([]byte(key), &parts); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := string(parts["Shape"]); got != c.want {
			t.Errorf("%s: shape key\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	// A region given as a geom.Shape is keyed by its description.
	sq, err := geom.NewSquare(geom.Chunk{X: 3, Z: -2}, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	key, err := engine.RegionKey(engine.Spec{Regions: map[string]engine.RegionSpec{"r": {Geom: sq}}}, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(sq.String())
	if !strings.Contains(key, `"Shape":`+string(want)+`,`) {
		t.Errorf("key of a Geom region %s lacks its description %s", key, want)
	}
}

// TestMapRegionsWire: the map's description of the regions, read by its
// page's script, is what it was before the shape had one type: a circle
// and a square with their hole, a rotated rectangle with the larger of
// its holes, a region given as a geom.Shape as the square around it.
func TestMapRegionsWire(t *testing.T) {
	sq, err := geom.NewSquare(geom.Chunk{X: 3, Z: -2}, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec := engine.Spec{
		Stores:  sqlite.Stores{},
		DataDir: t.TempDir(),
		Regions: map[string]engine.RegionSpec{
			"a-circle": {Shape: geom.ShapeSpec{CenterX: 40, CenterZ: -8, Radius: 300, Inner: 20}},
			"b-square": {Shape: geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 100}},
			"c-rect": {Shape: geom.ShapeSpec{Kind: geom.ShapeRectangle, CenterX: -100, CenterZ: 37,
				RadiusX: 1000, RadiusZ: 300, InnerX: 100, InnerZ: 50, Rotation: 30}},
			"d-geom": {Geom: sq},
		},
	}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(t.Context()) })
	got, err := json.Marshal(engine.MapBackend(e).Regions())
	if err != nil {
		t.Fatal(err)
	}
	const want = `[` +
		`{"name":"a-circle","world":"world","shape":{"kind":"circle","centerX":40,"centerZ":-8,"radius":300,"innerRadius":20},"chunks":[-18,-21,22,19],"border":null},` +
		`{"name":"b-square","world":"world","shape":{"kind":"square","centerX":0,"centerZ":0,"radius":100},"chunks":[-8,-8,7,7],"border":null},` +
		`{"name":"c-rect","world":"world","shape":{"kind":"rectangle","centerX":-100,"centerZ":37,"radiusX":1000,"radiusZ":300,"rotation":30,"innerRadius":100},"chunks":[-71,-47,58,50],"border":null},` +
		`{"name":"d-geom","world":"world","shape":{"kind":"square","centerX":56,"centerZ":-24,"radius":88},"chunks":[-3,-8,9,4],"border":null}]`
	if string(got) != want {
		t.Errorf("map regions\n%s\nwant\n%s", got, want)
	}
}
