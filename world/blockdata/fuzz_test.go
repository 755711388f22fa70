package blockdata

import (
	"strings"
	"testing"
)

func FuzzState(f *testing.F) {
	for _, s := range []string{
		"", "minecraft:", "minecraft:stone", "minecraft:oak_slab[type=top,waterlogged=false]",
		"minecraft:oak_slab[", "minecraft:oak_slab]", "minecraft:[]", "minecraft:oak_slab[[]]",
		"minecraft:oak_slab[type==top]", "minecraft:oak_slab[,,,]", "minecraft:a[b=c][d=e]",
		"minecraft:x[legacy_id=44,legacy_data=8]", "minecraft:x[legacy_id=,legacy_data=]",
		"minecraft:x[legacy_id=99999999999999999999,legacy_data=0]",
		"minecraft:" + strings.Repeat("[", 1000), "minecraft:snow[" + strings.Repeat("layers=1,", 5000) + "]",
		strings.Repeat("minecraft:", 10000),
	} {
		f.Add(s)
	}
	old, newest := Tables()[0], Newest()
	f.Fuzz(func(t *testing.T, s string) {
		for _, tb := range []*Table{old, newest} {
			shape, ok := tb.State(s)
			if !ok && shape != Empty {
				t.Errorf("State(%q) = %v with ok false", s, shape)
			}
			if ok && shape > Partial {
				t.Errorf("State(%q) = %d, no Shape", s, shape)
			}
			if ok && !strings.HasPrefix(s, "minecraft:") {
				t.Errorf("State(%q) answered without the minecraft namespace", s)
			}
		}
	})
}
