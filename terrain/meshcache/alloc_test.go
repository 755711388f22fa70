package meshcache

import (
	"fmt"
	"testing"
)

// TestZeroAllocs pins the hot paths at zero allocations: Restore (hit and
// miss), Store of an existing key, and Store of a new key into a full cache
// (which reuses the evicted entry's node).
func TestZeroAllocs(t *testing.T) {
	c := New()
	keys := make([]string, 96)
	for i := range keys {
		keys[i] = fmt.Sprintf("tile:%d:%d", i%12, i/12)
	}
	m := newMesh(t, 0)
	for _, k := range keys[:benchCapacity] {
		c.Store(k, m, SourceBakedFull, benchCapacity)
	}
	i := 0
	tests := []struct {
		name string
		f    func()
	}{
		{"Restore hit", func() { c.Restore(keys[benchCapacity-1-i%8]); i++ }},
		{"Restore miss", func() { c.Restore("tile:missing") }},
		{"Store existing", func() { c.Store(keys[benchCapacity-1-i%8], m, SourceBakedFull, benchCapacity); i++ }},
		{"Store new, evicting", func() { c.Store(keys[i%len(keys)], m, SourceBakedFull, benchCapacity); i++ }},
	}
	for _, tc := range tests {
		if got := testing.AllocsPerRun(500, tc.f); got != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tc.name, got)
		}
	}
}
