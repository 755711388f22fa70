package stage_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtpengine/rtp/stage"
)

// counts tallies the hooks fired per entry (entries are small ints).
type counts struct {
	add, remove, dispose []atomic.Int32
}

func newCounts(n int) *counts {
	return &counts{
		add:     make([]atomic.Int32, n),
		remove:  make([]atomic.Int32, n),
		dispose: make([]atomic.Int32, n),
	}
}

func (c *counts) hooks() stage.Hooks[int] {
	return stage.Hooks[int]{
		OnAdd:     func(v int) { c.add[v].Add(1) },
		OnRemove:  func(v int) { c.remove[v].Add(1) },
		OnDispose: func(v int) { c.dispose[v].Add(1) },
	}
}

func (c *counts) disposed() int {
	n := 0
	for i := range c.dispose {
		n += int(c.dispose[i].Load())
	}
	return n
}

// ringFactory makes a Ring per key, all sharing the hooks of c, and counts
// the partitions it makes.
func ringFactory(c *counts, made *atomic.Int32) stage.Factory[string, int] {
	return func(key string, capacity int) (stage.Stage[int], error) {
		if made != nil {
			made.Add(1)
		}
		return stage.NewRing("personal/"+key, capacity, c.hooks())
	}
}

func newKeyed(t *testing.T, f stage.Factory[string, int]) *stage.Keyed[string, int] {
	t.Helper()
	k, err := stage.NewKeyed("personal", f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

func TestKeyedNoFactory(t *testing.T) {
	if k, err := stage.NewKeyed[string, int]("personal", nil); err == nil || k != nil {
		t.Fatalf("NewKeyed(nil factory) = %v, %v, want an error", k, err)
	}
}

func TestKeyedOpenIdempotent(t *testing.T) {
	c := newCounts(16)
	var made atomic.Int32
	k := newKeyed(t, ringFactory(c, &made))
	if got := k.Name(); got != "personal" {
		t.Errorf("Name() = %q", got)
	}
	a, err := k.Open("alice", 4)
	if err != nil {
		t.Fatal(err)
	}
	a.Offer(1)
	again, err := k.Open("alice", 64)
	if err != nil {
		t.Fatal(err)
	}
	if again != a {
		t.Fatal("second Open returned another stage")
	}
	if got := again.Cap(); got != 4 {
		t.Errorf("Cap() after Open with another capacity = %d, want the original 4", got)
	}
	if got := again.Len(); got != 1 {
		t.Errorf("Len() after a second Open = %d, want 1", got)
	}
	if got := made.Load(); got != 1 {
		t.Errorf("factory ran %d times for one key, want 1", got)
	}
	if got, ok := k.Get("alice"); !ok || got != a {
		t.Errorf("Get(alice) = %v, %v, want the open stage", got, ok)
	}
	if got, ok := k.Get("bob"); ok || got != nil {
		t.Errorf("Get(bob) = %v, %v, want nil, false", got, ok)
	}
}

func TestKeyedOpenConcurrent(t *testing.T) {
	c := newCounts(16)
	var made atomic.Int32
	k := newKeyed(t, ringFactory(c, &made))
	const n = 16
	got := make([]stage.Stage[int], n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := k.Open("alice", 8)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("concurrent Open %d returned another stage than Open 0", i)
		}
	}
	if keys := k.Keys(); !slices.Equal(keys, []string{"alice"}) {
		t.Fatalf("Keys() = %v, want [alice]", keys)
	}
	t.Logf("factory ran %d times for %d concurrent Opens", made.Load(), n)
}

func TestKeyedPollCloseKey(t *testing.T) {
	c := newCounts(16)
	k := newKeyed(t, ringFactory(c, nil))
	a, _ := k.Open("alice", 4)
	b, _ := k.Open("bob", 4)
	a.Offer(1)
	a.Offer(2)
	b.Offer(3)
	if got := k.Len(); got != 3 {
		t.Fatalf("Len() = %d, want 3", got)
	}
	keys := k.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"alice", "bob"}) {
		t.Fatalf("Keys() = %v, want [alice bob]", keys)
	}
	if v, ok := k.Poll("alice"); !ok || v != 1 {
		t.Fatalf("Poll(alice) = %d, %v, want 1, true", v, ok)
	}
	if c.remove[1].Load() != 1 {
		t.Fatal("Poll(alice) did not fire OnRemove")
	}
	if v, ok := k.Poll("carol"); ok {
		t.Fatalf("Poll(carol), never opened, = %d, true", v)
	}

	if !k.CloseKey("alice") {
		t.Fatal("CloseKey(alice) = false for an open key")
	}
	if c.remove[2].Load() != 1 || c.dispose[2].Load() != 1 {
		t.Fatalf("CloseKey(alice): entry 2 removed %d and disposed %d times, want 1 and 1", c.remove[2].Load(), c.dispose[2].Load())
	}
	if c.dispose[1].Load() != 0 || c.dispose[3].Load() != 0 {
		t.Fatal("CloseKey(alice) disposed a polled entry or another key's entry")
	}
	if k.CloseKey("alice") {
		t.Fatal("second CloseKey(alice) = true")
	}
	if _, ok := k.Get("alice"); ok {
		t.Fatal("Get(alice) after CloseKey = true")
	}
	// A producer still holding the closed partition: its offer is disposed.
	if a.Offer(4) {
		t.Fatal("Offer into a closed partition = true")
	}
	if c.dispose[4].Load() != 1 {
		t.Fatal("Offer into a closed partition did not dispose the entry")
	}
	// Reopening makes a new, empty partition.
	a2, err := k.Open("alice", 2)
	if err != nil {
		t.Fatal(err)
	}
	if a2 == a || a2.Len() != 0 {
		t.Fatalf("reopened partition is the old one or not empty (Len %d)", a2.Len())
	}
}

func TestKeyedClose(t *testing.T) {
	c := newCounts(16)
	k := newKeyed(t, ringFactory(c, nil))
	for i, key := range []string{"a", "b", "c"} {
		s, _ := k.Open(key, 4)
		s.Offer(2 * i)
		s.OfferSilent(2*i + 1)
	}
	k.Close()
	for v := range 6 {
		if c.dispose[v].Load() != 1 || c.remove[v].Load() != 1 {
			t.Errorf("entry %d: removed %d and disposed %d times by Close, want 1 and 1", v, c.remove[v].Load(), c.dispose[v].Load())
		}
	}
	if keys := k.Keys(); len(keys) != 0 {
		t.Errorf("Keys() after Close = %v", keys)
	}
	if s, err := k.Open("a", 4); !errors.Is(err, stage.ErrClosed) || s != nil {
		t.Errorf("Open after Close = %v, %v, want ErrClosed", s, err)
	}
	k.Close() // idempotent
	if got := c.disposed(); got != 6 {
		t.Errorf("%d disposals after a second Close, want 6", got)
	}
}

func TestKeyedFactoryErrors(t *testing.T) {
	boom := errors.New("no such player")
	k := newKeyed(t, func(key string, capacity int) (stage.Stage[int], error) {
		switch key {
		case "missing":
			return nil, boom
		case "nil":
			return nil, nil
		}
		return stage.NewQueue(key, capacity, stage.Hooks[int]{})
	})
	if _, err := k.Open("missing", 4); !errors.Is(err, boom) {
		t.Errorf("Open(missing) error = %v, want it to wrap %v", err, boom)
	}
	if _, err := k.Open("nil", 4); err == nil {
		t.Error("Open(nil), factory returning no stage and no error, = nil error")
	}
	if _, err := k.Open("negative", -1); err == nil {
		t.Error("Open with capacity -1 = nil error")
	}
	if keys := k.Keys(); len(keys) != 0 {
		t.Errorf("Keys() after failed Opens = %v", keys)
	}
}

// TestKeyedConcurrent: Opens, offers, polls and CloseKeys on a few keys from
// many goroutines, racing with Close; every entry is polled or disposed
// exactly once, and no partition outlives Close.
func TestKeyedConcurrent(t *testing.T) {
	const (
		workers   = 6
		perWorker = 2000
		total     = workers * perWorker
	)
	c := newCounts(total)
	var made atomic.Int32
	k := newKeyed(t, ringFactory(c, &made))
	var polled [total]atomic.Int32
	var wg sync.WaitGroup
	var done atomic.Int32
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range perWorker {
				v := w*perWorker + i
				key := fmt.Sprint(rng.IntN(4))
				s, err := k.Open(key, 1+rng.IntN(8))
				if err != nil {
					if !errors.Is(err, stage.ErrClosed) {
						t.Error(err)
					}
					// Closed: the entry never entered; the test
					// owns it and ends it as a producer would.
					c.dispose[v].Add(1)
					continue
				}
				s.Offer(v)
				switch rng.IntN(10) {
				case 0:
					k.CloseKey(key)
				case 1, 2, 3, 4:
					if got, ok := k.Poll(fmt.Sprint(rng.IntN(4))); ok {
						polled[got].Add(1)
					}
				}
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
			done.Add(1)
		})
	}
	for done.Load() < workers/2 {
		runtime.Gosched()
	}
	k.Close()
	wg.Wait()
	var nPolled int
	for v := range total {
		p, d := int(polled[v].Load()), int(c.dispose[v].Load())
		if p+d != 1 {
			t.Fatalf("entry %d: polled %d and disposed %d times, want exactly one in all", v, p, d)
		}
		nPolled += p
	}
	t.Logf("%d entries: %d polled, %d disposed, %d partitions made", total, nPolled, total-nPolled, made.Load())
	if k.Len() != 0 {
		t.Fatalf("Len() after Close = %d", k.Len())
	}
}

// TestKeyedModel runs random operations against a map of slices.
func TestKeyedModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const steps = 3000
	c := newCounts(steps + 1)
	k := newKeyed(t, func(key string, capacity int) (stage.Stage[int], error) {
		return stage.NewQueue(key, capacity, c.hooks())
	})
	type part struct {
		items    []int
		capacity int
	}
	model := map[string]*part{}
	disposed := 0
	next := 1
	for step := range steps {
		key := fmt.Sprint(rng.IntN(5))
		switch p := rng.IntN(100); {
		case p < 15:
			capacity := rng.IntN(6)
			if _, err := k.Open(key, capacity); err != nil {
				t.Fatal(err)
			}
			if model[key] == nil {
				model[key] = &part{capacity: capacity}
			}
		case p < 55:
			s, ok := k.Get(key)
			if ok != (model[key] != nil) {
				t.Fatalf("step %d: Get(%s) = %v, want %v", step, key, ok, model[key] != nil)
			}
			if !ok {
				break
			}
			m := model[key]
			stored := s.Offer(next)
			if stored != (len(m.items) < m.capacity) {
				t.Fatalf("step %d: Offer(%d) to %s = %v with %d of %d", step, next, key, stored, len(m.items), m.capacity)
			}
			if stored {
				m.items = append(m.items, next)
			} else {
				disposed++
			}
			next++
		case p < 85:
			v, ok := k.Poll(key)
			m := model[key]
			if m == nil || len(m.items) == 0 {
				if ok {
					t.Fatalf("step %d: Poll(%s) = %d, true, want false", step, key, v)
				}
				break
			}
			if !ok || v != m.items[0] {
				t.Fatalf("step %d: Poll(%s) = %d, %v, want %d, true", step, key, v, ok, m.items[0])
			}
			m.items = m.items[1:]
		default:
			open := model[key] != nil
			if got := k.CloseKey(key); got != open {
				t.Fatalf("step %d: CloseKey(%s) = %v, want %v", step, key, got, open)
			}
			if open {
				disposed += len(model[key].items)
				delete(model, key)
			}
		}
		want := 0
		for _, m := range model {
			want += len(m.items)
		}
		if got := k.Len(); got != want {
			t.Fatalf("step %d: Len() = %d, want %d", step, got, want)
		}
		if got := c.disposed(); got != disposed {
			t.Fatalf("step %d: %d disposals, want %d", step, got, disposed)
		}
		keys := k.Keys()
		slices.Sort(keys)
		wantKeys := make([]string, 0, len(model))
		for key := range model {
			wantKeys = append(wantKeys, key)
		}
		slices.Sort(wantKeys)
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("step %d: Keys() = %v, want %v", step, keys, wantKeys)
		}
	}
}

// TestKeyedClosePanickingHook: a hook that panics while one partition is
// closed does not keep the other partitions from being closed.
func TestKeyedClosePanickingHook(t *testing.T) {
	c := newCounts(8)
	k := newKeyed(t, func(key string, capacity int) (stage.Stage[int], error) {
		hooks := c.hooks()
		dispose := hooks.OnDispose
		hooks.OnDispose = func(v int) {
			dispose(v)
			if v%2 == 1 {
				panic(fmt.Sprint("dispose ", v))
			}
		}
		return stage.NewQueue(key, capacity, hooks)
	})
	for i, key := range []string{"a", "b", "c", "d"} {
		s, _ := k.Open(key, 2)
		s.Offer(i)
	}
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		k.Close()
	}()
	if s, ok := recovered.(string); !ok || (s != "dispose 1" && s != "dispose 3") {
		t.Fatalf("Close raised %v, want a hook's panic", recovered)
	}
	if got := c.disposed(); got != 4 {
		t.Fatalf("%d entries disposed, want all 4", got)
	}
}

// TestKeyedOpenRaces makes the races of Open deterministic: a factory that
// runs while another Open of the same key completes, and one that runs
// while the keyed stage is closed.
func TestKeyedOpenRaces(t *testing.T) {
	t.Run("lost", func(t *testing.T) {
		var k *stage.Keyed[string, int]
		var made []stage.Stage[int]
		depth := 0
		k = newKeyed(t, func(key string, capacity int) (stage.Stage[int], error) {
			s, err := stage.NewQueue(key, capacity, stage.Hooks[int]{})
			made = append(made, s)
			if depth++; depth == 1 {
				if _, err := k.Open(key, capacity); err != nil { // wins the race
					t.Fatal(err)
				}
			}
			return s, err
		})
		got, err := k.Open("alice", 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(made) != 2 || got != made[1] {
			t.Fatalf("Open returned %p, want the winner %p (made %d)", got, made[1], len(made))
		}
		if made[0].Offer(1) {
			t.Fatal("the losing partition is still open")
		}
	})
	t.Run("closed", func(t *testing.T) {
		var k *stage.Keyed[string, int]
		var made stage.Stage[int]
		k = newKeyed(t, func(key string, capacity int) (stage.Stage[int], error) {
			k.Close()
			s, err := stage.NewQueue(key, capacity, stage.Hooks[int]{})
			made = s
			return s, err
		})
		if s, err := k.Open("alice", 2); !errors.Is(err, stage.ErrClosed) || s != nil {
			t.Fatalf("Open racing with Close = %v, %v, want ErrClosed", s, err)
		}
		if made.Offer(1) {
			t.Fatal("the partition made during Close is still open")
		}
		if keys := k.Keys(); len(keys) != 0 {
			t.Fatalf("Keys() = %v after Close", keys)
		}
	})
}
