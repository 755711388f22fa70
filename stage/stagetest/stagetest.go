// Package stagetest checks a stage.Stage implementation against the Stage
// contract. Every implementation runs it from its own tests:
//
//	func TestContract(t *testing.T) {
//		stagetest.Run(t, func(t *testing.T, name string, capacity int, hooks stage.Hooks[stagetest.Entry]) stage.Stage[stagetest.Entry] {
//			s, err := mystage.New(name, capacity, hooks)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The suite checks the hooks fired by every operation, ownership (every
// entry offered is polled out exactly once or disposed exactly once), FIFO
// order, overflow, Close and Resize, re-entrant and panicking hooks, a
// random-operation model, concurrent producers, consumers, resizers and
// Close, and that Offer and Poll do not allocate.
package stagetest

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/stage"
)

// Entry is the entry type the suite stores. Sum is derived from ID, so a
// torn, zeroed or invented value is detected.
type Entry struct {
	ID, Sum uint64
}

// NewEntry returns the entry with the given ID.
func NewEntry(id uint64) Entry { return Entry{ID: id, Sum: mix(id)} }

// Valid reports whether e was made by NewEntry.
func (e Entry) Valid() bool { return e.ID != 0 && e.Sum == mix(e.ID) }

// mix is SplitMix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Factory makes a new, empty, open stage with the given name, capacity and
// hooks. The suite closes every stage it makes.
type Factory func(t *testing.T, name string, capacity int, hooks stage.Hooks[Entry]) stage.Stage[Entry]

// Run runs the whole contract suite against stages made by f. It takes a
// few seconds under the race detector.
func Run(t *testing.T, f Factory) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"Name", testName},
		{"OfferPollFIFO", testOfferPollFIFO},
		{"PollTransfersOwnership", testPollTransfersOwnership},
		{"Overflow", testOverflow},
		{"Silent", testSilent},
		{"Dispose", testDispose},
		{"Close", testClose},
		{"ResizeCapacity", testResizeCapacity},
		{"ResizeDown", testResizeDown},
		{"ResizeUp", testResizeUp},
		{"ZeroCapacity", testZeroCapacity},
		{"NilHooks", testNilHooks},
		{"ReentrantHooks", testReentrantHooks},
		{"PanickingHook", testPanickingHook},
		{"Model", testModel},
		{"ConcurrentDrain", func(t *testing.T, f Factory) { testConcurrent(t, f, false) }},
		{"ConcurrentClose", func(t *testing.T, f Factory) { testConcurrent(t, f, true) }},
		{"ConcurrentOrder", testConcurrentOrder},
		{"Allocs", testAllocs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

// newStage makes a stage and closes it when the test ends.
func newStage(t *testing.T, f Factory, name string, capacity int, hooks stage.Hooks[Entry]) stage.Stage[Entry] {
	t.Helper()
	s := f(t, name, capacity, hooks)
	if s == nil {
		t.Fatal("factory returned a nil stage")
	}
	t.Cleanup(s.Close)
	return s
}

type kind uint8

const (
	add kind = iota
	remove
	dispose
)

func (k kind) String() string { return [...]string{"OnAdd", "OnRemove", "OnDispose"}[k] }

type event struct {
	kind kind
	id   uint64
}

func (e event) String() string { return fmt.Sprintf("%v(%d)", e.kind, e.id) }

// recorder logs every hook call. Its log order respects happens-before: a
// hook that happens before another is logged before it.
type recorder struct {
	mu      sync.Mutex
	log     []event
	invalid []Entry // entries that were not made by NewEntry
	read    int     // how much of log take has returned
}

func (r *recorder) record(k kind, e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !e.Valid() {
		r.invalid = append(r.invalid, e)
	}
	r.log = append(r.log, event{k, e.ID})
}

func (r *recorder) hooks() stage.Hooks[Entry] {
	return stage.Hooks[Entry]{
		OnAdd:     func(e Entry) { r.record(add, e) },
		OnRemove:  func(e Entry) { r.record(remove, e) },
		OnDispose: func(e Entry) { r.record(dispose, e) },
	}
}

// take returns the events logged since the last take.
func (r *recorder) take() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := slices.Clone(r.log[r.read:])
	r.read = len(r.log)
	return ev
}

func (r *recorder) all() ([]event, []Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log), slices.Clone(r.invalid)
}

// expect checks that the events logged since the last take are want, up to
// the interleaving of different entries: the events of each entry must come
// in exactly the wanted order.
func (r *recorder) expect(t *testing.T, op string, want ...event) {
	t.Helper()
	got := r.take()
	if !sameEvents(got, want) {
		t.Fatalf("%s: hooks fired %v, want %v", op, got, want)
	}
}

func sameEvents(got, want []event) bool {
	if len(got) != len(want) {
		return false
	}
	per := func(evs []event) map[uint64][]kind {
		m := map[uint64][]kind{}
		for _, e := range evs {
			m[e.id] = append(m[e.id], e.kind)
		}
		return m
	}
	g, w := per(got), per(want)
	if len(g) != len(w) {
		return false
	}
	for id, ks := range w {
		if !slices.Equal(g[id], ks) {
			return false
		}
	}
	return true
}

func ev(k kind, ids ...uint64) []event {
	evs := make([]event, len(ids))
	for i, id := range ids {
		evs[i] = event{k, id}
	}
	return evs
}

// ended is the events of entries that leave the pipeline by disposal.
func ended(ids ...uint64) []event {
	var evs []event
	for _, id := range ids {
		evs = append(evs, event{remove, id}, event{dispose, id})
	}
	return evs
}

func ids(from, to uint64) []uint64 {
	var out []uint64
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}

func mustPoll(t *testing.T, s stage.Stage[Entry], silent bool, want uint64) {
	t.Helper()
	poll, name := s.Poll, "Poll"
	if silent {
		poll, name = s.PollSilent, "PollSilent"
	}
	got, ok := poll()
	if !ok || got != NewEntry(want) {
		t.Fatalf("%s() = %v, %v, want %v, true", name, got, ok, NewEntry(want))
	}
}

func mustBeEmpty(t *testing.T, s stage.Stage[Entry]) {
	t.Helper()
	if got, ok := s.Poll(); ok || got != (Entry{}) {
		t.Fatalf("Poll() = %v, %v, want zero, false", got, ok)
	}
	if got, ok := s.PollSilent(); ok || got != (Entry{}) {
		t.Fatalf("PollSilent() = %v, %v, want zero, false", got, ok)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("Len() = %d, want 0", n)
	}
}

// checkApplied checks the capacity Resize or a constructor applied for a
// request of n.
func checkApplied(t *testing.T, s stage.Stage[Entry], n, applied int) {
	t.Helper()
	want := min(max(n, 0), stage.MaxCapacity)
	if applied < want || (want > 0 && applied >= 2*want) || (want == 0 && applied != 0) {
		t.Fatalf("capacity applied for %d = %d, want in [%d, %d)", n, applied, want, 2*want)
	}
	if c := s.Cap(); c != applied {
		t.Fatalf("Cap() = %d, want the applied %d", c, applied)
	}
}

func testName(t *testing.T, f Factory) {
	s := newStage(t, f, "cold", 4, stage.Hooks[Entry]{})
	if got := s.Name(); got != "cold" {
		t.Errorf("Name() = %q, want %q", got, "cold")
	}
}

func testOfferPollFIFO(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "fifo", 8, r.hooks())
	checkApplied(t, s, 8, s.Cap())
	c := uint64(s.Cap())
	for id := uint64(1); id <= c; id++ {
		if !s.Offer(NewEntry(id)) {
			t.Fatalf("Offer(%d) = false with %d of %d stored", id, s.Len(), c)
		}
		r.expect(t, fmt.Sprintf("Offer(%d)", id), event{add, id})
		if n := s.Len(); n != int(id) {
			t.Fatalf("Len() = %d after %d offers", n, id)
		}
	}
	for id := uint64(1); id <= c; id++ {
		mustPoll(t, s, false, id)
		r.expect(t, "Poll", event{remove, id})
		if n := s.Len(); n != int(c-id) {
			t.Fatalf("Len() = %d, want %d", n, c-id)
		}
	}
	mustBeEmpty(t, s)
	r.expect(t, "Poll on empty")
	// Wrap around the storage a few times.
	next, want := uint64(100), uint64(100)
	for round := range 5 * int(c) {
		for range round%3 + 1 {
			if s.Len() < s.Cap() {
				s.Offer(NewEntry(next))
				next++
			}
		}
		for range round % 2 {
			if want < next {
				mustPoll(t, s, false, want)
				want++
			}
		}
	}
	for ; want < next; want++ {
		mustPoll(t, s, false, want)
	}
	mustBeEmpty(t, s)
}

func testPollTransfersOwnership(t *testing.T, f Factory) {
	var r recorder
	s := f(t, "own", 4, r.hooks())
	s.Offer(NewEntry(1))
	s.OfferSilent(NewEntry(2))
	s.Offer(NewEntry(3))
	mustPoll(t, s, false, 1)
	mustPoll(t, s, true, 2)
	r.take()
	s.Close()
	// Only the entry still stored is disposed; the polled ones are the
	// caller's.
	r.expect(t, "Close", ended(3)...)
}

func testOverflow(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "full", 4, r.hooks())
	c := uint64(s.Cap())
	for id := uint64(1); id <= c; id++ {
		s.Offer(NewEntry(id))
	}
	r.take()
	if s.Offer(NewEntry(100)) {
		t.Fatal("Offer on a full stage = true")
	}
	r.expect(t, "Offer on a full stage", event{dispose, 100})
	if s.OfferSilent(NewEntry(101)) {
		t.Fatal("OfferSilent on a full stage = true")
	}
	r.expect(t, "OfferSilent on a full stage", ended(101)...)
	if n := s.Len(); n != int(c) {
		t.Fatalf("Len() = %d after overflow, want %d", n, c)
	}
	for id := uint64(1); id <= c; id++ {
		mustPoll(t, s, true, id)
	}
	mustBeEmpty(t, s)
	r.expect(t, "draining silently")
}

func testSilent(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "silent", 4, r.hooks())
	if !s.OfferSilent(NewEntry(1)) {
		t.Fatal("OfferSilent = false")
	}
	r.expect(t, "OfferSilent")
	s.Offer(NewEntry(2))
	r.expect(t, "Offer", event{add, 2})
	mustPoll(t, s, true, 1)
	r.expect(t, "PollSilent")
	mustPoll(t, s, true, 2)
	r.expect(t, "PollSilent of an offered entry")

	// A silent move between two stages fires nothing on either side.
	var r2 recorder
	dst := newStage(t, f, "dst", 4, r2.hooks())
	s.Offer(NewEntry(3))
	r.take()
	e, _ := s.PollSilent()
	if !dst.OfferSilent(e) {
		t.Fatal("OfferSilent into an empty stage = false")
	}
	mustPoll(t, dst, true, 3)
	r.expect(t, "silent move, source")
	r2.expect(t, "silent move, destination")
}

func testDispose(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "dispose", 4, r.hooks())
	s.Offer(NewEntry(1))
	s.Offer(NewEntry(2))
	e, _ := s.PollSilent()
	r.take()
	s.Dispose(e)
	r.expect(t, "Dispose", ended(1)...)
	if n := s.Len(); n != 1 {
		t.Fatalf("Len() = %d after Dispose of a polled entry, want 1", n)
	}
	s.Close()
	r.expect(t, "Close", ended(2)...)
	s.Dispose(NewEntry(3))
	r.expect(t, "Dispose after Close", ended(3)...)
}

func testClose(t *testing.T, f Factory) {
	var r recorder
	s := f(t, "close", 8, r.hooks())
	c := uint64(s.Cap())
	for id := uint64(1); id <= c; id++ {
		if id%2 == 0 {
			s.Offer(NewEntry(id))
		} else {
			s.OfferSilent(NewEntry(id))
		}
	}
	mustPoll(t, s, false, 1)
	r.take()
	s.Close()
	r.expect(t, "Close", ended(ids(2, c)...)...)
	mustBeEmpty(t, s)
	s.Close()
	r.expect(t, "second Close")

	if s.Offer(NewEntry(50)) {
		t.Fatal("Offer after Close = true")
	}
	r.expect(t, "Offer after Close", event{dispose, 50})
	if s.OfferSilent(NewEntry(51)) {
		t.Fatal("OfferSilent after Close = true")
	}
	r.expect(t, "OfferSilent after Close", ended(51)...)
	before := s.Cap()
	if got := s.Resize(before * 4); got != before {
		t.Fatalf("Resize after Close = %d, want the unchanged %d", got, before)
	}
	mustBeEmpty(t, s)
	r.expect(t, "Resize and Poll after Close")
}

func testResizeCapacity(t *testing.T, f Factory) {
	s := newStage(t, f, "resize", 3, stage.Hooks[Entry]{})
	checkApplied(t, s, 3, s.Cap())
	for _, n := range []int{1, 2, 5, 8, 9, 100, 1000, 0, 7, -1, -100, 64} {
		checkApplied(t, s, n, s.Resize(n))
	}
}

func testResizeDown(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "down", 16, r.hooks())
	c := uint64(s.Cap())
	for id := uint64(1); id <= c; id++ {
		s.Offer(NewEntry(id))
	}
	r.take()
	applied := s.Resize(4)
	checkApplied(t, s, 4, applied)
	kept := uint64(applied)
	// The oldest entries stay, in order; the newest ones are the surplus.
	r.expect(t, "Resize down", ended(ids(kept+1, c)...)...)
	if n := s.Len(); n != int(kept) {
		t.Fatalf("Len() = %d after Resize(4), want %d", n, kept)
	}
	if s.Offer(NewEntry(99)) {
		t.Fatal("Offer after shrinking to full = true")
	}
	r.expect(t, "Offer over the new capacity", event{dispose, 99})
	for id := uint64(1); id <= kept; id++ {
		mustPoll(t, s, false, id)
	}
	mustBeEmpty(t, s)
	r.take()

	s.Offer(NewEntry(200))
	s.Offer(NewEntry(201))
	r.take()
	checkApplied(t, s, 0, s.Resize(0))
	r.expect(t, "Resize(0)", ended(200, 201)...)
	if s.Offer(NewEntry(202)) {
		t.Fatal("Offer with capacity 0 = true")
	}
	r.expect(t, "Offer with capacity 0", event{dispose, 202})
}

func testResizeUp(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "up", 4, r.hooks())
	c := uint64(s.Cap())
	// Leave the storage wrapped around before growing it.
	for id := uint64(1); id <= c; id++ {
		s.Offer(NewEntry(id))
	}
	mustPoll(t, s, false, 1)
	mustPoll(t, s, false, 2)
	s.Offer(NewEntry(c + 1))
	s.Offer(NewEntry(c + 2))
	r.take()
	applied := uint64(s.Resize(int(4 * c)))
	checkApplied(t, s, int(4*c), int(applied))
	if got := s.Resize(int(applied)); got != int(applied) {
		t.Fatalf("Resize to the current capacity = %d, want %d", got, applied)
	}
	r.expect(t, "Resize up")
	for id := c + 3; id <= applied+2; id++ {
		if !s.Offer(NewEntry(id)) {
			t.Fatalf("Offer(%d) after Resize up = false with %d of %d stored", id, s.Len(), s.Cap())
		}
	}
	for id := uint64(3); id <= applied+2; id++ {
		mustPoll(t, s, true, id)
	}
	mustBeEmpty(t, s)
}

func testZeroCapacity(t *testing.T, f Factory) {
	var r recorder
	s := newStage(t, f, "zero", 0, r.hooks())
	checkApplied(t, s, 0, s.Cap())
	if s.Offer(NewEntry(1)) {
		t.Fatal("Offer with capacity 0 = true")
	}
	r.expect(t, "Offer with capacity 0", event{dispose, 1})
	mustBeEmpty(t, s)
	checkApplied(t, s, 3, s.Resize(3))
	if !s.Offer(NewEntry(2)) {
		t.Fatal("Offer after Resize(3) = false")
	}
	mustPoll(t, s, false, 2)
}

func testNilHooks(t *testing.T, f Factory) {
	s := newStage(t, f, "nil", 2, stage.Hooks[Entry]{})
	for id := uint64(1); id <= 10; id++ {
		s.Offer(NewEntry(id))
		s.OfferSilent(NewEntry(100 + id))
	}
	s.Poll()
	e, _ := s.PollSilent()
	s.Dispose(e)
	s.Resize(1)
	s.Resize(8)
	s.Offer(NewEntry(50))
	s.Close()
	s.Offer(NewEntry(51))
	s.OfferSilent(NewEntry(52))
}

// testReentrantHooks calls the stage back from every hook, including
// writers (Resize, Close): a stage that ran a hook under one of its locks, or
// inside its own gate, deadlocks here.
func testReentrantHooks(t *testing.T, f Factory) {
	var s stage.Stage[Entry]
	var calls atomic.Int64
	callBack := func(Entry) {
		s.Len()
		s.Cap()
		if n := calls.Add(1); n < 100 {
			s.Resize(2 + 6*int(n%2)) // alternate, so the writer path runs
		}
	}
	hooks := stage.Hooks[Entry]{OnAdd: callBack, OnRemove: callBack, OnDispose: callBack}
	s = newStage(t, f, "reentrant", 2, hooks)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := uint64(1); id <= 40; id++ {
			s.Offer(NewEntry(id))
			if id%3 == 0 {
				s.Poll()
			}
		}
		s.OfferSilent(NewEntry(1000))
		s.Resize(1)
		e, ok := s.PollSilent()
		if ok {
			s.Dispose(e)
		}
		s.Close()
		s.Offer(NewEntry(1001))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a hook calling the stage back did not return within 30s (hook run under a lock?)")
	}
	if calls.Load() < 40 {
		t.Fatalf("hooks ran %d times, want at least 40", calls.Load())
	}
}

// testPanickingHook: a hook that panics while Close or Resize disposes many
// entries must not leak the others.
func testPanickingHook(t *testing.T, f Factory) {
	for _, op := range []string{"Close", "Resize"} {
		t.Run(op, func(t *testing.T) {
			var r recorder
			hooks := r.hooks()
			record := hooks.OnDispose
			hooks.OnDispose = func(e Entry) {
				record(e)
				if e.ID%3 == 0 {
					panic(fmt.Sprintf("dispose %d", e.ID))
				}
			}
			s := newStage(t, f, "panicky", 8, hooks)
			c := uint64(s.Cap())
			for id := uint64(1); id <= c; id++ {
				s.Offer(NewEntry(id))
			}
			r.take()
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				if op == "Close" {
					s.Close()
				} else {
					s.Resize(0)
				}
			}()
			if recovered != "dispose 3" {
				t.Fatalf("%s raised %v, want the first hook panic %q", op, recovered, "dispose 3")
			}
			r.expect(t, op+" with panicking hooks", ended(ids(1, c)...)...)
			mustBeEmpty(t, s)
		})
	}
}

// model is the naive reference: a slice in FIFO order.
type model struct {
	items    []Entry
	capacity int
	closed   bool
}

func testModel(t *testing.T, f Factory) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			var r recorder
			initial := rng.IntN(9)
			s := newStage(t, f, "model", initial, r.hooks())
			m := model{capacity: s.Cap()}
			checkApplied(t, s, initial, m.capacity)
			var transit []Entry // taken with PollSilent, owned by the test
			next := uint64(1)
			for step := range 3000 {
				var op string
				var want []event
				switch p := rng.IntN(100); {
				case p < 25, p < 35 && len(transit) == 0:
					e := NewEntry(next)
					next++
					op = fmt.Sprintf("Offer(%d)", e.ID)
					stored := !m.closed && len(m.items) < m.capacity
					if got := s.Offer(e); got != stored {
						t.Fatalf("step %d: %s = %v, want %v", step, op, got, stored)
					}
					if stored {
						m.items = append(m.items, e)
						want = ev(add, e.ID)
					} else {
						want = ev(dispose, e.ID)
					}
				case p < 35:
					i := rng.IntN(len(transit))
					e := transit[i]
					transit = slices.Delete(transit, i, i+1)
					op = fmt.Sprintf("OfferSilent(%d)", e.ID)
					stored := !m.closed && len(m.items) < m.capacity
					if got := s.OfferSilent(e); got != stored {
						t.Fatalf("step %d: %s = %v, want %v", step, op, got, stored)
					}
					if stored {
						m.items = append(m.items, e)
					} else {
						want = ended(e.ID)
					}
				case p < 55:
					silent := rng.IntN(2) == 0
					poll := s.Poll
					op = "Poll"
					if silent {
						poll, op = s.PollSilent, "PollSilent"
					}
					got, ok := poll()
					if len(m.items) == 0 {
						if ok {
							t.Fatalf("step %d: %s = %v, true on an empty stage", step, op, got)
						}
						break
					}
					e := m.items[0]
					m.items = m.items[1:]
					if !ok || got != e {
						t.Fatalf("step %d: %s = %v, %v, want %v, true", step, op, got, ok, e)
					}
					if silent {
						transit = append(transit, e)
					} else {
						want = ev(remove, e.ID)
					}
				case p < 65:
					if len(transit) == 0 {
						continue
					}
					i := rng.IntN(len(transit))
					e := transit[i]
					transit = slices.Delete(transit, i, i+1)
					op = fmt.Sprintf("Dispose(%d)", e.ID)
					s.Dispose(e)
					want = ended(e.ID)
				case p < 75:
					n := rng.IntN(20) - 2
					op = fmt.Sprintf("Resize(%d)", n)
					got := s.Resize(n)
					if m.closed {
						if got != m.capacity {
							t.Fatalf("step %d: %s on a closed stage = %d, want %d", step, op, got, m.capacity)
						}
						break
					}
					checkApplied(t, s, n, got)
					m.capacity = got
					if len(m.items) > got {
						for _, e := range m.items[got:] {
							want = append(want, ended(e.ID)...)
						}
						m.items = m.items[:got]
					}
				case p < 76:
					op = "Close"
					s.Close()
					for _, e := range m.items {
						want = append(want, ended(e.ID)...)
					}
					m.items, m.closed = nil, true
				default:
					op = "Len/Cap"
				}
				r.expect(t, fmt.Sprintf("step %d: %s", step, op), want...)
				if got := s.Len(); got != len(m.items) {
					t.Fatalf("step %d: after %s, Len() = %d, want %d", step, op, got, len(m.items))
				}
				if got := s.Cap(); got != m.capacity {
					t.Fatalf("step %d: after %s, Cap() = %d, want %d", step, op, got, m.capacity)
				}
			}
			for _, e := range transit {
				s.Dispose(e)
			}
		})
	}
}

// taken is how an entry left a stage through a consumer.
type taken struct {
	id     uint64
	silent bool
}

// testConcurrent runs producers, consumers and a resizer at once, and Close
// either midway or after draining, then checks the ownership accounting of
// every entry: polled out exactly once or disposed exactly once, hooks in a
// valid order, and the persistence rows balanced.
func testConcurrent(t *testing.T, f Factory, closeMidway bool) {
	for _, capacity := range []int{32, 1, 300} {
		t.Run(fmt.Sprintf("cap%d", capacity), func(t *testing.T) {
			concurrentRound(t, f, capacity, closeMidway)
		})
	}
}

func concurrentRound(t *testing.T, f Factory, capacity int, closeMidway bool) {
	const (
		producers   = 4
		consumers   = 3
		perProducer = 2500
		total       = producers * perProducer
	)
	var r recorder
	s := newStage(t, f, "concurrent", capacity, r.hooks())
	var (
		wg        sync.WaitGroup
		offered   atomic.Int64
		produced  = make(chan struct{})
		closed    = make(chan struct{})
		takenBy   [consumers][]taken
		producing sync.WaitGroup
	)
	// silentIn reports whether entry id is offered with OfferSilent.
	silentIn := func(id uint64) bool { return id%2 == 1 }

	for p := range producers {
		producing.Add(1)
		go func() {
			defer producing.Done()
			for i := range perProducer {
				id := uint64(p*perProducer + i + 1)
				// Give consumers a chance when full, but not forever:
				// overflow is part of what this test exercises.
				for j := 0; j < 3 && s.Len() >= s.Cap(); j++ {
					runtime.Gosched()
				}
				if silentIn(id) {
					s.OfferSilent(NewEntry(id))
				} else {
					s.Offer(NewEntry(id))
				}
				offered.Add(1)
			}
		}()
	}
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				silent := (i+c)%2 == 0
				var e Entry
				var ok bool
				if silent {
					e, ok = s.PollSilent()
				} else {
					e, ok = s.Poll()
				}
				if ok {
					takenBy[c] = append(takenBy[c], taken{e.ID, silent})
					continue
				}
				select {
				case <-produced:
					if s.Len() == 0 {
						return
					}
				case <-closed:
					return
				default:
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Add(1)
	go func() { // resizer: a new size every few offers
		defer wg.Done()
		sizes := []int{64, 1, 17, 0, 4, 200, 32, 2}
		for i := 0; ; i++ {
			s.Resize(sizes[i%len(sizes)])
			if !afterOffers(&offered, 8, produced) {
				return
			}
		}
	}()
	if closeMidway {
		for offered.Load() < total/2 {
			runtime.Gosched()
		}
		s.Close()
		close(closed)
	}
	producing.Wait()
	close(produced)
	wg.Wait()
	if !closeMidway {
		if n := s.Len(); n != 0 {
			t.Fatalf("Len() = %d after consumers drained", n)
		}
	}
	s.Close()

	events, invalid := r.all()
	if len(invalid) > 0 {
		t.Fatalf("hooks saw %d entries that were never offered, first %v", len(invalid), invalid[0])
	}
	perEntry := make([][]kind, total+1)
	for _, e := range events {
		if e.id == 0 || e.id > total {
			t.Fatalf("hook fired for unknown entry %d", e.id)
		}
		perEntry[e.id] = append(perEntry[e.id], e.kind)
	}
	takes := make([]int, total+1)
	silentTake := make([]bool, total+1)
	for c := range consumers {
		for _, tk := range takenBy[c] {
			if tk.id == 0 || tk.id > total {
				t.Fatalf("consumer polled unknown entry %d", tk.id)
			}
			takes[tk.id]++
			silentTake[tk.id] = tk.silent
		}
	}
	var nPolled, nDisposed int
	for id := uint64(1); id <= total; id++ {
		ks := perEntry[id]
		adds, removes, disposes := 0, 0, 0
		for _, k := range ks {
			switch k {
			case add:
				adds++
			case remove:
				removes++
			case dispose:
				disposes++
			}
		}
		switch {
		case takes[id]+disposes != 1:
			t.Fatalf("entry %d: polled %d times and disposed %d times, want exactly one in all (hooks %v)", id, takes[id], disposes, ks)
		case adds > 1 || removes > 1:
			t.Fatalf("entry %d: hooks %v", id, ks)
		case adds == 1 && silentIn(id):
			t.Fatalf("entry %d, offered silently: hooks %v include OnAdd", id, ks)
		case adds == 1 && ks[0] != add:
			t.Fatalf("entry %d: hooks %v, OnAdd not first", id, ks)
		case disposes == 1 && ks[len(ks)-1] != dispose:
			t.Fatalf("entry %d: hooks %v, OnDispose not last", id, ks)
		}
		// Rows: a silently offered entry had its row already.
		rows := adds - removes
		if silentIn(id) {
			rows++
		}
		wantRows := 0
		if takes[id] == 1 && silentTake[id] {
			wantRows = 1 // in transit: its row is still live
		}
		if rows != wantRows {
			t.Fatalf("entry %d: %d rows left, want %d (hooks %v, polled %d, silently %v)", id, rows, wantRows, ks, takes[id], silentTake[id])
		}
		nPolled += takes[id]
		nDisposed += disposes
	}
	t.Logf("%d entries: %d polled, %d disposed", total, nPolled, nDisposed)
	if nPolled == 0 || nDisposed == 0 {
		t.Errorf("%d polled and %d disposed: the test did not exercise both paths", nPolled, nDisposed)
	}
}

// testConcurrentOrder: with one consumer, the entries of each producer come
// out in the order that producer offered them, across resizes (migration
// preserves order; the surplus is always the newest).
func testConcurrentOrder(t *testing.T, f Factory) {
	const (
		producers   = 3
		perProducer = 3000
	)
	s := newStage(t, f, "order", 16, stage.Hooks[Entry]{})
	var producing, wg sync.WaitGroup
	var offered atomic.Int64
	produced := make(chan struct{})
	for p := range producers {
		producing.Add(1)
		go func() {
			defer producing.Done()
			for i := range perProducer {
				for j := 0; j < 3 && s.Len() >= s.Cap(); j++ {
					runtime.Gosched()
				}
				s.Offer(NewEntry(uint64(p*perProducer + i + 1)))
				offered.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // resizer: a new size every few offers
		defer wg.Done()
		sizes := []int{3, 64, 8, 1, 128, 16}
		for i := 0; ; i++ {
			s.Resize(sizes[i%len(sizes)])
			if !afterOffers(&offered, 8, produced) {
				return
			}
		}
	}()
	var last [producers]uint64
	var got int
	var failure string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			e, ok := s.Poll()
			if !ok {
				select {
				case <-produced:
					if s.Len() == 0 {
						return
					}
				default:
				}
				runtime.Gosched()
				continue
			}
			p := (e.ID - 1) / perProducer
			if e.ID <= last[p] && failure == "" {
				failure = fmt.Sprintf("producer %d: entry %d polled after entry %d", p, e.ID, last[p])
			}
			last[p] = e.ID
			got++
		}
	}()
	producing.Wait()
	close(produced)
	wg.Wait()
	if failure != "" {
		t.Fatal(failure)
	}
	if got == 0 {
		t.Fatal("the consumer polled nothing")
	}
}

func testAllocs(t *testing.T, f Factory) {
	var adds, removes, disposes atomic.Int64
	hooks := stage.Hooks[Entry]{
		OnAdd:     func(Entry) { adds.Add(1) },
		OnRemove:  func(Entry) { removes.Add(1) },
		OnDispose: func(Entry) { disposes.Add(1) },
	}
	s := newStage(t, f, "allocs", 64, hooks)
	e := NewEntry(1)
	// Warm up: let an implementation that grows its storage reach its
	// steady state.
	for range 2 * s.Cap() {
		s.Offer(e)
	}
	for range 2 * s.Cap() {
		s.Poll()
	}
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"Offer+Poll", func() { s.Offer(e); s.Poll() }},
		{"OfferSilent+PollSilent", func() { s.OfferSilent(e); s.PollSilent() }},
		{"Poll on empty", func() { s.Poll() }},
		{"Offer on full", func() {
			for s.Len() < s.Cap() {
				s.OfferSilent(e)
			}
			s.Offer(e)
		}},
	} {
		if got := testing.AllocsPerRun(1000, tc.fn); got != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, got)
		}
	}
	if adds.Load() == 0 || removes.Load() == 0 || disposes.Load() == 0 {
		t.Fatalf("hooks ran %d/%d/%d times: the measured paths did not fire them", adds.Load(), removes.Load(), disposes.Load())
	}
}

// afterOffers waits, yielding the processor, until n more offers than when
// it was called have been counted in offered, and reports true; or it
// reports false once done is closed.
func afterOffers(offered *atomic.Int64, n int64, done <-chan struct{}) bool {
	for target := offered.Load() + n; offered.Load() < target; {
		select {
		case <-done:
			return false
		default:
		}
		runtime.Gosched()
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}
