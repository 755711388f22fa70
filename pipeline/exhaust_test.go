package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
)

// screenCounter is a ScreenFunc rejecting every chunk with one cause,
// counting its screenings per chunk.
type screenCounter struct {
	cause memory.Cause
	mu    sync.Mutex
	n     map[geom.Chunk]int
}

func (s *screenCounter) screen(_ context.Context, c geom.Chunk) (Screened, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[geom.Chunk]int{}
	}
	s.n[c]++
	return Screened{Cause: s.cause}, nil
}

func (s *screenCounter) counts() (chunks, max int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.n {
		max = maxInt(max, n)
	}
	return len(s.n), max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// A rejection memory keeps is not screened again while memory's selection
// does not see it yet (no rebuild for the whole test): every chunk of the
// region is screened exactly once, then draws find nothing, and the
// pipeline holds nothing. Once memory forgets a chunk (its file changed),
// that chunk, and only it, is screened again.
func TestRejectedNotScreenedAgainBeforeRebuild(t *testing.T) {
	sc := &screenCounter{cause: memory.CauseUnreadable}
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Screen = sc.screen }})
	defer e.shutdown()
	total := int(e.shape.Len())
	for range 4 * total {
		e.cycle()
		if n, _ := sc.counts(); n == total {
			break
		}
	}
	// Pulses more: no chunk may be screened twice.
	for range 50 {
		e.cycle()
	}
	n, most := sc.counts()
	if n != total || most != 1 {
		t.Fatalf("screened %d of %d chunks, one of them %d times; want each once", n, total, most)
	}
	if h := e.p.Holding(); h != 0 {
		t.Errorf("Holding() = %d with every chunk rejected, want 0", h)
	}
	if e.mem.Selectable() != int64(total) {
		t.Fatalf("memory rebuilt behind the test's back: Selectable %d", e.mem.Selectable())
	}
	e.mem.Rebuild()
	if s := e.mem.Selectable(); s != 0 {
		t.Fatalf("Selectable() = %d after the rebuild, want 0", s)
	}
	// The chunk changes: memory forgets it, and it alone comes back.
	c := geom.ChunkAt(e.shape, 7)
	if ok, err := e.mem.ForgetChunk(c); err != nil || !ok {
		t.Fatalf("ForgetChunk = %v, %v", ok, err)
	}
	for range 20 {
		e.cycle()
	}
	sc.mu.Lock()
	again := sc.n[c]
	sc.mu.Unlock()
	if again != 2 {
		t.Errorf("the forgotten chunk was screened %d times in all, want 2", again)
	}
	if _, most := sc.counts(); most != 2 {
		t.Errorf("a chunk was screened %d times, want at most 2", most)
	}
	if got := e.p.Stats().Held; got != 0 {
		t.Errorf("Stats.Held = %d, want 0", got)
	}
}

// A transient rejection is not parked: the chunk is drawn again before
// any rebuild.
func TestTransientRejectionNotParked(t *testing.T) {
	sc := &screenCounter{cause: memory.CauseTimeout}
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Screen = sc.screen }})
	defer e.shutdown()
	for range 200 {
		e.cycle()
		if _, most := sc.counts(); most > 1 {
			return
		}
	}
	n, most := sc.counts()
	t.Fatalf("after 200 pulses %d chunks screened, at most %d times: transient rejections are parked", n, most)
}

// Take fails at once with ErrExhausted when nothing is ready and the
// request's Exhausted flag is set, and a waiting Take ends with it once
// the flag is set and Wake is called; what is ready is still served.
func TestTakeExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true})
		defer e.shutdown()
		var flag atomic.Bool
		flag.Store(true)
		ctx := context.Background()
		if _, _, err := e.p.Take(ctx, Request{Player: "p", Exhausted: &flag}); !errors.Is(err, ErrExhausted) {
			t.Fatalf("Take on an exhausted, empty pipeline = %v, want ErrExhausted", err)
		}
		flag.Store(false)
		done := make(chan error, 1)
		go func() {
			_, _, err := e.p.Take(ctx, Request{Player: "p", Exhausted: &flag})
			done <- err
		}()
		synctest.Wait() // the request waits
		select {
		case err := <-done:
			t.Fatalf("Take returned %v before the flag was set", err)
		default:
		}
		flag.Store(true)
		e.p.Wake()
		if err := <-done; !errors.Is(err, ErrExhausted) {
			t.Fatalf("waiting Take = %v, want ErrExhausted", err)
		}
		e.fill(200, func() bool { return e.p.General().Len() > 0 })
		h, _, err := e.p.Take(ctx, Request{Player: "p", Exhausted: &flag})
		if err != nil {
			t.Fatalf("Take of a ready entry with the flag set = %v", err)
		}
		h.Close()
	})
}

// The held set's parking: a parked index stays held through its stage's
// release, counts as no location, and is free once the generation passes
// the one it was parked at; a sweep then forgets it.
func TestHeldParking(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(5)
	var s heldSet
	s.park(1, gen.Load) // not held: nothing
	if s.has(1) || s.len() != 0 {
		t.Fatalf("parking an index not held holds it")
	}
	if !s.acquire(1) || !s.acquire(2) {
		t.Fatal("acquire of free indices failed")
	}
	s.park(1, gen.Load)
	s.release(1) // its stage's disposal: nothing
	if !s.has(1) || s.acquire(1) || s.len() != 1 {
		t.Fatalf("parked index: has %v, len %d; want held, drawn as a duplicate, not counted", s.has(1), s.len())
	}
	gen.Store(6)
	if s.has(1) {
		t.Errorf("has(1) after the generation passed")
	}
	if !s.acquire(1) || s.len() != 2 {
		t.Fatalf("acquire after the generation passed failed, len %d", s.len())
	}
	s.park(1, gen.Load)
	gen.Store(7)
	s.sweep()
	if s.has(1) || s.len() != 1 || len(s.parked) != 0 {
		t.Errorf("after a sweep: has %v, len %d, parked %d", s.has(1), s.len(), len(s.parked))
	}
	s.release(2)
	if s.len() != 0 || len(s.m) != 0 {
		t.Errorf("release of a live index left len %d, m %d", s.len(), len(s.m))
	}
}
