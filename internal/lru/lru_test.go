package lru

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// model is a naive LRU: keys oldest first.
type model struct {
	keys []int
	vals map[int]int
}

func (m *model) touch(k int) {
	i := slices.Index(m.keys, k)
	m.keys = append(slices.Delete(m.keys, i, i+1), k)
}

// TestModel runs random operations against Map and a naive model and
// compares every result and the full recency order after each step.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var m Map[int, int]
	ref := &model{vals: map[int]int{}}
	for step := range 20000 {
		k := r.IntN(40)
		switch op := r.IntN(6); op {
		case 0, 1:
			v := r.Int()
			old, replaced := m.Put(k, v)
			wantOld, wantReplaced := ref.vals[k]
			if replaced != wantReplaced || old != wantOld {
				t.Fatalf("step %d: Put(%d) = %d, %v; want %d, %v", step, k, old, replaced, wantOld, wantReplaced)
			}
			if wantReplaced {
				ref.touch(k)
			} else {
				ref.keys = append(ref.keys, k)
			}
			ref.vals[k] = v
		case 2:
			v, ok := m.Get(k)
			wv, wok := ref.vals[k]
			if v != wv || ok != wok {
				t.Fatalf("step %d: Get(%d) = %d, %v; want %d, %v", step, k, v, ok, wv, wok)
			}
			if wok {
				ref.touch(k)
			}
		case 3:
			v, ok := m.Peek(k)
			if wv, wok := ref.vals[k]; v != wv || ok != wok {
				t.Fatalf("step %d: Peek(%d) = %d, %v; want %d, %v", step, k, v, ok, wv, wok)
			}
		case 4:
			v, ok := m.Remove(k)
			wv, wok := ref.vals[k]
			if v != wv || ok != wok {
				t.Fatalf("step %d: Remove(%d) = %d, %v; want %d, %v", step, k, v, ok, wv, wok)
			}
			if wok {
				ref.keys = slices.DeleteFunc(ref.keys, func(x int) bool { return x == k })
				delete(ref.vals, k)
			}
		case 5:
			gk, gv, ok := m.RemoveOldest()
			if len(ref.keys) == 0 {
				if ok {
					t.Fatalf("step %d: RemoveOldest on empty = %d, %d, true", step, gk, gv)
				}
				continue
			}
			wk := ref.keys[0]
			if !ok || gk != wk || gv != ref.vals[wk] {
				t.Fatalf("step %d: RemoveOldest = %d, %d, %v; want %d, %d, true", step, gk, gv, ok, wk, ref.vals[wk])
			}
			ref.keys = ref.keys[1:]
			delete(ref.vals, wk)
		}
		if m.Len() != len(ref.keys) {
			t.Fatalf("step %d: Len = %d, want %d", step, m.Len(), len(ref.keys))
		}
		var got []int
		for k, v := range m.All() {
			if v != ref.vals[k] {
				t.Fatalf("step %d: All yields %d=%d, want %d", step, k, v, ref.vals[k])
			}
			got = append(got, k)
		}
		if !slices.Equal(got, ref.keys) && !(len(got) == 0 && len(ref.keys) == 0) {
			t.Fatalf("step %d: All = %v, want %v", step, got, ref.keys)
		}
		var back []int
		for k := range m.Backward() {
			back = append(back, k)
		}
		slices.Reverse(back)
		if !slices.Equal(back, got) {
			t.Fatalf("step %d: Backward reversed = %v, want %v", step, back, got)
		}
	}
}

func TestZeroValueAndClear(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Get("a"); ok {
		t.Fatal("Get on zero Map found an entry")
	}
	if _, _, ok := m.Oldest(); ok {
		t.Fatal("Oldest on zero Map found an entry")
	}
	for range m.All() {
		t.Fatal("All on zero Map yielded")
	}
	for range m.Backward() {
		t.Fatal("Backward on zero Map yielded")
	}
	m.Put("a", 1)
	m.Put("b", 2)
	m.Get("a")
	if k, v, _ := m.Oldest(); k != "b" || v != 2 {
		t.Fatalf("Oldest = %s=%d, want b=2 (a was touched)", k, v)
	}
	m.Clear()
	if m.Len() != 0 {
		t.Fatalf("Len after Clear = %d", m.Len())
	}
	if _, ok := m.Peek("a"); ok {
		t.Fatal("Peek after Clear found a")
	}
	m.Put("c", 3) // usable again after Clear
	if v, ok := m.Get("c"); !ok || v != 3 {
		t.Fatalf("Get(c) after Clear = %d, %v", v, ok)
	}
}

// TestEarlyBreak checks that both iterators stop when yield returns false.
func TestEarlyBreak(t *testing.T) {
	var m Map[int, int]
	for i := range 5 {
		m.Put(i, i)
	}
	for k := range m.All() {
		if k != 0 {
			t.Fatalf("All first = %d, want 0", k)
		}
		break
	}
	for k := range m.Backward() {
		if k != 4 {
			t.Fatalf("Backward first = %d, want 4", k)
		}
		break
	}
}

// TestZeroAllocs pins the steady state of a full cache at no allocation:
// a hit, a miss, a replacement, and a new key that evicts the oldest.
func TestZeroAllocs(t *testing.T) {
	const capacity = 32
	var m Map[int, *int]
	x := new(int)
	for i := range capacity {
		m.Put(i, x)
	}
	i := capacity
	tests := []struct {
		name string
		f    func()
	}{
		{"Get hit", func() { m.Get(i - 1) }},
		{"Get miss", func() { m.Get(-1) }},
		{"Put existing", func() { m.Put(i-1, x) }},
		{"Put new, evicting", func() {
			m.Put(i, x)
			m.RemoveOldest()
			i++
		}},
	}
	for _, tc := range tests {
		if got := testing.AllocsPerRun(1000, tc.f); got != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tc.name, got)
		}
	}
	if m.Len() != capacity {
		t.Fatalf("Len = %d, want %d", m.Len(), capacity)
	}
}

// TestRemoveReleasesValue checks that a removed entry's value is no longer
// referenced by the reused node.
func TestRemoveReleasesValue(t *testing.T) {
	var m Map[int, *int]
	m.Put(1, new(int))
	m.Remove(1)
	if m.spare == nil || m.spare.val != nil {
		t.Fatal("spare node still holds the removed value")
	}
}

func BenchmarkPutEvict(b *testing.B) {
	const capacity = 48
	var m Map[int, int]
	for i := range capacity {
		m.Put(i, i)
	}
	b.ReportAllocs()
	i := capacity
	for b.Loop() {
		m.Put(i, i)
		m.RemoveOldest()
		m.Get(i - capacity/2)
		i++
	}
}
