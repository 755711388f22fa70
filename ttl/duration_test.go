package ttl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// validDurations are inputs ParseDuration accepts, with their values.
var validDurations = []struct {
	in   string
	want Duration
}{
	{"-1", Permanent},
	{"0", 0},
	{"1", Duration(time.Second)},
	{"3600", Duration(time.Hour)},
	{"007", Duration(7 * time.Second)},
	{"30d", Duration(30 * Day)},
	{"14d", Duration(14 * Day)},
	{"1d12h", Duration(36 * time.Hour)},
	{"90m", Duration(90 * time.Minute)},
	{"500ms", Duration(500 * time.Millisecond)},
	{"20t", Duration(time.Second)},
	{"3t", Duration(150 * time.Millisecond)},
	{"1w", Duration(Week)},
	{"1w2d3h", Duration(9*Day + 3*time.Hour)},
	{"1w1d1h1m1s1t1ms", Duration(Week + Day + time.Hour + time.Minute + time.Second + Tick + time.Millisecond)},
	{"1s30t", Duration(2500 * time.Millisecond)},
	{"0d", 0},
	{"0d0h0ms", 0},
	{"25h", Duration(25 * time.Hour)},
	{"2h30m", Duration(150 * time.Minute)},
	{"9223372036", Duration(9223372036 * time.Second)},
	{"106751d23h47m16s854ms", maxDuration},
	{"15250w1d23h47m16s854ms", maxDuration},
}

// invalidDurations are inputs ParseDuration rejects, with a part of the
// reason it must give.
var invalidDurations = []struct {
	in   string
	want string
}{
	{"", "empty"},
	{" 1d", "whitespace"},
	{"1d ", "whitespace"},
	{"1d 2h", "whitespace"},
	{"1d\t2h", "whitespace"},
	{"1\u00a0d", "whitespace"},
	{"-2", "negative"},
	{"-0", "negative"},
	{"-1d", "negative"},
	{"--1", "negative"},
	{"-", "negative"},
	{"+1", "unexpected character '+'"},
	{"1.5h", "unexpected character '.'"},
	{"1_000", "unexpected character '_'"},
	{"1x", `unknown unit "x"`},
	{"1D", `unknown unit "D"`},
	{"1dd", `unknown unit "dd"`},
	{"0x10", `unknown unit "x"`},
	{"1e3", `unknown unit "e"`},
	{"1µs", "unexpected character 'µ'"},
	{"١", "unexpected character '١'"},
	{"d", `missing number before unit "d"`},
	{"ms", `missing number before unit "ms"`},
	{"1d5", "missing unit after 5"},
	{"1d1d", `unit "d" repeated`},
	{"1m2m", `unit "m" repeated`},
	{"1h1d", `unit "d" after "h"`},
	{"1ms1s", `unit "s" after "ms"`},
	{"1ms1t", `unit "t" after "ms"`},
	{"1d1w", `unit "w" after "d"`},
	{"106751d23h47m16s855ms", "too large"},
	{"106752d", "too large"},
	{"9223372037", "too large"},
	{"99999999999999999999", "too large"},
	{"99999999999999999999ms", "too large"},
	{"15251w", "too large"},
	{"1e", `unknown unit "e"`},
	{"true", `missing number before unit "true"`},
}

func TestParseDuration(t *testing.T) {
	for _, tc := range validDurations {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v, nil", tc.in, int64(got), err, int64(tc.want))
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	for _, tc := range invalidDurations {
		got, err := ParseDuration(tc.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, nil, want an error containing %q", tc.in, int64(got), tc.want)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "ttl: invalid duration ") || !strings.Contains(msg, tc.want) {
			t.Errorf("ParseDuration(%q) error = %q, want the ttl prefix and %q", tc.in, msg, tc.want)
		}
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		d    Duration
		want string
	}{
		{Permanent, "-1"},
		{Duration(-5 * time.Hour), "-1"},
		{0, "0"},
		{Duration(30 * Day), "30d"},
		{Duration(14 * Day), "14d"},
		{Duration(Week + 2*Day + 3*time.Hour), "9d3h"},
		{Duration(36 * time.Hour), "1d12h"},
		{Duration(90 * time.Minute), "1h30m"},
		{Duration(20 * Tick), "1s"},
		{Duration(3 * Tick), "150ms"},
		{Duration(61*time.Second + 7*time.Millisecond), "1m1s7ms"},
		{Duration(Day + time.Second), "1d1s"},
		{Duration(1500 * time.Microsecond), "1ms"},
		{Duration(999 * time.Microsecond), "1ms"},
		{Duration(1), "1ms"},
		{maxDuration, "106751d23h47m16s854ms"},
		{Duration(1<<63 - 1), "106751d23h47m16s854ms"},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("Duration(%d).String() = %q, want %q", int64(tc.d), got, tc.want)
		}
	}
}

// Every accepted input's canonical form parses back to the same value.
func TestDurationRoundTrip(t *testing.T) {
	for _, tc := range validDurations {
		d, err := ParseDuration(tc.in)
		if err != nil {
			t.Fatalf("ParseDuration(%q) = %v", tc.in, err)
		}
		s := d.String()
		back, err := ParseDuration(s)
		if err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v (from %q)", s, int64(back), err, int64(d), tc.in)
		}
	}
}

func TestDurationPermanent(t *testing.T) {
	for _, tc := range []struct {
		d    Duration
		want bool
	}{
		{Permanent, true}, {Duration(-time.Hour), true}, {0, false}, {Duration(time.Millisecond), false},
	} {
		if got := tc.d.Permanent(); got != tc.want {
			t.Errorf("Duration(%d).Permanent() = %v, want %v", int64(tc.d), got, tc.want)
		}
	}
}

func TestDurationYAMLAndText(t *testing.T) {
	type doc struct {
		D Duration `yaml:"d" json:"d"`
	}
	for _, tc := range []struct {
		in   string
		want Duration
	}{
		{"d: 14d", Duration(14 * Day)},
		{"d: 3600", Duration(time.Hour)},
		{"d: -1", Permanent},
		{`d: "0"`, 0},
	} {
		var got doc
		if err := yaml.Unmarshal([]byte(tc.in), &got); err != nil || got.D != tc.want {
			t.Errorf("yaml.Unmarshal(%q) = %v, %v, want %v", tc.in, got.D, err, tc.want)
		}
	}
	for _, in := range []string{"d: 1.5", "d: [1]", "d: 1h1d", "d: true"} {
		var got doc
		if err := yaml.Unmarshal([]byte(in), &got); err == nil || !strings.Contains(err.Error(), "ttl: line 1:") {
			t.Errorf("yaml.Unmarshal(%q) error = %v, want a ttl error on line 1", in, err)
		}
	}

	b, err := json.Marshal(doc{D: Duration(36 * time.Hour)})
	if err != nil || string(b) != `{"d":"1d12h"}` {
		t.Errorf("json.Marshal = %s, %v, want {\"d\":\"1d12h\"}", b, err)
	}
	var back doc
	if err := json.Unmarshal(b, &back); err != nil || back.D != Duration(36*time.Hour) {
		t.Errorf("json.Unmarshal(%s) = %v, %v, want 1d12h", b, back.D, err)
	}
	if err := json.Unmarshal([]byte(`{"d":"1x"}`), &back); err == nil {
		t.Errorf(`json.Unmarshal({"d":"1x"}) = nil error, want an error`)
	}
}
