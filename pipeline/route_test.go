package pipeline

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
)

// routeEnv is a pipeline with every routed kind of sink: general, login,
// personal and network.
func routeEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envConfig{opts: func(o *Options) {
		o.General = SinkConfig{Capacity: 4}
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2, Name: "joins"}
		o.Personal = PersonalConfig{Enabled: true, PerPlayer: 2}
		o.Network = NetworkConfig{Enabled: true, Capacity: 2, Secret: []byte("0123456789abcdef0123456789abcdef")}
	}})
}

// offer puts a fresh entry at b straight into s's ring.
func offer(t *testing.T, e *env, s *Sink, b geom.Block) *Hot {
	t.Helper()
	h := e.hot(b)
	if !s.ring.OfferSilent(h) {
		t.Fatalf("offer into %s refused", s.name)
	}
	e.p.held.acquire(h.Index)
	return h
}

func TestTakeRoutes(t *testing.T) {
	e := routeEnv(t)
	defer e.shutdown()
	ctx := context.Background()
	p := e.p
	named := offer(t, e, p.general, geom.Block{X: 1, Z: 1})
	gen := offer(t, e, p.general, geom.Block{X: 17, Z: 1})
	login := offer(t, e, p.login.Sink, geom.Block{X: 33, Z: 1})

	for _, tc := range []struct {
		sink, wantName string
		want           *Hot
	}{
		{"general", "general", named},
		{"login", "joins", login},
		{"", "general", gen},
	} {
		h, name, err := p.Take(ctx, Request{Player: "ann", Sink: tc.sink})
		if err != nil || h != tc.want || name != tc.wantName {
			t.Fatalf("Take(sink %q) = %v, %q, %v; want the entry of %q", tc.sink, h, name, err, tc.wantName)
		}
		h.Close()
	}

	// The login reserve is empty now: "joins" falls back to general.
	fallback := offer(t, e, p.general, geom.Block{X: 49, Z: 1})
	if h, name, err := p.Take(ctx, Request{Player: "ann", Sink: "joins"}); err != nil || h != fallback || name != "general" {
		t.Fatalf("login fallback = %v, %q, %v; want the general entry", h, name, err)
	} else {
		h.Close()
	}

	// The default route serves the player's personal queue first.
	if err := p.Personal().Open("bob", 0); err != nil {
		t.Fatal(err)
	}
	bucket, _ := p.personal.keyed.Get("bob")
	mine := e.hot(geom.Block{X: 1, Z: 17})
	p.held.acquire(mine.Index)
	if !bucket.OfferSilent(mine) {
		t.Fatal("offer into bob's bucket refused")
	}
	other := offer(t, e, p.general, geom.Block{X: 17, Z: 17})
	if h, name, err := p.Take(ctx, Request{Player: "bob"}); err != nil || h != mine || name != p.personal.name {
		t.Fatalf("default route for bob = %v, %q, %v; want his personal entry", h, name, err)
	} else {
		h.Close()
	}
	if h, _, err := p.Take(ctx, Request{Player: "bob"}); err != nil || h != other {
		t.Fatalf("default route with bob's queue empty = %v, %v; want the general entry", h, err)
	} else {
		h.Close()
	}

	for _, tc := range []struct {
		req  Request
		want error
	}{
		{Request{Player: "ann", Sink: "nowhere"}, ErrUnknownSink},
		{Request{Player: "ann", Sink: "personal"}, ErrNoQueue},
		{Request{Player: "ann", Sink: "network"}, ErrTokenRequired},
		{Request{Player: "ann", Token: "not-a-token"}, ErrInvalidToken},
	} {
		if h, _, err := p.Take(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("Take(%+v) = %v, %v; want %v", tc.req, h, err, tc.want)
		}
	}
}

func TestTakeDisabledSinks(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	for _, req := range []Request{
		{Player: "ann", Sink: "login"},
		{Player: "ann", Sink: "personal"},
		{Player: "ann", Token: "tok"},
	} {
		if _, _, err := e.p.Take(context.Background(), req); !errors.Is(err, ErrNoSink) {
			t.Errorf("Take(%+v) = %v, want ErrNoSink", req, err)
		}
	}
}

func TestTakeAdmit(t *testing.T) {
	e := routeEnv(t)
	defer e.shutdown()
	p := e.p
	refused := offer(t, e, p.general, geom.Block{X: 1, Z: 1})
	kept := offer(t, e, p.general, geom.Block{X: 17, Z: 1})
	var seen []*Hot
	admit := AdmitFunc(func(h *Hot) bool {
		seen = append(seen, h)
		return h != refused
	})
	h, _, err := p.Take(context.Background(), Request{Player: "ann", Admit: admit})
	if err != nil || h != kept {
		t.Fatalf("Take = %v, %v; want the second entry", h, err)
	}
	h.Close()
	if len(seen) != 2 || refused.Res.Chunk() != nil {
		t.Errorf("admit saw %d entries, refused entry's reservation still open: %v", len(seen), refused.Res.Chunk() != nil)
	}
	if n := p.Stats().Refused; n != 1 {
		t.Errorf("Stats.Refused = %d, want 1", n)
	}
}

func TestTakeWaits(t *testing.T) {
	e := routeEnv(t)
	defer e.shutdown()
	p := e.p
	got := make(chan *Hot, 1)
	go func() {
		h, _, err := p.Take(context.Background(), Request{Player: "ann", Sink: "general"})
		if err != nil {
			t.Errorf("waiting Take: %v", err)
		}
		got <- h
	}()
	// Wait until the request waits (it counted its miss).
	eventually.True(t, 10*time.Second, "the request waiting", func() bool { return p.general.c.misses.Load() > 0 })
	want := offer(t, e, p.general, geom.Block{X: 1, Z: 1})
	p.notifyPromote(p.general.name, &p.general.sig)
	select {
	case h := <-got:
		if h != want {
			t.Fatalf("waiting Take got %v, want the entry that landed", h)
		}
		h.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("waiting Take not woken by a promotion")
	}
	if n := p.general.c.misses.Load(); n != 1 {
		t.Errorf("misses = %d, want 1: a waiting request counts once", n)
	}
}

func TestTakeEndsWait(t *testing.T) {
	e := routeEnv(t)
	defer e.shutdown()
	p := e.p

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := p.Take(ctx, Request{Player: "ann"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Take past its deadline = %v, want the context's error", err)
	}

	var paused atomic.Bool
	done := make(chan error, 1)
	go func() {
		_, _, err := p.Take(context.Background(), Request{Player: "ann", Paused: &paused})
		done <- err
	}()
	eventually.True(t, 10*time.Second, "the request waiting again", func() bool { return p.general.c.misses.Load() >= 2 })
	paused.Store(true)
	p.Wake()
	if err := waitErr(t, done); !errors.Is(err, ErrPaused) {
		t.Errorf("Take woken while paused = %v, want ErrPaused", err)
	}

	stop := make(chan struct{})
	go func() {
		_, _, err := p.Take(context.Background(), Request{Player: "ann", Stop: stop})
		done <- err
	}()
	close(stop)
	if err := waitErr(t, done); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Stop closed = %v, want ErrClosed", err)
	}

	drain := make(chan struct{})
	go func() {
		_, _, err := p.Take(context.Background(), Request{Player: "ann", Stop: stop2(), Done: drain})
		done <- err
	}()
	close(drain)
	if err := waitErr(t, done); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Done closed = %v, want ErrClosed", err)
	}

	// Wait bounds the wait as a deadline would, from the first wait.
	begin := time.Now()
	go func() {
		_, _, err := p.Take(context.Background(), Request{Player: "ann", Wait: 30 * time.Millisecond})
		done <- err
	}()
	if err := waitErr(t, done); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Take past its Wait = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(begin); d < 30*time.Millisecond {
		t.Errorf("Take with Wait 30ms returned after %v", d)
	}
	// A ready entry is served whatever the Wait.
	want := offer(t, e, p.general, geom.Block{X: 2, Z: 2})
	if h, _, err := p.Take(context.Background(), Request{Player: "ann", Wait: time.Nanosecond}); err != nil || h != want {
		t.Errorf("Take of a ready entry with Wait = %v, %v; want the entry", h, err)
	} else {
		h.Close()
	}
}

// stop2 is a Stop channel never closed.
func stop2() <-chan struct{} { return make(chan struct{}) }

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Take did not return")
		return nil
	}
}

// TestSignal: a notify between a waiter's wait and its look is not lost,
// and a notify without waiters allocates nothing.
func TestSignal(t *testing.T) {
	var s signal
	ch := s.wait()
	s.notify()
	select {
	case <-ch:
	default:
		t.Fatal("notify did not close the channel taken before it")
	}
	if n := testing.AllocsPerRun(100, s.notify); n != 0 {
		t.Errorf("notify without waiters allocates %v times", n)
	}
}

func BenchmarkTakeHit(b *testing.B) {
	e := newEnv(b, envConfig{opts: func(o *Options) { o.General = SinkConfig{Capacity: 4} }})
	defer e.shutdown()
	h := e.hot(geom.Block{X: 1, Z: 1})
	ctx := context.Background()
	req := Request{Player: "ann"}
	b.ReportAllocs()
	for b.Loop() {
		e.p.held.acquire(h.Index)
		e.p.general.ring.OfferSilent(h)
		if _, _, err := e.p.Take(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	h.Close()
}
