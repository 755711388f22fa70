package meshcache

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/mesh"
)

// newMesh builds a small full-quality mesh whose origin tells meshes apart.
func newMesh(t testing.TB, x int64) *mesh.Mesh {
	t.Helper()
	req := terrain.Request{OriginX: x, Size: 8, Resolution: 3}
	tile := &terrain.Tile{Request: req, Elevations: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}}
	m, err := mesh.Build(tile, mesh.Full)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func entries(kv ...string) []Entry {
	out := []Entry{}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Entry{Key: kv[i], Source: kv[i+1]})
	}
	return out
}

func checkEntries(t *testing.T, c *Cache, want []Entry) {
	t.Helper()
	s := c.Snapshot()
	if s.Count != len(want) || !slices.Equal(s.Entries, want) {
		t.Fatalf("Snapshot() = %d %v, want %d %v", s.Count, s.Entries, len(want), want)
	}
	if n := c.Len(); n != len(want) {
		t.Fatalf("Len() = %d, want %d", n, len(want))
	}
}

func TestAdmitted(t *testing.T) {
	tests := []struct {
		source string
		want   bool
	}{
		{SourceBakedFull, true},
		{"generated_full", true},
		{"archive_full", true},
		{"", false},
		{SourceControlSplatCache, false},
		{SourceSplatCache, false},
		{SourceSplat, false},
		{SourceMemoryOverlay, false},
		{SourceBiomeTint, false},
		{SourceBakedLow, false},
		{"low", false},
		{"fallback_low", false},
		{"lowland_full", true}, // "low" only as the whole name or a "_low" suffix
	}
	for _, tc := range tests {
		if got := Admitted(tc.source); got != tc.want {
			t.Errorf("Admitted(%q) = %v, want %v", tc.source, got, tc.want)
		}
	}
}

// TestAdmission: every refused Store returns false and leaves the cache
// exactly as it was, even with a capacity that would have emptied it.
func TestAdmission(t *testing.T) {
	good := newMesh(t, 0)
	low, err := mesh.BuildStep(&terrain.Tile{Request: terrain.Request{Size: 8, Resolution: 3}, Elevations: make([]float32, 9)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	single := newMesh(t, 0)
	single.Indices = single.Indices[:0]
	tests := []struct {
		name   string
		key    string
		m      *mesh.Mesh
		source string
	}{
		{"empty key", "", good, SourceBakedFull},
		{"nil mesh", "k", nil, SourceBakedFull},
		{"no triangles", "k", single, SourceBakedFull},
		{"zero mesh", "k", &mesh.Mesh{}, SourceBakedFull},
		{"low mesh", "k", low, SourceBakedFull},
		{"empty source", "k", good, ""},
		{"control splat", "k", good, SourceControlSplatCache},
		{"splat cache", "k", good, SourceSplatCache},
		{"splat", "k", good, SourceSplat},
		{"memory overlay", "k", good, SourceMemoryOverlay},
		{"biome tint", "k", good, SourceBiomeTint},
		{"low source", "k", good, SourceBakedLow},
		{"replacing with overlay", "old", good, SourceSplat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, capacity := range []int{4, 0, -1} {
				c := New()
				old := newMesh(t, 1)
				if !c.Store("old", old, SourceBakedFull, 4) {
					t.Fatal("Store(old) = false")
				}
				before := c.Snapshot()
				if c.Store(tc.key, tc.m, tc.source, capacity) {
					t.Fatalf("Store(%q, %s) at capacity %d = true, want false", tc.key, tc.source, capacity)
				}
				if after := c.Snapshot(); !reflect.DeepEqual(before, after) {
					t.Fatalf("refused Store changed the cache: %+v -> %+v", before, after)
				}
				if r, ok := c.Restore("old"); !ok || r.Mesh != old {
					t.Fatalf("Restore(old) = %v, %v after a refused Store", r, ok)
				}
			}
		})
	}
	c := New()
	if !c.Store("k", good, "generated_full", 1) {
		t.Error(`Store with source "generated_full" = false, want true (any non-overlay, non-low source)`)
	}
}

func TestRestoreIdentityAndSource(t *testing.T) {
	var c Cache // the zero value is usable
	if r, ok := c.Restore("a"); ok || r != (Record{}) {
		t.Fatalf("Restore on an empty cache = %v, %v, want a miss", r, ok)
	}
	a, b := newMesh(t, 1), newMesh(t, 2)
	if !c.Store("a", a, SourceBakedFull, 8) || !c.Store("b", b, "generated_full", 8) {
		t.Fatal("Store = false")
	}
	r, ok := c.Restore("a")
	if !ok || r.Mesh != a || r.Source != SourceBakedFull {
		t.Fatalf("Restore(a) = %p %q %v, want %p %q true", r.Mesh, r.Source, ok, a, SourceBakedFull)
	}
	// The record is the caller's: changing it does not reach the cache.
	r.Mesh, r.Source = b, "changed"
	if r2, _ := c.Restore("a"); r2.Mesh != a || r2.Source != SourceBakedFull {
		t.Fatalf("Restore(a) after editing a record = %p %q, want %p %q", r2.Mesh, r2.Source, a, SourceBakedFull)
	}
	if r, ok := c.Restore("b"); !ok || r.Mesh != b || r.Source != "generated_full" {
		t.Fatalf("Restore(b) = %p %q %v, want %p generated_full true", r.Mesh, r.Source, ok, b)
	}
	if _, ok := c.Restore("missing"); ok {
		t.Fatal("Restore(missing) hit")
	}
	// Replacing an entry swaps mesh and source and makes it newest.
	a2 := newMesh(t, 3)
	if !c.Store("a", a2, "rebuilt_full", 8) {
		t.Fatal("Store(a, a2) = false")
	}
	checkEntries(t, &c, entries("b", "generated_full", "a", "rebuilt_full"))
	if r, _ := c.Restore("a"); r.Mesh != a2 || r.Source != "rebuilt_full" {
		t.Fatalf("Restore(a) after replacement = %p %q, want %p rebuilt_full", r.Mesh, r.Source, a2)
	}
}

func TestLRUTouchAndEviction(t *testing.T) {
	c := New()
	m := map[string]*mesh.Mesh{}
	store := func(key string, capacity int) {
		t.Helper()
		if m[key] == nil {
			m[key] = newMesh(t, int64(len(m)))
		}
		if !c.Store(key, m[key], SourceBakedFull, capacity) {
			t.Fatalf("Store(%s) = false", key)
		}
	}
	restore := func(key string, hit bool) {
		t.Helper()
		r, ok := c.Restore(key)
		if ok != hit || (hit && r.Mesh != m[key]) {
			t.Fatalf("Restore(%s) = %p, %v; want hit %v", key, r.Mesh, ok, hit)
		}
	}
	f := SourceBakedFull
	store("a", 3)
	store("b", 3)
	store("c", 3)
	checkEntries(t, c, entries("a", f, "b", f, "c", f))
	restore("a", true) // touch: a becomes newest
	checkEntries(t, c, entries("b", f, "c", f, "a", f))
	store("d", 3) // evicts the oldest, b
	checkEntries(t, c, entries("c", f, "a", f, "d", f))
	restore("b", false)
	store("c", 3) // re-store touches
	checkEntries(t, c, entries("a", f, "d", f, "c", f))
	restore("c", true) // touching the newest keeps the order
	checkEntries(t, c, entries("a", f, "d", f, "c", f))
	store("e", 5)
	store("g", 5)
	checkEntries(t, c, entries("a", f, "d", f, "c", f, "e", f, "g", f))
	store("d", 2) // shrinking capacity trims the oldest, keeps the stored one
	checkEntries(t, c, entries("g", f, "d", f))
	restore("a", false)
	restore("c", false)
	store("h", 1)
	checkEntries(t, c, entries("h", f))
}

func TestZeroAndNegativeCapacity(t *testing.T) {
	for _, capacity := range []int{0, -1, -1 << 40} {
		c := New()
		for i := range 5 {
			c.Store(fmt.Sprint("k", i), newMesh(t, int64(i)), SourceBakedFull, 8)
		}
		if c.Store("new", newMesh(t, 9), SourceBakedFull, capacity) {
			t.Errorf("Store at capacity %d = true, want false", capacity)
		}
		checkEntries(t, c, entries())
		if s := c.Snapshot(); s.RetainedBytes != 0 {
			t.Errorf("RetainedBytes = %d after capacity %d, want 0", s.RetainedBytes, capacity)
		}
		for _, k := range []string{"new", "k0", "k4"} {
			if _, ok := c.Restore(k); ok {
				t.Errorf("Restore(%s) hit after capacity %d", k, capacity)
			}
		}
		// The cache works again at a positive capacity.
		if !c.Store("again", newMesh(t, 1), SourceBakedFull, 1) {
			t.Error("Store after emptying = false")
		}
		checkEntries(t, c, entries("again", SourceBakedFull))
	}
	// An existing key stored at capacity 0 is evicted too.
	c := New()
	c.Store("k", newMesh(t, 1), SourceBakedFull, 2)
	if c.Store("k", newMesh(t, 2), SourceBakedFull, 0) {
		t.Error("re-Store at capacity 0 = true")
	}
	checkEntries(t, c, entries())
}

func TestClearIdempotent(t *testing.T) {
	var c Cache
	c.Clear() // on the zero value
	checkEntries(t, &c, entries())
	for i := range 4 {
		c.Store(fmt.Sprint("k", i), newMesh(t, int64(i)), SourceBakedFull, 8)
	}
	c.Clear()
	checkEntries(t, &c, entries())
	c.Clear()
	checkEntries(t, &c, entries())
	if s := c.Snapshot(); s.RetainedBytes != 0 {
		t.Errorf("RetainedBytes = %d after Clear, want 0", s.RetainedBytes)
	}
	if _, ok := c.Restore("k1"); ok {
		t.Error("Restore hit after Clear")
	}
	if !c.Store("k1", newMesh(t, 1), SourceBakedFull, 8) {
		t.Error("Store after Clear = false")
	}
	checkEntries(t, &c, entries("k1", SourceBakedFull))
}

// TestReleasesMeshes: eviction, replacement, capacity 0 and Clear drop the
// cache's references, so the garbage collector can reclaim the meshes.
func TestReleasesMeshes(t *testing.T) {
	var freed atomic.Int32
	c := New()
	store := func(key string, capacity int) {
		m := newMesh(t, 0)
		runtime.AddCleanup(m, func(int) { freed.Add(1) }, 0)
		c.Store(key, m, SourceBakedFull, capacity)
	}
	waitFreed := func(want int32, after string) {
		t.Helper()
		if _, ok := eventually.Within(10*time.Second, func() bool {
			runtime.GC()
			return freed.Load() >= want
		}); !ok {
			t.Fatalf("after %s: %d meshes reclaimed, want %d", after, freed.Load(), want)
		}
	}
	store("a", 2)
	store("b", 2)
	store("c", 2) // evicts a
	waitFreed(1, "eviction")
	store("b", 2) // replaces b's mesh
	waitFreed(2, "replacement")
	store("d", 0) // empties: b, c and d
	waitFreed(5, "capacity 0")
	store("e", 2)
	store("f", 2)
	c.Clear()
	waitFreed(7, "Clear")
	runtime.KeepAlive(c)
}

func TestRestoreRemovesInvalid(t *testing.T) {
	c := New()
	spoilt := newMesh(t, 1)
	c.Store("a", newMesh(t, 0), SourceBakedFull, 8)
	c.Store("spoilt", spoilt, SourceBakedFull, 8)
	c.Store("b", newMesh(t, 2), SourceBakedFull, 8)
	// Breach of the no-modification rule: the mesh loses its triangles.
	spoilt.Indices = nil
	if r, ok := c.Restore("spoilt"); ok || r != (Record{}) {
		t.Fatalf("Restore(spoilt) = %v, %v, want a miss", r, ok)
	}
	checkEntries(t, c, entries("a", SourceBakedFull, "b", SourceBakedFull))

	// A source that is not admitted cannot be stored, but an entry whose
	// source no longer passes admission (planted here) is removed too.
	c.mu.Lock()
	c.l.store("overlay", newMesh(t, 3), SourceBiomeTint, 0, 8)
	c.mu.Unlock()
	checkEntries(t, c, entries("a", SourceBakedFull, "b", SourceBakedFull, "overlay", SourceBiomeTint))
	if _, ok := c.Restore("overlay"); ok {
		t.Fatal("Restore(overlay) hit")
	}
	checkEntries(t, c, entries("a", SourceBakedFull, "b", SourceBakedFull))
}

func TestSnapshotDetached(t *testing.T) {
	c := New()
	a, b := newMesh(t, 1), newMesh(t, 2)
	c.Store("a", a, SourceBakedFull, 8)
	c.Store("b", b, "generated_full", 8)
	s := c.Snapshot()
	want := Snapshot{Count: 2, Entries: entries("a", SourceBakedFull, "b", "generated_full"), RetainedBytes: a.Bytes() + b.Bytes()}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Snapshot() = %+v, want %+v", s, want)
	}
	// Editing the snapshot does not reach the cache.
	s.Entries[0] = Entry{Key: "zzz", Source: "x"}
	s.Entries = append(s.Entries, Entry{Key: "extra"})
	s.Count = 99
	checkEntries(t, c, entries("a", SourceBakedFull, "b", "generated_full"))
	// Cache operations do not reach an earlier snapshot.
	s2 := c.Snapshot()
	c.Restore("a")
	c.Store("c", newMesh(t, 3), SourceBakedFull, 2)
	if !reflect.DeepEqual(s2, want) {
		t.Fatalf("earlier snapshot changed to %+v, want %+v", s2, want)
	}
	if s3 := c.Snapshot(); s3.RetainedBytes != a.Bytes()+newMesh(t, 3).Bytes() {
		t.Errorf("RetainedBytes = %d after eviction, want %d", s3.RetainedBytes, a.Bytes()+newMesh(t, 3).Bytes())
	}
	// No mesh reference can hide in a Snapshot: its type holds none.
	if p := pathTo(reflect.TypeOf(Snapshot{}), reflect.TypeOf(mesh.Mesh{}), nil); p != "" {
		t.Errorf("Snapshot can reach a mesh through %s", p)
	}
	// Entries is never nil, so an empty snapshot reads as [] not null.
	if e := New().Snapshot().Entries; e == nil {
		t.Error("empty Snapshot().Entries is nil")
	}
}

// pathTo returns a field path from t to target, or "" when t cannot hold
// a target (directly, by pointer, slice, array, map or interface).
func pathTo(t, target reflect.Type, seen map[reflect.Type]bool) string {
	if t == target {
		return t.String()
	}
	if seen == nil {
		seen = map[reflect.Type]bool{}
	}
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return t.String() + " (interface)"
	case reflect.Pointer, reflect.Slice, reflect.Array:
		if p := pathTo(t.Elem(), target, seen); p != "" {
			return t.String() + " -> " + p
		}
	case reflect.Map:
		for _, e := range []reflect.Type{t.Key(), t.Elem()} {
			if p := pathTo(e, target, seen); p != "" {
				return t.String() + " -> " + p
			}
		}
	case reflect.Struct:
		for f := range t.Fields() {
			if p := pathTo(f.Type, target, seen); p != "" {
				return t.String() + "." + f.Name + " -> " + p
			}
		}
	}
	return ""
}

func TestRetainedBytes(t *testing.T) {
	c := New()
	small := newMesh(t, 1)
	big, err := mesh.Build(&terrain.Tile{Request: terrain.Request{Size: 16, Resolution: 5}, Elevations: make([]float32, 25)}, mesh.Full)
	if err != nil {
		t.Fatal(err)
	}
	c.Store("a", small, SourceBakedFull, 2)
	c.Store("b", small, SourceBakedFull, 2)
	if got, want := c.Snapshot().RetainedBytes, 2*small.Bytes(); got != want {
		t.Fatalf("RetainedBytes = %d, want %d", got, want)
	}
	c.Store("a", big, SourceBakedFull, 2) // replacement
	if got, want := c.Snapshot().RetainedBytes, small.Bytes()+big.Bytes(); got != want {
		t.Fatalf("RetainedBytes after replacement = %d, want %d", got, want)
	}
	c.Store("c", small, SourceBakedFull, 2) // evicts b
	if got, want := c.Snapshot().RetainedBytes, small.Bytes()+big.Bytes(); got != want {
		t.Fatalf("RetainedBytes after eviction = %d, want %d", got, want)
	}
	c.Store("d", small, SourceBakedFull, 1) // evicts a (big) and c
	if got, want := c.Snapshot().RetainedBytes, small.Bytes(); got != want {
		t.Fatalf("RetainedBytes after shrinking = %d, want %d", got, want)
	}
}
