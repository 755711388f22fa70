package stage

import (
	"errors"
	"fmt"
)

// MaxCapacity is the largest capacity a stage applies. A Ring allocates its
// whole capacity up front, so the bound keeps a typo in a configuration from
// reserving gigabytes; it is a power of two, so it is also a valid Ring size.
const MaxCapacity = 1 << 24

// ErrClosed is returned by Keyed.Open once the keyed stage is closed.
var ErrClosed = errors.New("stage: closed")

// Stage is a bounded buffer of entries in one place of a cache pipeline
// (backlog, cold, a hot sink). See the package documentation for the
// ownership rule and for which operation fires which hook.
//
// Implementations are safe for concurrent use by any number of goroutines,
// never call a hook while holding a lock of their own, and pass the contract
// suite in package stagetest.
type Stage[T any] interface {
	// Name is the stage's name, for logs and metrics.
	Name() string

	// Offer is pipeline ingress. It takes ownership of v whatever it
	// returns: true means v is stored, and OnAdd(v) ran before any poller
	// could see it; false means the stage was full or closed and v has been
	// disposed (OnDispose(v), preceded by OnRemove(v) only in the rare case
	// that OnAdd(v) had already run because a concurrent producer took the
	// last place). Offer never blocks, except while a Resize migrates the
	// entries of a Ring.
	Offer(v T) bool

	// Poll is pipeline egress. It removes the oldest entry, fires
	// OnRemove for it, and hands it and everything it holds (a reservation)
	// to the caller. It reports false when the stage is empty or closed.
	Poll() (T, bool)

	// OfferSilent is internal movement in: like Offer, but a stored entry
	// fires no hook, because its row already exists. An entry that is not
	// stored leaves the pipeline: OnRemove(v) then OnDispose(v).
	OfferSilent(v T) bool

	// PollSilent is internal movement out: like Poll, but fires no hook.
	// The entry is in transit: the caller passes it to another stage with
	// OfferSilent or ends it with Dispose.
	PollSilent() (T, bool)

	// Dispose ends an entry the caller owns and took with PollSilent (it
	// is still in the pipeline): OnRemove(v) then OnDispose(v). It is the
	// way a transition drops a source entry, so that OnDispose stays the
	// only disposal path. It works on a closed stage too.
	Dispose(v T)

	// Len is the number of entries stored. Under concurrent use it is a
	// snapshot that may already be stale; it is always in [0, Cap()] for
	// the capacity it was read with.
	Len() int

	// Cap is the capacity in force.
	Cap() int

	// Resize changes the capacity and returns the capacity actually
	// applied, which callers use instead of n: it is n clamped to
	// [0, MaxCapacity], rounded up by implementations that need it (a Ring
	// to a power of two). Entries are kept in order; the newest ones beyond
	// the new capacity are disposed (OnRemove, then OnDispose). A capacity
	// of 0 keeps the stage open but stores nothing. On a closed stage
	// Resize does nothing and returns Cap().
	Resize(n int) int

	// Close disposes every stored entry (OnRemove, then OnDispose, each
	// exactly once) and recycles nothing. Afterwards Offer and OfferSilent
	// dispose what they are given, Poll and PollSilent report false, and
	// Len is 0. Close is idempotent.
	Close()
}

// Hooks are the callbacks of a stage. Any of them may be nil. They run on the
// goroutine of the operation that fires them, never under a lock of the
// stage, so a hook may call the stage back; it must not block for long,
// since the operation waits for it.
//
// OnAdd and OnRemove are the persistence callbacks (the rows of the
// locations table); OnDispose is the terminal disposal of an entry: for a
// hot stage it closes the entry's reservation and does nothing else. In
// particular it never offers the entry, or what is left of it, to any stage:
// recycling a demoted entry is the job of a transition.
type Hooks[T any] struct {
	OnAdd     func(T)
	OnRemove  func(T)
	OnDispose func(T)
}

func (h *Hooks[T]) add(v T) {
	if h.OnAdd != nil {
		h.OnAdd(v)
	}
}

func (h *Hooks[T]) remove(v T) {
	if h.OnRemove != nil {
		h.OnRemove(v)
	}
}

func (h *Hooks[T]) dispose(v T) {
	if h.OnDispose != nil {
		h.OnDispose(v)
	}
}

// end ends an entry that is in the pipeline: its row goes, then its
// resources.
func (h *Hooks[T]) end(v T) {
	h.remove(v)
	h.dispose(v)
}

// endAll ends every entry of vs, even if a hook panics on one of them: the
// rest are still ended (a panicking hook must not leak the other entries'
// reservations), and the first panic is raised again afterwards.
func (h *Hooks[T]) endAll(vs []T) {
	i := 0
	defer func() {
		if i >= len(vs) {
			return
		}
		// A hook on vs[i] panicked (or called runtime.Goexit, which
		// recover reports as nil and which carries on by itself).
		r := recover()
		func() {
			defer func() { _ = recover() }() // later panics lose to the first
			h.endAll(vs[i+1:])
		}()
		if r != nil {
			panic(r)
		}
	}()
	for ; i < len(vs); i++ {
		h.end(vs[i])
	}
}

// checkCapacity validates a capacity given to a constructor.
func checkCapacity(n int) error {
	if n < 0 || n > MaxCapacity {
		return fmt.Errorf("stage: capacity %d out of range [0, %d]", n, MaxCapacity)
	}
	return nil
}

// clampCapacity is what Resize does with its argument.
func clampCapacity(n int) int {
	return min(max(n, 0), MaxCapacity)
}
