package meshcache

import (
	"fmt"
	"strconv"
	"strings"
)

// Profile is a renderer profile's mesh cache capacity, in entries. The
// presets are the capacities of the named renderer profiles; any other
// value is a custom capacity (zero or negative disables retention).
//
// The zero value is ProfilePerformance.
type Profile int

// Preset profiles.
const (
	ProfilePerformance Profile = 0  // no retention: revisits rebuild
	ProfileBalanced    Profile = 24 // default
	ProfileHigh        Profile = 48
)

// Capacity returns the entry count to pass to Cache.Store.
func (p Profile) Capacity() int { return int(p) }

// String returns the preset's name, or "custom:N".
func (p Profile) String() string {
	switch p {
	case ProfilePerformance:
		return "performance"
	case ProfileBalanced:
		return "balanced"
	case ProfileHigh:
		return "high"
	}
	return "custom:" + strconv.Itoa(int(p))
}

// ParseProfile parses a preset name ("performance", "balanced", "high",
// case-insensitive), "custom:N" or a bare integer N.
func ParseProfile(s string) (Profile, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "performance":
		return ProfilePerformance, nil
	case "balanced":
		return ProfileBalanced, nil
	case "high":
		return ProfileHigh, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(t, "custom:"))
	if err != nil {
		return 0, fmt.Errorf("meshcache: profile %q: want performance, balanced, high, custom:N or an integer", s)
	}
	return Profile(n), nil
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (p Profile) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseProfile.
func (p *Profile) UnmarshalText(b []byte) error {
	q, err := ParseProfile(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}
