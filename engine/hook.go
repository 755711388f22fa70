package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// Hand-out hooks.
//
// A tool that follows the places handed out (the web map's deliveries
// layer) subscribes a function with OnHandout; the hand-out path calls
// every subscribed function once per location, on the goroutine handing
// it out. The subscribers are an immutable slice behind an atomic
// pointer, replaced whole under a mutex when one comes or goes: with
// nobody subscribed a hand-out pays one atomic load of a nil pointer.
//
// Rejected: a channel per subscriber (the engine would choose between
// blocking the hand-out and dropping for every tool alike; the map already
// drops in its own non-blocking publish), and a process-wide table keyed
// by engine (it outlives the engine unless collected, and costs a lookup
// per hand-out once any engine has a subscriber).

// hooks are the functions subscribed with OnHandout. The zero value holds
// none and is ready for use.
type hooks struct {
	mu   sync.Mutex                   // serializes changes of list
	list atomic.Pointer[[]*handoutFn] // nil when nobody subscribed
}

// handoutFn is one subscription; its pointer identifies it.
type handoutFn struct {
	fn func(Location, time.Time)
}

// OnHandout subscribes fn to the locations e hands out: Teleport, Redeem
// and GroupTeleport call it once for each location they return, with the
// location as the caller receives it and the time on Options.Clock, after
// it was registered as handed out and before the call returns. It returns
// a function that ends the subscription; after stop returns fn is not
// called by any hand-out that starts later (one under way may still call
// it). stop may be called more than once. A nil fn subscribes nothing.
//
// fn runs on the hand-out path, on the requester's goroutine, possibly on
// many goroutines at once: it must be fast, must not block (no I/O, no
// waiting on a lock a slow reader holds, no unbuffered send; drop what
// cannot be delivered at once), must not panic, and must not call the
// methods of e that hand out or wait (Teleport, Redeem, Close...). A
// hook that breaks the rule delays every teleport of e.
//
// With nobody subscribed a hand-out pays one atomic load for the hooks.
func (e *Engine) OnHandout(fn func(loc Location, at time.Time)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	h := &handoutFn{fn: fn}
	e.hooks.mu.Lock()
	var list []*handoutFn
	if p := e.hooks.list.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, h)
	e.hooks.list.Store(&list)
	e.hooks.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { e.hooks.remove(h) }) }
}

// remove ends the subscription h.
func (hs *hooks) remove(h *handoutFn) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	p := hs.list.Load()
	if p == nil {
		return
	}
	list := make([]*handoutFn, 0, len(*p))
	for _, x := range *p {
		if x != h {
			list = append(list, x)
		}
	}
	if len(list) == 0 {
		hs.list.Store(nil)
		return
	}
	hs.list.Store(&list)
}

// handedOut calls the hand-out hooks with loc. The hand-out path calls it
// once per location it returns.
func (e *Engine) handedOut(loc Location) {
	p := e.hooks.list.Load()
	if p == nil {
		return
	}
	at := e.opts.Clock()
	for _, h := range *p {
		h.fn(loc, at)
	}
}
