package safety_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/safety"
)

func ptr(v int) *int { return &v }

func TestValidateReportsEverything(t *testing.T) {
	r := safety.Rules{
		Unsafe:          []string{"lava", "water[level=", "#nosuch"},
		AirLike:         []string{"Air"},
		Solid:           []string{"stone", "x::y"},
		UnknownBlocks:   "maybe",
		KnownNamespaces: []string{"create", "Bad NS"},
		Headroom:        -1,
		MinY:            ptr(100),
		MaxY:            ptr(50),
		Biomes:          safety.BiomeRules{Allow: []string{"plains"}, Deny: []string{"ocean[x=1]"}},
		Vertical:        safety.Vertical{Strategy: "spiral", Direction: "sideways", Step: -2},
		Border:          &safety.Border{Size: 0},
	}
	err := r.Validate()
	if err == nil {
		t.Fatal("Validate() = nil for rules full of mistakes")
	}
	wantRules := map[string]int{ // field -> index of the bad rule
		"unsafe[1]": 12, "unsafe[2]": 0, "air_like[0]": 0, "solid[1]": 2, "biomes.deny[0]": 5,
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("Validate() = %T, want errors.Join of the problems", err)
	}
	got := map[string]int{}
	for _, e := range joined.Unwrap() {
		var re *safety.RuleError
		if errors.As(e, &re) {
			got[re.Field+"["+string(rune('0'+re.Index))+"]"] = re.Err.Offset
		}
		if !strings.HasPrefix(e.Error(), "safety: ") {
			t.Errorf("problem %q lacks the package prefix", e)
		}
	}
	if !reflect.DeepEqual(got, wantRules) {
		t.Errorf("rule errors (list[index] -> offset) = %v, want %v", got, wantRules)
	}
	for _, want := range []string{
		`unknown_blocks "maybe"`, `known_namespaces[1] "Bad NS"`, "headroom -1", "min_y 100 is above max_y 50",
		`vertical.strategy "spiral"`, `vertical.direction "sideways"`, "vertical.step -2", "border:",
		`unsafe[1] "water[level=": offset 12: expected a value for level`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() does not mention %q:\n%v", want, err)
		}
	}
	if n := len(joined.Unwrap()); n != 13 {
		t.Errorf("Validate() joined %d problems, want 13:\n%v", n, err)
	}
	if _, err := safety.New(r); err == nil {
		t.Error("New accepted invalid rules")
	}
}

func TestValidateVertical(t *testing.T) {
	tests := []struct {
		name string
		v    safety.Vertical
		err  string // "" for valid
	}{
		{"zero", safety.Vertical{}, ""},
		{"surface", safety.Vertical{Strategy: safety.Surface}, ""},
		{"linear up", safety.Vertical{Strategy: safety.Linear, Direction: safety.Up, Start: ptr(10)}, ""},
		{"jump", safety.Vertical{Strategy: safety.Jump, Step: 8}, ""},
		{"fixed", safety.Vertical{Strategy: safety.Fixed, Y: ptr(64)}, ""},
		{"fixed without y", safety.Vertical{Strategy: safety.Fixed}, "vertical.y is required"},
		{"y without fixed", safety.Vertical{Strategy: safety.Linear, Y: ptr(3)}, "vertical.y is only used"},
		{"step without jump", safety.Vertical{Strategy: safety.Linear, Step: 3}, "vertical.step is only used"},
		{"start on surface", safety.Vertical{Start: ptr(3)}, "vertical.start is only used"},
		{"direction on fixed", safety.Vertical{Strategy: safety.Fixed, Y: ptr(1), Direction: safety.Up}, "vertical.direction is only used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := safety.Rules{Vertical: tt.v}
			err := r.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("Validate(%+v) = %v, want nil", tt.v, err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Validate(%+v) = %v, want an error containing %q", tt.v, err, tt.err)
			}
		})
	}
}

func TestDefaultsValidate(t *testing.T) {
	for name, r := range map[string]safety.Rules{"zero": {}, "Default": safety.Default(), "Nether": safety.Nether()} {
		if err := r.Validate(); err != nil {
			t.Errorf("%s rules: %v", name, err)
		}
	}
}

const sampleYAML = `
unsafe: ["#unsafe", "mymod:acid", "*:*_slime[sticky=true]"]
air_like: ["#air_like", "snow[layers=1]"]
unknown_blocks: unsafe
known_namespaces: [create]
headroom: 3
min_y: 40
max_y: 200
biomes:
  deny: ["#ocean", "mushroom_fields"]
vertical:
  strategy: jump
  direction: up
  start: 50
  step: 6
border:
  center_x: 0
  center_z: 0
  size: 20000
`

func TestRulesYAML(t *testing.T) {
	var r safety.Rules
	if err := yaml.Unmarshal([]byte(sampleYAML), &r); err != nil {
		t.Fatal(err)
	}
	want := safety.Rules{
		Unsafe:          []string{"#unsafe", "mymod:acid", "*:*_slime[sticky=true]"},
		AirLike:         []string{"#air_like", "snow[layers=1]"},
		UnknownBlocks:   "unsafe",
		KnownNamespaces: []string{"create"},
		Headroom:        3,
		MinY:            ptr(40),
		MaxY:            ptr(200),
		Biomes:          safety.BiomeRules{Deny: []string{"#ocean", "mushroom_fields"}},
		Vertical:        safety.Vertical{Strategy: "jump", Direction: "up", Start: ptr(50), Step: 6},
		Border:          &safety.Border{Size: 20000},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("decoded %+v\nwant    %+v", r, want)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	// Round trip through YAML.
	out, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back safety.Rules
	if err := yaml.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
	// An explicit empty list means none, not the default.
	var none safety.Rules
	if err := yaml.Unmarshal([]byte("unsafe: []\n"), &none); err != nil {
		t.Fatal(err)
	}
	if none.Unsafe == nil {
		t.Fatal(`"unsafe: []" decodes to nil: it could not turn the default off`)
	}
}
