package meshcache

import (
	"container/list"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rtpengine/rtp/terrain/mesh"
)

const benchCapacity = 48 // ProfileHigh

// benchOp is one operation of the benchmark workload.
type benchOp struct {
	key   string
	mesh  *mesh.Mesh
	store bool
}

// benchWorkload is a player wandering a 12x12 block of tiles: each step
// moves one tile at most, then restores (75%) or stores (25%) one of the
// 3x3 tiles around the player. Keys have the loader's "tile:x:z" form; 144
// keys against capacity 48 give both hits and evictions.
func benchWorkload(tb testing.TB, n int) []benchOp {
	const side = 12
	meshes := map[string]*mesh.Mesh{}
	r := rand.New(rand.NewPCG(1, 2))
	ops := make([]benchOp, n)
	px, pz := side/2, side/2
	for i := range ops {
		px = min(max(px+r.IntN(3)-1, 1), side-2)
		pz = min(max(pz+r.IntN(3)-1, 1), side-2)
		x, z := px+r.IntN(3)-1, pz+r.IntN(3)-1
		key := fmt.Sprintf("tile:%d:%d", x, z)
		if meshes[key] == nil {
			meshes[key] = newMesh(tb, int64(x))
		}
		ops[i] = benchOp{key: key, mesh: meshes[key], store: r.IntN(4) == 0}
	}
	return ops
}

// cacher is what the baselines share with Cache.
type cacher interface {
	Store(key string, m *mesh.Mesh, source string, capacity int) bool
	Restore(key string) (Record, bool)
}

func runWorkload(b *testing.B, c cacher, ops []benchOp) {
	for _, op := range ops[:len(ops)/2] { // warm up to steady state
		c.Store(op.key, op.mesh, SourceBakedFull, benchCapacity)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		op := &ops[i%len(ops)]
		if op.store {
			c.Store(op.key, op.mesh, SourceBakedFull, benchCapacity)
		} else {
			c.Restore(op.key)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkMeshCache: Store and Restore on one goroutine at capacity 48.
// Target: >= 5e6 ops/s (<= 200 ns/op).
func BenchmarkMeshCache(b *testing.B) {
	runWorkload(b, New(), benchWorkload(b, 1<<14))
}

// BenchmarkMeshCacheParallel: the same workload from GOMAXPROCS goroutines
// on one cache (one mutex).
func BenchmarkMeshCacheParallel(b *testing.B) {
	ops := benchWorkload(b, 1<<14)
	c := New()
	for _, op := range ops[:len(ops)/2] {
		c.Store(op.key, op.mesh, SourceBakedFull, benchCapacity)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(ops))
		for pb.Next() {
			op := &ops[i%len(ops)]
			if op.store {
				c.Store(op.key, op.mesh, SourceBakedFull, benchCapacity)
			} else {
				c.Restore(op.key)
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkMeshCacheBaselines compares the single-threaded cores on the
// same workload: the intrusive list (Cache's core), container/list, and the
// ordered slice of the test model.
func BenchmarkMeshCacheBaselines(b *testing.B) {
	ops := benchWorkload(b, 1<<14)
	b.Run("intrusive", func(b *testing.B) { runWorkload(b, &lruCacher{}, ops) })
	b.Run("containerList", func(b *testing.B) { runWorkload(b, newListCache(), ops) })
	b.Run("orderedSlice", func(b *testing.B) { runWorkload(b, &model{}, ops) })
}

// lruCacher is Cache without the mutex.
type lruCacher struct{ l cache }

func (c *lruCacher) Store(key string, m *mesh.Mesh, source string, capacity int) bool {
	if key == "" || !admissible(m, source) {
		return false
	}
	return c.l.store(key, m, source, m.Bytes(), capacity)
}

func (c *lruCacher) Restore(key string) (Record, bool) { return c.l.restore(key) }

// listCache is the container/list alternative, same rules.
type listCache struct {
	ll    *list.List
	items map[string]*list.Element
}

type listEntry struct {
	key    string
	mesh   *mesh.Mesh
	source string
}

func newListCache() *listCache {
	return &listCache{ll: list.New(), items: map[string]*list.Element{}}
}

func (c *listCache) Store(key string, m *mesh.Mesh, source string, capacity int) bool {
	if key == "" || !admissible(m, source) {
		return false
	}
	if capacity <= 0 {
		c.ll.Init()
		clear(c.items)
		return false
	}
	if e, ok := c.items[key]; ok {
		le := e.Value.(*listEntry)
		le.mesh, le.source = m, source
		c.ll.MoveToBack(e)
	} else {
		c.items[key] = c.ll.PushBack(&listEntry{key, m, source})
	}
	for c.ll.Len() > capacity {
		e := c.ll.Front()
		delete(c.items, e.Value.(*listEntry).key)
		c.ll.Remove(e)
	}
	return true
}

func (c *listCache) Restore(key string) (Record, bool) {
	e, ok := c.items[key]
	if !ok {
		return Record{}, false
	}
	le := e.Value.(*listEntry)
	if !admissible(le.mesh, le.source) {
		delete(c.items, key)
		c.ll.Remove(e)
		return Record{}, false
	}
	c.ll.MoveToBack(e)
	return Record{Mesh: le.mesh, Source: le.source}, true
}
