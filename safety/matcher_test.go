package safety_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/safety"
)

func TestParseMatcher(t *testing.T) {
	tests := []struct {
		name  string
		rule  string
		canon string
		match []string
		miss  []string
	}{
		{"full name", "minecraft:lava", "minecraft:lava",
			[]string{"minecraft:lava", "minecraft:lava[level=0]", "lava"},
			[]string{"minecraft:water", "mymod:lava", "minecraft:lava_cauldron"}},
		{"default namespace", "lava", "minecraft:lava",
			[]string{"minecraft:lava[level=3]"}, []string{"other:lava"}},
		{"other namespace", "mymod:acid", "mymod:acid",
			[]string{"mymod:acid", "mymod:acid[level=1]"}, []string{"minecraft:acid", "acid"}},
		{"glob path", "*_leaves", "minecraft:*_leaves",
			[]string{"minecraft:oak_leaves[distance=7,persistent=false,waterlogged=false]", "minecraft:azalea_leaves"},
			[]string{"minecraft:leaves_of_grass", "biomesoplenty:fir_leaves"}},
		{"glob namespace", "*:*_leaves", "*:*_leaves",
			[]string{"biomesoplenty:fir_leaves", "minecraft:oak_leaves"}, []string{"minecraft:oak_log"}},
		{"property", "water[level=0]", "minecraft:water[level=0]",
			[]string{"minecraft:water[level=0]"}, []string{"minecraft:water[level=1]", "minecraft:water"}},
		{"property alternatives and spaces", " campfire [ lit = true | false , facing=north ] ", "minecraft:campfire[lit=true|false,facing=north]",
			[]string{"minecraft:campfire[facing=north,lit=false,signal_fire=false,waterlogged=false]"},
			[]string{"minecraft:campfire[facing=south,lit=true]", "minecraft:campfire[lit=true]"}},
		{"negation", "*:*[waterlogged!=true]", "*:*[waterlogged!=true]",
			[]string{"minecraft:stone", "minecraft:oak_stairs[waterlogged=false]"},
			[]string{"minecraft:oak_stairs[waterlogged=true]"}},
		{"tag", "#leaves", "#leaves",
			[]string{"minecraft:birch_leaves[persistent=true]"}, []string{"minecraft:birch_log"}},
		{"namespaced tag", "#minecraft:leaves", "#leaves",
			[]string{"minecraft:birch_leaves"}, nil},
		{"tag with predicate", "#leaves[persistent=true]", "#leaves[persistent=true]",
			[]string{"minecraft:birch_leaves[persistent=true]"}, []string{"minecraft:birch_leaves[persistent=false]"}},
		{"tag member predicate", "#waterlogged", "#waterlogged",
			[]string{"minecraft:oak_slab[type=top,waterlogged=true]", "mymod:pipe[waterlogged=true]"},
			[]string{"minecraft:oak_slab[type=top,waterlogged=false]", "minecraft:stone"}},
		{"every campfire burns", "#fire", "#fire",
			[]string{"minecraft:fire[age=3]", "minecraft:campfire[lit=true]", "minecraft:campfire[lit=false]", "minecraft:soul_fire"},
			[]string{"minecraft:fire_coral"}},
		{"nested tag", "#fluids", "#fluids",
			[]string{"minecraft:lava", "minecraft:water[level=2]", "minecraft:bubble_column[drag=true]"},
			[]string{"minecraft:stone"}},
		{"empty predicates", "stone[]", "minecraft:stone",
			[]string{"minecraft:stone"}, nil},
		{"dots dashes slashes", "my-mod.x:a/b", "my-mod.x:a/b", []string{"my-mod.x:a/b"}, []string{"my-mod.x:a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := safety.ParseMatcher(tt.rule)
			if err != nil {
				t.Fatalf("ParseMatcher(%q) = %v", tt.rule, err)
			}
			if got := m.String(); got != tt.canon {
				t.Errorf("ParseMatcher(%q).String() = %q, want %q", tt.rule, got, tt.canon)
			}
			for _, s := range tt.match {
				if !m.Match(s) {
					t.Errorf("%s.Match(%q) = false, want true", m, s)
				}
			}
			for _, s := range tt.miss {
				if m.Match(s) {
					t.Errorf("%s.Match(%q) = true, want false", m, s)
				}
			}
		})
	}
}

func TestParseMatcherErrors(t *testing.T) {
	tests := []struct {
		name   string
		rule   string
		offset int
		msg    string
	}{
		{"empty", "", 0, "expected a block name or #tag, found the end"},
		{"blank", "   ", 3, "found the end"},
		{"upper case", "minecraft:Lava", 10, "upper-case 'L'"},
		{"empty path", "minecraft:", 10, "expected a name after the namespace"},
		{"two colons", "a:b:c", 3, "at most one ':'"},
		{"unknown tag", "#nosuch", 0, "unknown tag #nosuch"},
		{"tag in other namespace", "#mymod:leaves", 1, "live in namespace minecraft"},
		{"bare hash", "#", 1, "expected a tag name after #"},
		{"unclosed", "water[level=0", 5, "unclosed '['"},
		{"unclosed after comma", "water[level=0,", 5, "unclosed '['"},
		{"missing key", "water[=0]", 6, "expected a property name"},
		{"missing op", "water[level]", 11, "expected '=' or '!=' after level"},
		{"missing value", "water[level=]", 12, "expected a value for level"},
		{"bad separator", "water[level=0;x=1]", 13, "expected ',' or ']'"},
		{"trailing", "water]", 5, "unexpected ']' after the rule"},
		{"space inside name", "oak leaves", 4, "unexpected 'l' after the rule"},
		{"glob in key", "water[lev*=0]", 9, "expected '=' or '!='"},
		{"stray char", "lava!", 4, "unexpected '!'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := safety.ParseMatcher(tt.rule)
			var se *safety.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseMatcher(%q) = %v, %v; want a *SyntaxError", tt.rule, m, err)
			}
			if se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) || se.Rule != tt.rule {
				t.Errorf("ParseMatcher(%q) error at %d %q, want at %d containing %q", tt.rule, se.Offset, se.Msg, tt.offset, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "safety: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestParseBiomeMatcher(t *testing.T) {
	m, err := safety.ParseBiomeMatcher("#ocean")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"minecraft:ocean", "minecraft:deep_frozen_ocean", "minecraft:warm_ocean"} {
		if !m.Match(b) {
			t.Errorf("#ocean does not match %s", b)
		}
	}
	if m.Match("minecraft:plains") || m.Match("minecraft:river") {
		t.Error("#ocean matches a land biome")
	}
	if _, err := safety.ParseBiomeMatcher("plains[x=1]"); err == nil || !strings.Contains(err.Error(), "properties are not allowed") {
		t.Errorf("biome rule with properties: %v", err)
	}
	if _, err := safety.ParseBiomeMatcher("#leaves"); err == nil {
		t.Error("a block tag is accepted as a biome tag")
	}
}

// TestBuiltinTags: every member of every built-in tag compiles (the
// package panics otherwise) and each tag matches something.
func TestBuiltinTags(t *testing.T) {
	for name, members := range safety.Tags() {
		m, err := safety.ParseMatcher("#" + name)
		if err != nil {
			t.Fatalf("#%s: %v", name, err)
		}
		first := strings.TrimPrefix(members[0], "*:")
		if strings.HasPrefix(first, "#") || strings.Contains(first, "*") || strings.Contains(first, "[") {
			continue
		}
		if !m.Match("minecraft:" + first) {
			t.Errorf("#%s does not match its member %s", name, first)
		}
	}
	for name := range safety.BiomeTags() {
		if _, err := safety.ParseBiomeMatcher("#" + name); err != nil {
			t.Fatalf("biome #%s: %v", name, err)
		}
	}
	// Tags returns a copy.
	safety.Tags()["leaves"][0] = "stone"
	if m, _ := safety.ParseMatcher("#leaves"); !m.Match("minecraft:oak_leaves") {
		t.Fatal("changing Tags() changed the built-in table")
	}
}

func FuzzParseMatcher(f *testing.F) {
	for _, s := range []string{
		"minecraft:lava", "lava", "*_leaves", "*:*[waterlogged=true]", "#leaves[persistent!=true]",
		"campfire[lit=true|false,facing=north]", "water[level=0", "a:b:c", "#nosuch", "minecraft:Lava", "",
		"stone[]", " x [ a = b ] ",
	} {
		f.Add(s, "minecraft:oak_leaves[persistent=true,waterlogged=false]")
	}
	f.Fuzz(func(t *testing.T, rule, state string) {
		m, err := safety.ParseMatcher(rule)
		if err != nil {
			var se *safety.SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(rule) {
				t.Fatalf("ParseMatcher(%q) = %v: want a *SyntaxError with an offset inside the rule", rule, err)
			}
			return
		}
		// The canonical form parses to the same matcher.
		again, err := safety.ParseMatcher(m.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", m.String(), rule, err)
		}
		if again.String() != m.String() {
			t.Fatalf("canonical form not stable: %q -> %q", m.String(), again.String())
		}
		if m.Match(state) != again.Match(state) {
			t.Fatalf("%q and its canonical form %q disagree on %q", rule, m.String(), state)
		}
		if _, err := safety.ParseBiomeMatcher(rule); err != nil && !strings.Contains(rule, "[") && !strings.Contains(rule, "#") {
			t.Fatalf("a block rule without properties or tags is not a biome rule: %v", err)
		}
	})
}
