package engine

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// TestRegionKeyUnchanged: the key of the locations kept across restarts
// is, for the default world and shape, the JSON written before Spec
// existed, so that an upgrade keeps them.
func TestRegionKeyUnchanged(t *testing.T) {
	s, err := Spec{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	r := s.Regions[DefaultRegionName]
	b, err := json.Marshal(struct {
		World worldKey
		Shape any
	}{keyOf(s.Worlds[r.World]), shapeKeyOf(r)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"World":{"Kind":"procedural","Procedural":{"Seed":0,"Relief":1,"SeaLevel":63,"SeabedClamp":true,` +
		`"Biome":{"TemperatureScale":2400,"TemperatureOffset":0,"MoistureScale":1800,"MoistureOffset":0,"VolcanicFrequency":0.35,"SnowLine":105}},` +
		`"Path":"","Dimension":"overworld","RegionDir":""},` +
		`"Shape":{"Kind":"circle","CenterX":0,"CenterZ":0,"Radius":4096,"Inner":0,"RadiusX":4096,"RadiusZ":4096,"InnerX":0,"InnerZ":0,"Rotation":0}}`
	if string(b) != want {
		t.Errorf("key\n%s\nwant\n%s", b, want)
	}
}

// TestResolve: the zero Spec resolves to one procedural world and one
// region on it with every default; errors name what is wrong.
func TestResolve(t *testing.T) {
	s, err := Spec{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Worlds) != 1 || s.Worlds[DefaultWorldName].Procedural == nil || len(s.Regions) != 1 {
		t.Fatalf("zero spec resolved to %+v", s)
	}
	r := s.Regions[DefaultRegionName]
	if r.World != DefaultWorldName || r.Live != DefaultRegionLive() || r.Shape.Radius != DefaultRadius || r.Distribution != (geom.Flat{}) {
		t.Errorf("default region %+v", r)
	}
	if s.Database != inDir(DefaultDataDir, DefaultDatabase) || s.Archive.Path != inDir(DefaultDataDir, DefaultArchive) {
		t.Errorf("files %q, %q", s.Database, s.Archive.Path)
	}
	for name, bad := range map[string]Spec{
		"two kinds":      {Worlds: map[string]WorldSpec{"w": {Source: &flat{}, Minecraft: &MinecraftWorld{Path: "x"}}}},
		"unknown world":  {Regions: map[string]RegionSpec{"r": {World: "nope"}}},
		"ambiguous":      {Worlds: map[string]WorldSpec{"a": {}, "b": {}}},
		"shape kind":     {Regions: map[string]RegionSpec{"r": {Shape: geom.ShapeSpec{Kind: "blob"}}}},
		"negative cap":   {Regions: map[string]RegionSpec{"r": {Live: RegionLive{GeneralCapacity: -1}}}},
		"unique radius":  {Regions: map[string]RegionSpec{"r": {Live: RegionLive{UniqueRadius: MaxUniqueRadius + 1}}}},
		"verifier kind":  {Verifiers: []VerifierSpec{{Name: "v", Kind: "magic"}}},
		"http url":       {Verifiers: []VerifierSpec{{Name: "v", Kind: VerifierHTTP}}},
		"verifier scope": {Verifiers: []VerifierSpec{{Name: "v", Regions: []string{"nope"}}}},
		"no save folder": {Worlds: map[string]WorldSpec{"w": {Minecraft: &MinecraftWorld{}}}},
	} {
		if _, err := bad.resolve(); err == nil {
			t.Errorf("%s: resolve accepted %+v", name, bad)
		}
	}
}

// TestRestartChanges: fixed fields are listed by name, live ones are not,
// and an embedder's world is compared by identity.
func TestRestartChanges(t *testing.T) {
	src := &flat{}
	mk := func() Spec {
		s, err := Spec{Worlds: map[string]WorldSpec{"w": {Source: src, Key: "k"}}}.resolve()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk(), mk()
	r := b.Regions[DefaultRegionName]
	r.Live.Pulse *= 2
	r.Live.Budget.Candidates = 1
	r.Live.UniqueRadius = 9
	b.Regions[DefaultRegionName] = r
	b.TTLPath = "other.yml"
	if got := restartChanges(a, b); len(got) != 0 {
		t.Errorf("live changes listed as restart-needing: %q", got)
	}
	r.Queues.Cold = 7
	r.Sinks.Login = true
	b.Regions[DefaultRegionName] = r
	b.Worlds["w"] = WorldSpec{Source: &flat{}, Key: "k"}
	b.DataDir = "elsewhere"
	got := restartChanges(a, b)
	want := []string{"DataDir", `world "w": Source`, `region "default": Sinks`, `region "default": Queues`}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("changes %q lack %q", got, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// flat is a world.Source of nothing but air columns.
type flat struct{ _ byte }

func (*flat) Load(_ context.Context, pos geom.Chunk) (*world.Chunk, error) {
	return &world.Chunk{Pos: pos, MinY: 0, MaxY: 256}, nil
}
