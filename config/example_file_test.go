package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/terrain/procgen"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if err := Default().Check(); err != nil {
		t.Fatalf("Default().Check() = %v", err)
	}
}

func TestDefaultValues(t *testing.T) {
	c := Default()
	if c.Server.Listen != "127.0.0.1:8080" || c.DataDir != "rtp-data" {
		t.Errorf("Default listens on %q with data in %q, want 127.0.0.1:8080 and rtp-data", c.Server.Listen, c.DataDir)
	}
	if got, want := c.DatabasePath(), "rtp-data/rtp.db"; got != want {
		t.Errorf("DatabasePath() = %q, want %q", got, want)
	}
	if got, want := c.ArchivePath(), "rtp-data/archive.db"; got != want {
		t.Errorf("ArchivePath() = %q, want %q (the rtp archive command's default)", got, want)
	}
	w, ok := c.Worlds["world"]
	if len(c.Worlds) != 1 || !ok || w.Kind != KindProcedural || w.Procedural.Params() != procgen.DefaultParams() || w.TileCache != DefaultTileCache {
		t.Errorf("Default().Worlds = %+v, want one procedural world \"world\" with procgen.DefaultParams", c.Worlds)
	}
	r, ok := c.Regions["default"]
	if len(c.Regions) != 1 || !ok || r.World != "world" || r.Pulse != 50*time.Millisecond {
		t.Fatalf("Default().Regions = %+v, want one region \"default\" on \"world\" with a 50ms pulse", c.Regions)
	}
	if r.UniquePlacement.Radius != 2 {
		t.Errorf("default unique placement radius %d, want 2 blocks", r.UniquePlacement.Radius)
	}
	s, err := r.BuildShape()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "circle(center chunk(0, 0), radius 256)"; !strings.HasPrefix(got, "circle") || !strings.Contains(got, "256") {
		t.Errorf("default shape %s, want like %s", got, want)
	}
	// Each call is a fresh value: changing one leaves the next alone.
	c.Regions["default"].Safety.Unsafe[0] = "changed"
	if Default().Regions["default"].Safety.Unsafe[0] != "#unsafe" {
		t.Error("Default() shares state between calls")
	}
}

func loadExample(t *testing.T, name string) *Config {
	t.Helper()
	c, err := LoadFile(name)
	if err != nil {
		t.Fatalf("LoadFile(%s) = %v", name, err)
	}
	return c
}

// The documented example is the defaults, so the documentation cannot
// drift from the code.
func TestExampleIsDefault(t *testing.T) {
	c := loadExample(t, "rtp.example.yml")
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("rtp.example.yml loads to\n%+v\nwant Default()\n%+v", c, want)
	}
}

// keyPaths returns every YAML key path of t, map entries as "*" and list
// elements as "[]".
func keyPaths(t reflect.Type, prefix string, out *[]string) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		if t.Kind() == reflect.Slice {
			prefix += "[]"
		}
		keyPaths(t.Elem(), prefix, out)
		return
	case reflect.Map:
		keyPaths(t.Elem(), prefix+".*", out)
		return
	case reflect.Struct:
		if t == durationType {
			return
		}
	default:
		return
	}
	for _, f := range fieldsOf(t) {
		p := f.name
		if prefix != "" {
			p = prefix + "." + f.name
		}
		*out = append(*out, p)
		keyPaths(t.Field(f.index).Type, p, out)
	}
}

func TestExampleNamesEveryKey(t *testing.T) {
	data, err := os.ReadFile("rtp.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	keyPaths(reflect.TypeFor[Config](), "", &paths)
	if len(paths) < 100 {
		t.Fatalf("found %d key paths; the walk is broken", len(paths))
	}
	// A key is documented when a line, commented out or not, starts with
	// it (after indentation, '#' and a list dash).
	documented := map[string]bool{}
	re := regexp.MustCompile(`(?m)^[\s#]*(?:- )?([a-z_]+):`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		documented[m[1]] = true
	}
	for _, p := range paths {
		leaf := p[strings.LastIndexAny(p, ".]")+1:]
		if !documented[leaf] {
			t.Errorf("rtp.example.yml does not document %s (no line with %q)", p, leaf+":")
		}
	}
}

func TestLoadtestExample(t *testing.T) {
	c := loadExample(t, "loadtest.example.yml")
	if err := c.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	r, d := c.Regions["default"], DefaultRegion()
	// Sized for 1,000 requests/s: more than a second of demand held hot,
	// and refill (promotions a second) faster than demand.
	perSecond := func(n int) float64 { return float64(n) / r.Pulse.Seconds() }
	if r.Sinks.General.Capacity < 1000 || r.Sinks.General.Capacity <= d.Sinks.General.Capacity {
		t.Errorf("general capacity %d, want at least a second of 1,000 requests/s", r.Sinks.General.Capacity)
	}
	if got := perSecond(r.Budget.PromotionsPerPulse); got < 1000 {
		t.Errorf("promotions %v/s, want at least 1,000/s", got)
	}
	if r.Budget.Screens < r.Budget.PromotionsPerPulse || r.Budget.Candidates < r.Budget.Screens {
		t.Errorf("budget %+v: screens and candidates must feed the promotions", r.Budget)
	}
}

// Procedural mirrors procgen.Params: a new generator parameter must get a
// config key (and a line in the example file).
func TestProceduralMirrorsProcgen(t *testing.T) {
	var names func(t reflect.Type, prefix string) []string
	names = func(t reflect.Type, prefix string) []string {
		var out []string
		for f := range t.Fields() {
			if f.Type.Kind() == reflect.Struct {
				out = append(out, names(f.Type, prefix+f.Name+".")...)
				continue
			}
			out = append(out, prefix+f.Name+":"+f.Type.Kind().String())
		}
		return out
	}
	got := names(reflect.TypeFor[Procedural](), "")
	want := names(reflect.TypeFor[procgen.Params](), "")
	// The config's biome struct has another type name; compare leaves.
	if !slices.Equal(got, want) {
		t.Errorf("Procedural fields %v, want procgen.Params' %v", got, want)
	}
	// Params and ProceduralFrom are inverse: change each leaf and see it
	// come back.
	p := procgen.DefaultParams()
	p.Seed, p.Relief, p.SeaLevel, p.SeabedClamp = 7, 2, 10, false
	p.Biome = procgen.BiomeParams{TemperatureScale: 100, TemperatureOffset: 1, MoistureScale: 200, MoistureOffset: -1, VolcanicFrequency: 0.5, SnowLine: 50}
	if back := ProceduralFrom(p).Params(); back != p {
		t.Errorf("ProceduralFrom(%+v).Params() = %+v", p, back)
	}
}
