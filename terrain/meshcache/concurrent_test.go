package meshcache

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/terrain/mesh"
)

// TestConcurrent runs stores, restores, snapshots and clears from several
// goroutines (meaningful under -race) and checks what must hold whatever
// the interleaving: a hit returns the mesh and source stored under that key,
// and every snapshot is consistent.
func TestConcurrent(t *testing.T) {
	const (
		workers  = 6
		steps    = 3000
		nkeys    = 64
		capacity = 48
	)
	keys := make([]string, nkeys)
	meshes := make(map[string]*mesh.Mesh, nkeys)
	sourceOf := make(map[string]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("tile:%d:%d", i%8, i/8)
		meshes[keys[i]] = newMesh(t, int64(i))
		sourceOf[keys[i]] = []string{SourceBakedFull, "generated_full"}[i%2]
	}
	c := New()
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range steps {
				k := keys[r.IntN(nkeys)]
				if r.IntN(3) == 0 {
					cp := capacity
					if w == 0 {
						cp = 24 // one goroutine runs a smaller profile
					}
					if !c.Store(k, meshes[k], sourceOf[k], cp) {
						errs <- fmt.Errorf("Store(%s) = false", k)
						return
					}
				} else if rec, ok := c.Restore(k); ok && (rec.Mesh != meshes[k] || rec.Source != sourceOf[k]) {
					errs <- fmt.Errorf("Restore(%s) = %p %q, want %p %q", k, rec.Mesh, rec.Source, meshes[k], sourceOf[k])
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 300 {
			if i%50 == 49 {
				c.Clear()
			}
			s := c.Snapshot()
			if err := checkSnapshot(s, meshes, sourceOf, capacity); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := checkSnapshot(c.Snapshot(), meshes, sourceOf, capacity); err != nil {
		t.Error(err)
	}
}

func checkSnapshot(s Snapshot, meshes map[string]*mesh.Mesh, sourceOf map[string]string, capacity int) error {
	if s.Count != len(s.Entries) || s.Count > capacity {
		return fmt.Errorf("snapshot count %d with %d entries, capacity %d", s.Count, len(s.Entries), capacity)
	}
	seen := map[string]bool{}
	var bytes int64
	for _, e := range s.Entries {
		if seen[e.Key] {
			return fmt.Errorf("snapshot lists %s twice", e.Key)
		}
		seen[e.Key] = true
		if e.Source != sourceOf[e.Key] {
			return fmt.Errorf("snapshot source of %s = %q, want %q", e.Key, e.Source, sourceOf[e.Key])
		}
		bytes += meshes[e.Key].Bytes()
	}
	if s.RetainedBytes != bytes {
		return fmt.Errorf("snapshot RetainedBytes = %d, entries hold %d", s.RetainedBytes, bytes)
	}
	return nil
}
