package cli

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseSteal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"cpu  4816 0 3017 27890 363 0 100 761 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", 7610 * time.Millisecond, ""},
		{"intr 5\ncpu 1 2 3 4 5 6 7 0\n", 0, ""},
		{"cpu 1 2 3 4 5 6 7\n", 0, "no steal"},
		{"cpu 1 2 3 4 5 6 7 x 9\n", 0, "steal \"x\""},
		{"cpu 1 2 3 4 5 6 7 -4\n", 0, "steal \"-4\""},
		{"cpu 1 2 3 4 5 6 7 99999999999999999\n", 0, "out of range"},
		{"cpu0 1 2 3 4 5 6 7 8\n", 0, "no cpu line"},
		{"", 0, "no cpu line"},
	} {
		got, err := parseSteal([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseSteal(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSteal(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseSteal(f *testing.F) {
	f.Add([]byte("cpu  4816 0 3017 27890 363 0 100 761 0 0\n"))
	f.Add([]byte("cpu 1 2 3 4 5 6 7\n"))
	f.Add([]byte("cpu 1 2 3 4 5 6 7 18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseSteal(data)
		if err == nil && d < 0 {
			t.Fatalf("parseSteal(%q) = %v, negative", data, d)
		}
	})
}

// TestStealMeter: on Linux the meter reads /proc/stat and never goes
// backwards; elsewhere it says it does not know.
func TestStealMeter(t *testing.T) {
	d, ok := stealMeter()()
	if runtime.GOOS != "linux" {
		if ok {
			t.Errorf("stealMeter on %s = %v, true; want unknown", runtime.GOOS, d)
		}
		return
	}
	if _, err := readSteal(); err != nil {
		t.Skipf("this Linux has no readable steal in /proc/stat: %v", err)
	}
	if !ok || d < 0 {
		t.Errorf("stealMeter = %v, %v; want a known, non-negative steal", d, ok)
	}
}

func TestPrintBenchSteal(t *testing.T) {
	for _, tc := range []struct {
		steal *float64
		want  []string
		not   []string
	}{
		{nil, nil, []string{"host steal", "warning"}},
		{new(5.0), []string{"host steal: 5ms"}, []string{"warning"}},
		{new(250.0), []string{"host steal: 250ms", "warning: the host took more than 1%"}, nil},
	} {
		var b bytes.Buffer
		if err := printBench(&b, benchReport{Rate: &benchRate{ElapsedMs: 10000, StealMs: tc.steal}}); err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range tc.want {
			if !strings.Contains(flat, w) {
				t.Errorf("steal %v: output lacks %q:\n%s", tc.steal, w, b.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(flat, w) {
				t.Errorf("steal %v: output has %q:\n%s", tc.steal, w, b.String())
			}
		}
	}
}
