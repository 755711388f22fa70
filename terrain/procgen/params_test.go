package procgen

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultParamsValid(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatalf("DefaultParams().Validate() = %v, want nil", err)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Params)
		wants []string // substrings, one per expected problem
	}{
		{"zero relief", func(p *Params) { p.Relief = 0 }, []string{"relief 0"}},
		{"huge relief", func(p *Params) { p.Relief = 5 }, []string{"relief 5"}},
		{"nan relief", func(p *Params) { p.Relief = math.NaN() }, []string{"relief is NaN"}},
		{"sea too low", func(p *Params) { p.SeaLevel = -65 }, []string{"sea level -65"}},
		{"sea too high", func(p *Params) { p.SeaLevel = MaxY }, []string{"sea level 320"}},
		{"small temperature scale", func(p *Params) { p.Biome.TemperatureScale = 1 }, []string{"temperature scale 1"}},
		{"inf moisture offset", func(p *Params) { p.Biome.MoistureOffset = math.Inf(1) }, []string{"moisture offset is +Inf"}},
		{"volcanic above 1", func(p *Params) { p.Biome.VolcanicFrequency = 1.5 }, []string{"volcanic frequency 1.5"}},
		{"zero snow line", func(p *Params) { p.Biome.SnowLine = 0 }, []string{"snow line 0"}},
		{"everything at once", func(p *Params) { *p = Params{SeaLevel: 999} }, []string{
			"relief 0", "sea level 999", "temperature scale 0", "moisture scale 0", "snow line 0",
		}},
		{"zero volcanism is fine", func(p *Params) { p.Biome.VolcanicFrequency = 0 }, nil},
		{"extremes are fine", func(p *Params) {
			p.Relief, p.SeaLevel = 4, MinY
			p.Biome.VolcanicFrequency, p.Biome.TemperatureOffset = 1, -2
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			tc.edit(&p)
			err := p.Validate()
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %d problems", len(tc.wants))
			}
			msg := err.Error()
			for _, w := range tc.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("Validate() = %q, want it to mention %q", msg, w)
				}
			}
			if n := len(strings.Split(msg, "\n")); n != len(tc.wants) {
				t.Errorf("Validate() reported %d problems, want %d: %q", n, len(tc.wants), msg)
			}
			if !strings.HasPrefix(msg, "procgen: ") {
				t.Errorf("Validate() = %q, want the procgen: prefix", msg)
			}
			if _, nerr := New(p); nerr == nil || nerr.Error() != msg {
				t.Errorf("New(invalid) = %v, want %v", nerr, err)
			}
		})
	}
}

func TestParamsArePlainValues(t *testing.T) {
	g, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := g.Params().(Params)
	if !ok {
		t.Fatalf("Params() is %T, want procgen.Params", g.Params())
	}
	if got != DefaultParams() {
		t.Errorf("Params() = %+v, want %+v", got, DefaultParams())
	}
	if p := g.Producer(); p.Name != "procgen" || p.Version != Version {
		t.Errorf("Producer() = %v, want procgen@%s", p, Version)
	}
}
