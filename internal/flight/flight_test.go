package flight

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestShared: concurrent callers share one load and all get its value; one
// of them started it.
func TestShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[string, int]
		release := make(chan struct{})
		var loads atomic.Int64
		load := func(context.Context) (int, error) { loads.Add(1); <-release; return 42, nil }
		const n = 5
		vals, joins := make([]int, n), make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var err error
				vals[i], joins[i], err = g.Do(context.Background(), "k", load)
				if err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		if g.InFlight() != 1 {
			t.Fatalf("InFlight = %d, want 1", g.InFlight())
		}
		close(release)
		wg.Wait()
		started := 0
		for i := range n {
			if vals[i] != 42 {
				t.Errorf("caller %d got %d", i, vals[i])
			}
			if !joins[i] {
				started++
			}
		}
		if loads.Load() != 1 || started != 1 {
			t.Fatalf("%d loads, %d starters; want 1 and 1", loads.Load(), started)
		}
		if g.InFlight() != 0 {
			t.Fatalf("InFlight after = %d", g.InFlight())
		}
	})
}

// TestErrorSharedNotKept: an error reaches every waiter and the next call
// loads again.
func TestErrorSharedNotKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int, int]
		boom := errors.New("boom")
		release := make(chan struct{})
		var loads atomic.Int64
		load := func(context.Context) (int, error) { loads.Add(1); <-release; return 0, boom }
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, _, errs[i] = g.Do(context.Background(), 1, load) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, boom) {
				t.Errorf("caller %d: %v, want boom", i, err)
			}
		}
		if _, _, err := g.Do(context.Background(), 1, load); !errors.Is(err, boom) || loads.Load() != 2 {
			t.Fatalf("after failure: %v with %d loads; want boom and a second load", err, loads.Load())
		}
	})
}

// TestPanic: a panic becomes ErrPanicked for every waiter, is logged with
// its stack, and the key loads again afterwards.
func TestPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		var mu sync.Mutex
		g := Group[string, int]{Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))}
		release := make(chan struct{})
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, _, errs[i] = g.Do(context.Background(), "k", func(context.Context) (int, error) {
					<-release
					panic("load bug")
				})
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, ErrPanicked) || !strings.Contains(err.Error(), "load bug") {
				t.Errorf("caller %d: %v, want ErrPanicked naming the panic", i, err)
			}
		}
		mu.Lock()
		logged := buf.String()
		mu.Unlock()
		if strings.Count(logged, "flight: load panicked") != 1 || !strings.Contains(logged, "stack=") {
			t.Errorf("log = %q, want one line with a stack", logged)
		}
		v, _, err := g.Do(context.Background(), "k", func(context.Context) (int, error) { return 7, nil })
		if err != nil || v != 7 {
			t.Fatalf("after panic: %d, %v; want the key to load again", v, err)
		}
	})
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type ctxKey struct{}

// TestStarterLeaves: the starter's cancellation does not reach the load
// nor the remaining waiter, and the load sees the starter's values.
func TestStarterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int, string]
		release := make(chan struct{})
		var sawCancel atomic.Bool
		load := func(ctx context.Context) (string, error) {
			select {
			case <-release:
			case <-ctx.Done():
				sawCancel.Store(true)
				return "", ctx.Err()
			}
			return ctx.Value(ctxKey{}).(string), nil
		}
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "starter"))
		var starterErr, waiterErr error
		var got string
		var wg sync.WaitGroup
		wg.Go(func() { _, _, starterErr = g.Do(ctx, 0, load) })
		synctest.Wait()
		wg.Go(func() { got, _, waiterErr = g.Do(context.Background(), 0, load) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(release)
		wg.Wait()
		if !errors.Is(starterErr, context.Canceled) {
			t.Errorf("starter: %v, want context.Canceled", starterErr)
		}
		if waiterErr != nil || got != "starter" || sawCancel.Load() {
			t.Errorf("waiter: %q, %v (load cancelled: %v); want the starter's value and no cancellation", got, waiterErr, sawCancel.Load())
		}
	})
}

// TestAllLeave: when every caller leaves, the load is cancelled and the key
// forgotten at once, so a new caller starts a new load.
func TestAllLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int, int]
		var loads atomic.Int64
		cancelled := make(chan struct{})
		first := func(ctx context.Context) (int, error) {
			loads.Add(1)
			<-ctx.Done()
			close(cancelled)
			return 0, ctx.Err()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _, _, _ = g.Do(ctx, 0, first) })
		synctest.Wait()
		cancel()
		wg.Wait()
		<-cancelled
		if g.InFlight() != 0 {
			t.Fatalf("InFlight = %d after every caller left", g.InFlight())
		}
		v, joined, err := g.Do(context.Background(), 0, func(context.Context) (int, error) { loads.Add(1); return 9, nil })
		if v != 9 || joined || err != nil || loads.Load() != 2 {
			t.Fatalf("new caller: %d, %v, %v with %d loads; want a fresh load", v, joined, err, loads.Load())
		}
	})
}

// TestDoneContext: a caller whose context has already ended starts nothing.
func TestDoneContext(t *testing.T) {
	var g Group[int, int]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := g.Do(ctx, 0, func(context.Context) (int, error) {
		t.Error("load ran for a done context")
		return 0, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
}
