package blockdata

import "testing"

func BenchmarkState(b *testing.B) {
	tb := Newest()
	states := []string{
		"minecraft:stone",
		"minecraft:oak_slab[type=top,waterlogged=false]",
		"minecraft:oak_trapdoor[facing=south,half=top,open=false,powered=false,waterlogged=true]",
		"minecraft:legacy[legacy_data=8,legacy_id=44]",
	}
	tb.State(states[0]) // decode outside the loop
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range states {
			if _, ok := tb.State(s); !ok {
				b.Fatal(s)
			}
		}
	}
}
