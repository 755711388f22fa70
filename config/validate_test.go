package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
)

// validateKeys returns the keys of the problems Validate reports.
func validateKeys(t *testing.T, c *Config) []string {
	t.Helper()
	err := c.Validate()
	if err == nil {
		return nil
	}
	var keys []string
	for _, e := range unjoin(err) {
		le, ok := e.(*LineError)
		if !ok || le.File != "" || le.Line != 0 {
			t.Fatalf("Validate error %q (%T) is not a *LineError without file and line", e, e)
		}
		if !strings.HasPrefix(le.Error(), "config: "+le.Key+": ") {
			t.Errorf("Validate error %q does not start with config: %s: ", le, le.Key)
		}
		keys = append(keys, le.Key)
	}
	return keys
}

func TestValidateBuiltInCode(t *testing.T) {
	saveDir := t.TempDir()
	notDir := filepath.Join(saveDir, "level.dat")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
		want   []string
	}{
		{"default", func(*Config) {}, nil},
		{"minecraft world", func(c *Config) {
			c.Worlds["mc"] = World{Kind: KindMinecraft, Path: saveDir, Dimension: End, RegionDir: "DIM1/region"}
		}, nil},
		{"minecraft path is a file", func(c *Config) {
			c.Worlds["mc"] = World{Kind: KindMinecraft, Path: notDir, Dimension: Overworld}
		}, []string{"worlds.mc.path"}},
		{"minecraft empty dimension", func(c *Config) {
			c.Worlds["mc"] = World{Kind: KindMinecraft, Path: saveDir}
		}, []string{"worlds.mc.dimension"}},
		{"nether with linear search", func(c *Config) {
			c.Worlds["n"] = World{Kind: KindMinecraft, Path: saveDir, Dimension: Nether}
			r := DefaultRegion()
			r.World, r.Safety = "n", safety.Nether()
			c.Regions["n"] = r
		}, nil},
		{"nether with the default surface search (below the roof)", func(c *Config) {
			c.Worlds["n"] = World{Kind: KindMinecraft, Path: saveDir, Dimension: Nether}
			r := DefaultRegion()
			r.World = "n"
			c.Regions["n"] = r
		}, nil},
		{"a datapack's dimension by id", func(c *Config) {
			c.Worlds["n"] = World{Kind: KindMinecraft, Path: saveDir, Dimension: "mymod:mining/deep"}
		}, nil},
		{"a dimension id with odd characters", func(c *Config) {
			c.Worlds["n"] = World{Kind: KindMinecraft, Path: saveDir, Dimension: "MyMod:Mining"}
		}, []string{"worlds.n.dimension"}},
		{"fields the kind does not use are ignored", func(c *Config) {
			w := c.Worlds["world"]
			w.Path = "/nonexistent"
			c.Worlds["world"] = w
			r := c.Regions["default"]
			r.Shape.RadiusX = -5
			r.Distribution.Exponent = -1
			c.Regions["default"] = r
			c.Verifiers = []Verifier{{Name: "claims", Kind: KindClaims, URL: "::"}}
		}, nil},
		{"no worlds, no regions", func(c *Config) { c.Worlds, c.Regions = nil, nil }, []string{"worlds", "regions"}},
		{"names", func(c *Config) {
			c.Worlds[""] = DefaultWorld()
			c.Worlds[strings.Repeat("w", 65)] = DefaultWorld()
			c.Regions["-x"] = DefaultRegion()
			c.Regions["a.b"] = DefaultRegion()
		}, []string{`worlds.""`, `worlds."` + strings.Repeat("w", 65) + `"`, `regions."-x"`, `regions."a.b"`}},
		{"server", func(c *Config) {
			c.Server = Server{Listen: "[::1]:70000"}
		}, []string{"server.listen", "server.max_body_bytes", "server.read_header_timeout", "server.read_timeout",
			"server.write_timeout", "server.idle_timeout", "server.shutdown_timeout"}},
		{"paths", func(c *Config) {
			c.Database.Path, c.Archive.Path, c.TTLFile, c.Auth.TokenFile = "", "a\x00", "t\x00", "k\x00"
		}, []string{"database.path", "archive.path", "ttl_file", "auth.token_file"}},
		{"region counts", func(c *Config) {
			r := c.Regions["default"]
			r.Sinks = Sinks{Login: LoginSink{PlayerCap: -1}}
			r.Budget = Budget{LoginBurst: -1}
			r.Queues = Queues{}
			r.Allocator = Allocator{MinResidence: -1}
			r.PromotionTimeout, r.Pulse = 0, time.Microsecond
			r.Memory = Memory{SpatialResolution: -1}
			r.UniquePlacement.Radius = -1
			c.Regions["default"] = r
		}, []string{
			"regions.default.sinks.general.capacity", "regions.default.sinks.login.player_cap",
			"regions.default.sinks.network.capacity", "regions.default.sinks.network.lease",
			"regions.default.sinks.personal.capacity",
			"regions.default.sinks.group.max_size", "regions.default.sinks.group.radius", "regions.default.sinks.group.capacity",
			"regions.default.pulse",
			"regions.default.budget.candidates", "regions.default.budget.screens", "regions.default.budget.max_screens",
			"regions.default.budget.promotions_per_pulse", "regions.default.budget.max_promotions",
			"regions.default.budget.transfers", "regions.default.budget.login_burst",
			"regions.default.queues.backlog", "regions.default.queues.cold",
			"regions.default.allocator.min_residence", "regions.default.allocator.demand_half_life",
			"regions.default.allocator.demand_horizon", "regions.default.promotion_timeout",
			"regions.default.memory.spatial_resolution", "regions.default.memory.pending_threshold",
			"regions.default.memory.rebuild_interval", "regions.default.unique_placement.radius",
		}},
		{"unique placement at and past its bound", func(c *Config) {
			r := c.Regions["default"]
			r.UniquePlacement.Radius = MaxUniqueRadius
			c.Regions["default"] = r
			r.UniquePlacement.Radius = MaxUniqueRadius + 1
			c.Regions["other"] = r
		}, []string{"regions.other.unique_placement.radius"}},
		{"group sinks at and past their bounds", func(c *Config) {
			r := c.Regions["default"]
			r.Sinks.Group = GroupSink{Enabled: true, MaxSize: MaxGroupSize, Radius: MaxGroupRadius, Capacity: 1}
			c.Regions["default"] = r
			r.Sinks.Group = GroupSink{Enabled: true, MaxSize: MaxGroupSize + 1, Radius: 0, Capacity: 0}
			c.Regions["big"] = r
			// Half of 4 blocks around a column holds 13 columns, not 20.
			r.Sinks.Group = GroupSink{Enabled: true, MaxSize: 20, Radius: 4, Capacity: 2}
			c.Regions["tight"] = r
		}, []string{
			"regions.big.sinks.group.max_size", "regions.big.sinks.group.radius", "regions.big.sinks.group.capacity",
			"regions.tight.sinks.group.radius",
		}},
		{"zero values that mean something", func(c *Config) {
			r := c.Regions["default"]
			r.Allocator.MinResidence, r.Memory.SpatialResolution, r.Sinks.Login.PlayerCap, r.Budget.LoginBurst = 0, 0, 0, 0
			c.Regions["default"] = r
			c.TTLFile = ""
		}, nil},
		{"shapes at the limits", func(c *Config) {
			r := c.Regions["default"]
			r.Shape = geom.ShapeSpec{Kind: geom.ShapeRectangle, CenterX: maxBlockCenter, CenterZ: -maxBlockCenter, RadiusX: maxBlockRadius, RadiusZ: 0, Rotation: -720}
			c.Regions["default"] = r
		}, nil},
		{"shapes past the limits", func(c *Config) {
			r := c.Regions["default"]
			r.Shape = geom.ShapeSpec{Kind: geom.ShapeRectangle, CenterX: maxBlockCenter + 1, RadiusX: maxBlockRadius + 1, RadiusZ: 32, InnerZ: 16}
			c.Regions["default"] = r
		}, []string{"regions.default.shape.center_x", "regions.default.shape.radius_x", "regions.default.shape.inner_x"}},
		{"verifiers", func(c *Config) {
			c.Verifiers = []Verifier{
				{Name: "a", Kind: KindHTTP, URL: "https://example.com/v", Timeout: time.Second, Regions: []string{"default"}},
				{Name: "a\tb", Kind: KindClaims},
				{Name: "c", Kind: KindHTTP, URL: "http://h/#frag"},
			}
		}, []string{"verifiers[1].name", "verifiers[2].url", "verifiers[2].timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(c)
			got := validateKeys(t, c)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Validate() keys = %q, want %q\n%v", got, tc.want, c.Validate())
			}
		})
	}
}

// Every leaf of Config can be written in a file and comes back with the
// value written: the walker handles every field type.
func TestEveryKeyDecodes(t *testing.T) {
	var b bytes.Buffer
	var values []func(c *Config) (string, any, any) // key, got, want
	var write func(v reflect.Value, indent string, get func(c *Config) reflect.Value, path string)
	n := 0
	write = func(v reflect.Value, indent string, get func(c *Config) reflect.Value, path string) {
		t := v.Type()
		for _, f := range fieldsOf(t) {
			ft := t.Field(f.index).Type
			fget := func(c *Config) reflect.Value { return get(c).Field(f.index) }
			p := path + "." + f.name
			n++
			var text string
			var want any
			switch {
			case ft == durationType:
				text, want = fmt.Sprintf("%ds", n), time.Duration(n)*time.Second
			case ft.Kind() == reflect.Struct:
				fmt.Fprintf(&b, "%s%s:\n", indent, f.name)
				write(v.Field(f.index), indent+"  ", fget, p)
				continue
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
				fmt.Fprintf(&b, "%s%s:\n", indent, f.name)
				elem := func(c *Config) reflect.Value { return fget(c).Elem() }
				write(reflect.New(ft.Elem()).Elem(), indent+"  ", elem, p)
				continue
			case ft.Kind() == reflect.Pointer:
				text, want = fmt.Sprint(n), n
				fget0 := fget
				fget = func(c *Config) reflect.Value { return fget0(c).Elem() }
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
				text, want = fmt.Sprintf("[s%d]", n), []string{fmt.Sprintf("s%d", n)}
			case ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice:
				continue // the named entries are written below
			case ft.Kind() == reflect.String:
				text, want = fmt.Sprintf("s%d", n), fmt.Sprintf("s%d", n)
			case ft.Kind() == reflect.Bool:
				text, want = "true", true
			case ft.Kind() == reflect.Float64:
				text, want = fmt.Sprintf("%d.5", n), float64(n)+0.5
			case ft.Kind() == reflect.Int || ft.Kind() == reflect.Int64:
				text, want = fmt.Sprint(n), int64(n)
			default:
				panic(fmt.Sprintf("field %s of type %v has no test value", p, ft))
			}
			fmt.Fprintf(&b, "%s%s: %s\n", indent, f.name, text)
			values = append(values, func(c *Config) (string, any, any) {
				g := fget(c)
				var got any
				switch g.Kind() {
				case reflect.Int, reflect.Int64:
					got = g.Int()
					if _, ok := want.(int); ok {
						got = int(g.Int())
					}
					if g.Type() == durationType {
						got = time.Duration(g.Int())
					}
				case reflect.String:
					got = g.String()
				default:
					got = g.Interface()
				}
				return p, got, want
			})
		}
	}
	c := Default()
	b.WriteString("# every key\n")
	write(reflect.ValueOf(c).Elem(), "", func(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() }, "")
	// The maps and the list, with one entry each.
	b.WriteString("worlds:\n  w:\n")
	sub := func(typ reflect.Type, indent string, get func(c *Config) reflect.Value, path string) {
		write(reflect.New(typ).Elem(), indent, get, path)
	}
	sub(reflect.TypeFor[World](), "    ", func(c *Config) reflect.Value {
		v := reflect.New(reflect.TypeFor[World]()).Elem()
		v.Set(reflect.ValueOf(c.Worlds["w"]))
		return v
	}, "worlds.w")
	b.WriteString("regions:\n  r:\n")
	sub(reflect.TypeFor[Region](), "    ", func(c *Config) reflect.Value {
		v := reflect.New(reflect.TypeFor[Region]()).Elem()
		v.Set(reflect.ValueOf(c.Regions["r"]))
		return v
	}, "regions.r")
	b.WriteString("verifiers:\n  -\n")
	sub(reflect.TypeFor[Verifier](), "    ", func(c *Config) reflect.Value { return reflect.ValueOf(c.Verifiers).Index(0) }, "verifiers[0]")

	d := &decoder{file: "all.yml", lines: map[string]int{}, failed: map[string]bool{}}
	got := Default()
	d.document(b.Bytes(), got)
	if len(d.errs) > 0 {
		t.Fatalf("decoding every key:\n%s\ngave %v", b.String(), d.err())
	}
	if len(values) < 80 {
		t.Fatalf("wrote %d values; the walk is broken", len(values))
	}
	for _, v := range values {
		key, g, w := v(got)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s = %#v, want %#v", key, g, w)
		}
		if _, ok := d.lines[strings.TrimPrefix(key, ".")]; !ok {
			t.Errorf("%s: no line recorded", key)
		}
	}
	// And the document is valid YAML that yaml.v3 reads the same way.
	var n2 yaml.Node
	if err := yaml.Unmarshal(b.Bytes(), &n2); err != nil {
		t.Fatal(err)
	}
}
