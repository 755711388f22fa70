package meshcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/mesh"
)

// model is the naive specification of Cache: an ordered slice, oldest
// first, with linear search. It also serves as the seed design's baseline
// in BenchmarkMeshCacheBaselines.
type model struct {
	entries []modelEntry
}

type modelEntry struct {
	key    string
	mesh   *mesh.Mesh
	source string
	bytes  int64
}

func (md *model) find(key string) int {
	return slices.IndexFunc(md.entries, func(e modelEntry) bool { return e.key == key })
}

func (md *model) Store(key string, m *mesh.Mesh, source string, capacity int) bool {
	if key == "" || m == nil || len(m.Indices) < 3 || m.Quality == mesh.Low || !Admitted(source) {
		return false
	}
	if i := md.find(key); i >= 0 {
		md.entries = slices.Delete(md.entries, i, i+1)
	}
	md.entries = append(md.entries, modelEntry{key, m, source, m.Bytes()})
	for len(md.entries) > max(capacity, 0) {
		md.entries = slices.Delete(md.entries, 0, 1)
	}
	return capacity > 0
}

func (md *model) Restore(key string) (Record, bool) {
	i := md.find(key)
	if i < 0 {
		return Record{}, false
	}
	e := md.entries[i]
	md.entries = slices.Delete(md.entries, i, i+1)
	if e.mesh == nil || len(e.mesh.Indices) < 3 || e.mesh.Quality == mesh.Low || !Admitted(e.source) {
		return Record{}, false
	}
	md.entries = append(md.entries, e)
	return Record{Mesh: e.mesh, Source: e.source}, true
}

func (md *model) Clear() { md.entries = nil }

func (md *model) Snapshot() Snapshot {
	s := Snapshot{Count: len(md.entries), Entries: []Entry{}}
	for _, e := range md.entries {
		s.Entries = append(s.Entries, Entry{Key: e.key, Source: e.source})
		s.RetainedBytes += e.bytes
	}
	return s
}

func TestModel(t *testing.T) {
	tile := func(res int32) *terrain.Tile {
		return &terrain.Tile{Request: terrain.Request{Size: 16, Resolution: res}, Elevations: make([]float32, res*res)}
	}
	build := func(res int32, step int) *mesh.Mesh {
		m, err := mesh.BuildStep(tile(res), step)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	spoilable := build(3, 1)
	spoilableIndices := spoilable.Indices
	meshes := []*mesh.Mesh{build(2, 1), build(3, 1), build(4, 1), nil, {}, build(8, 2), spoilable}
	sources := []string{SourceBakedFull, SourceBakedFull, "generated_full", SourceSplat, SourceMemoryOverlay, SourceBakedLow, ""}
	keys := []string{"", "a", "b", "c", "d", "e", "f", "g", "h"}
	capacities := []int{-1, 0, 1, 2, 3, 4, 4, 4, 6, 6, 6, 6}

	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 99))
		var c Cache
		var md model
		spoilable.Indices = spoilableIndices
		var log []string
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d after %v: %s", seed, log[max(len(log)-12, 0):], fmt.Sprintf(format, args...))
		}
		for range 1500 {
			switch op := r.IntN(100); {
			case op < 45:
				k, mi, src, cp := keys[r.IntN(len(keys))], r.IntN(len(meshes)), sources[r.IntN(len(sources))], capacities[r.IntN(len(capacities))]
				log = append(log, fmt.Sprintf("Store(%q, m%d, %q, %d)", k, mi, src, cp))
				if got, want := c.Store(k, meshes[mi], src, cp), md.Store(k, meshes[mi], src, cp); got != want {
					fail("Store = %v, want %v", got, want)
				}
			case op < 90:
				k := keys[r.IntN(len(keys))]
				log = append(log, fmt.Sprintf("Restore(%q)", k))
				got, gok := c.Restore(k)
				want, wok := md.Restore(k)
				if got != want || gok != wok {
					fail("Restore = %p %q %v, want %p %q %v", got.Mesh, got.Source, gok, want.Mesh, want.Source, wok)
				}
			case op < 93:
				log = append(log, "Clear()")
				c.Clear()
				md.Clear()
			default:
				// Spoil or repair the shared mesh behind the cache's back.
				if spoilable.Indices == nil {
					spoilable.Indices = spoilableIndices
				} else {
					spoilable.Indices = nil
				}
				log = append(log, fmt.Sprintf("spoil(%v)", spoilable.Indices == nil))
			}
			got, want := c.Snapshot(), md.Snapshot()
			if got.Count != want.Count || got.RetainedBytes != want.RetainedBytes || !slices.Equal(got.Entries, want.Entries) {
				fail("Snapshot = %+v, want %+v", got, want)
			}
		}
	}
}
