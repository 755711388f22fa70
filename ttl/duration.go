package ttl

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rtpengine/rtp/internal/yamlnode"

	yaml "go.yaml.in/yaml/v3"
)

// Units of a written duration besides the standard ones.
const (
	// Tick is one game tick, the unit t.
	Tick = 50 * time.Millisecond
	// Day is the unit d.
	Day = 24 * time.Hour
	// Week is the unit w.
	Week = 7 * Day
)

// Duration is a time to live as written in ttl.yml.
//
// A negative Duration means permanent (written -1, see Permanent), zero
// means do not remember, and a positive Duration is a lifetime. Converted
// with time.Duration(d) it keeps that meaning, which is the convention of
// package memory. The zero value is zero: do not remember.
type Duration time.Duration

// Permanent is the Duration written -1: never expire.
const Permanent Duration = -1

// Permanent reports whether d means never expire (any negative value).
func (d Duration) Permanent() bool { return d < 0 }

// units in the order they must be written: largest first.
var units = [...]struct {
	name string
	size time.Duration
}{
	{"w", Week},
	{"d", Day},
	{"h", time.Hour},
	{"m", time.Minute},
	{"s", time.Second},
	{"t", Tick},
	{"ms", time.Millisecond},
}

const unitList = "w, d, h, m, s, t, ms"

// maxDuration is the largest Duration that String writes exactly.
const maxDuration = Duration(math.MaxInt64 / int64(time.Millisecond) * int64(time.Millisecond))

// ParseDuration parses a time to live.
//
// Accepted forms:
//
//   - "-1": permanent;
//   - a bare integer: seconds ("0" means do not remember, "3600" is one hour);
//   - numbers with units, largest unit first, each unit at most once:
//     "30d", "1d12h", "90m", "500ms", "20t", "1w2d3h". Units are w (7 days),
//     d (24 hours), h, m, s, t (one game tick, 50 ms) and ms.
//
// Everything else is an error: empty input, whitespace anywhere, other
// negative values, unknown, repeated or misordered units, a number without
// a unit after a unit, and totals beyond what time.Duration holds.
func ParseDuration(s string) (Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("ttl: invalid duration %q: %w", s, err)
	}
	return d, nil
}

// parseDuration is ParseDuration with errors that do not repeat the input,
// so Load can give its own context.
func parseDuration(s string) (Duration, error) {
	switch {
	case s == "":
		return 0, errors.New("empty")
	case s == "-1":
		return Permanent, nil
	case strings.IndexFunc(s, unicode.IsSpace) >= 0:
		return 0, errors.New("contains whitespace")
	case s[0] == '-':
		return 0, errors.New("negative; the only negative value is -1 (permanent)")
	}
	if n := digits(s, 0); n == len(s) {
		return scale(s, time.Second)
	}
	var total Duration
	prev := -1 // index in units of the previous unit
	for i := 0; i < len(s); {
		j := digits(s, i)
		if j == i {
			if isLetter(s[i]) {
				return 0, fmt.Errorf("missing number before unit %q", s[i:letters(s, i)])
			}
			return 0, unexpected(s, i)
		}
		k := letters(s, j)
		if k == j {
			if j == len(s) {
				return 0, fmt.Errorf("missing unit after %s (units: %s)", s[i:j], unitList)
			}
			return 0, unexpected(s, j)
		}
		u := unitIndex(s[j:k])
		switch {
		case u < 0:
			return 0, fmt.Errorf("unknown unit %q (units: %s)", s[j:k], unitList)
		case u == prev:
			return 0, fmt.Errorf("unit %q repeated", s[j:k])
		case u < prev:
			return 0, fmt.Errorf("unit %q after %q; write units largest first (%s)", s[j:k], units[prev].name, unitList)
		}
		v, err := scale(s[i:j], units[u].size)
		if err != nil {
			return 0, err
		}
		if total > math.MaxInt64-v {
			return 0, tooLarge()
		}
		total += v
		prev = u
		i = k
	}
	return total, nil
}

// scale returns the decimal number num times unit.
func scale(num string, unit time.Duration) (Duration, error) {
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, tooLarge()
	}
	return Duration(n * int64(unit)), nil
}

func tooLarge() error {
	return fmt.Errorf("too large (at most %v)", maxDuration)
}

func unexpected(s string, i int) error {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Errorf("unexpected character %q", r)
}

func unitIndex(name string) int {
	for i, u := range units {
		if u.name == name {
			return i
		}
	}
	return -1
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// digits returns the end of the run of ASCII digits starting at i.
func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// letters returns the end of the run of ASCII letters starting at i.
func letters(s string, i int) int {
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	return i
}

// String formats d canonically, so that ParseDuration(d.String()) == d for
// every value ParseDuration returns: "-1" for permanent, "0" for zero,
// otherwise days, hours, minutes, seconds and milliseconds, largest first,
// zero parts left out ("30d", "1d12h", "1m30s", "150ms"). Weeks and ticks
// are never written. Sub-millisecond parts (which ParseDuration never
// produces) are dropped, except that a positive value below one
// millisecond is written "1ms" so it stays positive.
func (d Duration) String() string {
	switch {
	case d < 0:
		return "-1"
	case d == 0:
		return "0"
	}
	var buf [48]byte
	b := buf[:0]
	rem := time.Duration(d)
	for _, u := range units {
		if u.size == Week || u.size == Tick {
			continue
		}
		if n := rem / u.size; n > 0 {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, u.name...)
			rem -= n * u.size
		}
	}
	if len(b) == 0 {
		return "1ms"
	}
	return string(b)
}

// MarshalText implements encoding.TextMarshaler with String.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseDuration.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler for other configuration files
// that hold a Duration: it accepts an integer or a string scalar. (The YAML
// decoder does not call it for a null value, which leaves d unchanged.)
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := durationNode(n)
	if err != nil {
		return fmt.Errorf("ttl: line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// durationNode parses a YAML value node holding a duration.
func durationNode(n *yaml.Node) (Duration, error) {
	n = yamlnode.Deref(n)
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a duration (like 14d, 90m or -1), got %s", yamlnode.KindName(n))
	}
	switch tag := n.ShortTag(); tag {
	case "!!int", "!!str":
		d, err := parseDuration(n.Value)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %w", n.Value, err)
		}
		return d, nil
	case "!!null":
		return 0, errors.New("missing value (want a duration like 14d, 90m or -1)")
	default:
		return 0, fmt.Errorf("want a duration (like 14d, 90m or -1), got %s %q", yamlnode.KindName(n), n.Value)
	}
}
