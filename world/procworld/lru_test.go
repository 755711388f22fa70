package procworld

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLRUModel runs random operations against the lru and a naive model (a
// slice, most recent first) and compares them after every step.
func TestLRUModel(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 8} {
		rng := rand.New(rand.NewPCG(uint64(capacity), 7))
		l := newLRU[int, int](capacity)
		type kv struct{ k, v int }
		var model []kv // most recent first
		find := func(k int) int {
			return slices.IndexFunc(model, func(e kv) bool { return e.k == k })
		}
		for step := range 2000 {
			k := rng.IntN(2 * capacity)
			switch op := rng.IntN(3); op {
			case 0: // Get
				v, ok := l.Get(k)
				i := find(k)
				if ok != (i >= 0) || ok && v != model[i].v {
					t.Fatalf("cap %d step %d: Get(%d) = %d, %v; model has index %d", capacity, step, k, v, ok, i)
				}
				if i >= 0 {
					e := model[i]
					model = append([]kv{e}, slices.Delete(model, i, i+1)...)
				}
			case 1: // Peek
				v, ok := l.Peek(k)
				i := find(k)
				if ok != (i >= 0) || ok && v != model[i].v {
					t.Fatalf("cap %d step %d: Peek(%d) = %d, %v; model has index %d", capacity, step, k, v, ok, i)
				}
			case 2: // Add
				v := rng.Int()
				l.Add(k, v)
				if i := find(k); i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
				model = append([]kv{{k, v}}, model...)
				if len(model) > capacity {
					model = model[:capacity]
				}
			}
			var want []int
			for _, e := range model {
				want = append(want, e.k)
			}
			if got := l.Keys(); !slices.Equal(got, want) || l.Len() != len(want) {
				t.Fatalf("cap %d step %d: keys %v (len %d), want %v", capacity, step, got, l.Len(), want)
			}
		}
	}
}

func TestLRUMinimumCapacity(t *testing.T) {
	l := newLRU[int, string](0)
	l.Add(1, "a")
	l.Add(2, "b")
	if _, ok := l.Get(1); ok || l.Len() != 1 {
		t.Fatalf("capacity 0 lru holds %v, want only the last entry", l.Keys())
	}
}
