// Package txgate admits calls to a storage backend: it refuses them once
// the backend is closing, counts the ones in flight so Close can wait for
// them, bounds how many storage transactions run at once, and bounds each
// transaction's time from the moment it is admitted (time spent waiting
// for a slot does not count). The archive's SQLite and PostgreSQL stores
// share it.
package txgate

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	// ErrClosed is returned by Enter after Close.
	ErrClosed = errors.New("txgate: closed")
	// ErrTimeout is the cause of a transaction context whose time ran out.
	ErrTimeout = errors.New("transaction timed out")
)

// Gate is safe for concurrent use. The zero value is not usable: use New.
type Gate struct {
	timeout time.Duration
	sem     chan struct{} // one token per running transaction

	mu       sync.Mutex     // protects closed
	closed   bool           // set by Close; no call enters afterwards
	inflight sync.WaitGroup // calls in progress; Add only under mu while !closed
}

// New returns a gate admitting at most maxTx transactions at once, each
// bounded by timeout.
func New(maxTx int, timeout time.Duration) *Gate {
	return &Gate{timeout: timeout, sem: make(chan struct{}, max(maxTx, 1))}
}

// Enter admits a call unless the gate is closed (ErrClosed) or ctx is done
// (ctx.Err()). A nil error must be paired with Leave.
func (g *Gate) Enter(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.inflight.Add(1)
	g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		g.inflight.Done()
		return err
	}
	return nil
}

// Leave ends a call admitted by Enter.
func (g *Gate) Leave() { g.inflight.Done() }

// Admit waits for a transaction slot (honouring ctx), then returns the
// transaction's context, bounded by the timeout from now with cause
// ErrTimeout, and the function that releases both.
func (g *Gate) Admit(ctx context.Context) (context.Context, func(), error) {
	select {
	case g.sem <- struct{}{}:
	default:
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	txctx, cancel := context.WithTimeoutCause(ctx, g.timeout, ErrTimeout)
	return txctx, func() {
		cancel()
		<-g.sem
	}, nil
}

// TimedOut reports whether txctx (from Admit; nil is allowed) ran out of
// its transaction time.
func TimedOut(txctx context.Context) bool {
	return txctx != nil && errors.Is(context.Cause(txctx), ErrTimeout)
}

// Close refuses every later Enter and waits for the calls in flight.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.inflight.Wait()
}
