// Package flight provides Group, the module's one single-flight loader:
// concurrent callers that miss on the same key share one load.
//
// # Policy
//
// The same rules hold for every user of the package:
//
//   - The first caller for a key starts the load in a goroutine of its
//     own. The load's context keeps the first caller's values but not its
//     cancellation; it is cancelled when every caller waiting for the load
//     has left, and the key is forgotten then, so a later caller starts
//     afresh.
//   - Each caller returns when the load finishes or when its own context
//     ends, whichever is first; in the second case it returns ctx.Err()
//     and the load goes on for the callers that remain. No caller ever
//     receives another caller's cancellation.
//   - The load's value and error reach every caller still waiting. Nothing
//     is remembered: once the load returns the key is forgotten, so an
//     error is not cached and the next caller loads again. Keeping results
//     is the caller's business (typically a cache filled by the load
//     itself).
//   - A panic in the load is recovered, logged once with its stack, and
//     becomes an error wrapping ErrPanicked for every waiting caller. It
//     never crashes the process and never poisons the key: the next caller
//     loads again.
package flight

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// ErrPanicked is wrapped by the error that callers receive when the load
// panicked.
var ErrPanicked = errors.New("flight: load panicked")

// Group deduplicates concurrent loads by key.
//
// The zero value is ready to use. A Group is safe for concurrent use and
// must not be copied after first use.
type Group[K comparable, V any] struct {
	// Logger receives one error line for each load that panics.
	// Default (nil): slog.Default(). Set it before first use.
	Logger *slog.Logger

	mu    sync.Mutex
	calls map[K]*call[V] // protected by mu
}

// call is one load and its waiting callers.
type call[V any] struct {
	done    chan struct{} // closed once val and err are set
	val     V
	err     error
	cancel  context.CancelFunc
	waiters int // protected by Group.mu
}

// Do returns the result of load for k, sharing one load among concurrent
// callers (see the package documentation for the policy). joined reports
// whether this caller joined a load that another caller started.
func (g *Group[K, V]) Do(ctx context.Context, k K, load func(ctx context.Context) (V, error)) (v V, joined bool, err error) {
	if err := ctx.Err(); err != nil {
		return v, false, err
	}
	g.mu.Lock()
	c := g.calls[k]
	joined = c != nil
	if c == nil {
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call[V]{done: make(chan struct{}), cancel: cancel}
		if g.calls == nil {
			g.calls = make(map[K]*call[V])
		}
		g.calls[k] = c
		go g.run(lctx, k, c, load)
	}
	c.waiters++
	g.mu.Unlock()

	select {
	case <-c.done:
		return c.val, joined, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancel()
			g.forget(k, c) // a later caller starts afresh
		}
		g.mu.Unlock()
		return v, joined, ctx.Err()
	}
}

// InFlight returns the number of loads under way.
func (g *Group[K, V]) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

// run performs one load and delivers its result to c's callers.
func (g *Group[K, V]) run(ctx context.Context, k K, c *call[V], load func(context.Context) (V, error)) {
	v, err := g.protect(ctx, k, load)
	g.mu.Lock()
	g.forget(k, c)
	c.val, c.err = v, err
	g.mu.Unlock()
	close(c.done)
	c.cancel()
}

// protect calls load, turning a panic into an error.
func (g *Group[K, V]) protect(ctx context.Context, k K, load func(context.Context) (V, error)) (v V, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero V
			v, err = zero, fmt.Errorf("%w: %v", ErrPanicked, p)
			log := g.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Error("flight: load panicked", "key", fmt.Sprint(k), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	return load(ctx)
}

// forget drops k's entry if it is still c. The caller holds g.mu.
func (g *Group[K, V]) forget(k K, c *call[V]) {
	if g.calls[k] == c {
		delete(g.calls, k)
	}
}
