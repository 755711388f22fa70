package meshcache

import (
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	tests := []struct {
		in       string
		want     Profile
		capacity int
		str      string
	}{
		{"performance", ProfilePerformance, 0, "performance"},
		{"Balanced", ProfileBalanced, 24, "balanced"},
		{" HIGH ", ProfileHigh, 48, "high"},
		{"custom:100", Profile(100), 100, "custom:100"},
		{"custom:-3", Profile(-3), -3, "custom:-3"},
		{"7", Profile(7), 7, "custom:7"},
		{"custom:48", ProfileHigh, 48, "high"}, // a profile is its capacity
	}
	for _, tc := range tests {
		p, err := ParseProfile(tc.in)
		if err != nil || p != tc.want {
			t.Errorf("ParseProfile(%q) = %v, %v; want %v", tc.in, p, err, tc.want)
			continue
		}
		if p.Capacity() != tc.capacity {
			t.Errorf("%v.Capacity() = %d, want %d", p, p.Capacity(), tc.capacity)
		}
		if p.String() != tc.str {
			t.Errorf("Profile(%d).String() = %q, want %q", int(p), p.String(), tc.str)
		}
		// Text round trip, as a config file would do it.
		b, _ := p.MarshalText()
		var q Profile
		if err := q.UnmarshalText(b); err != nil || q != p {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, q, err, p)
		}
	}
	var zero Profile
	if zero != ProfilePerformance {
		t.Errorf("zero Profile = %v, want performance", zero)
	}
	for _, bad := range []string{"", "ultra", "custom:", "custom:x", "custom:99999999999999999999", "1.5"} {
		p := ProfileBalanced
		err := p.UnmarshalText([]byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "meshcache: ") {
			t.Errorf("UnmarshalText(%q) error = %v, want a meshcache error", bad, err)
		}
		if p != ProfileBalanced {
			t.Errorf("failed UnmarshalText(%q) changed the profile to %v", bad, p)
		}
	}
}
