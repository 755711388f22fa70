package stage_test

import (
	"testing"

	"github.com/rtpengine/rtp/stage"
)

// benchEntry stands for a hot entry: a position and the reservation it holds.
type benchEntry struct {
	x, z int32
	res  *int
}

const benchCap = 1024

// BenchmarkRingOfferPoll is one Offer and one Poll of an entry, from one
// goroutine and from GOMAXPROCS goroutines at once, with hooks set (as a
// persisted stage has them).
func BenchmarkRingOfferPoll(b *testing.B) {
	benchOfferPoll(b, func() stage.Stage[*benchEntry] {
		s, err := stage.NewRing("bench", benchCap, benchHooks())
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// BenchmarkQueueOfferPoll is the same for the mutex-guarded Queue.
func BenchmarkQueueOfferPoll(b *testing.B) {
	benchOfferPoll(b, func() stage.Stage[*benchEntry] {
		s, err := stage.NewQueue("bench", benchCap, benchHooks())
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func benchHooks() stage.Hooks[*benchEntry] {
	return stage.Hooks[*benchEntry]{
		OnAdd:     func(*benchEntry) {},
		OnRemove:  func(*benchEntry) {},
		OnDispose: func(*benchEntry) {},
	}
}

func benchOfferPoll(b *testing.B, newStage func() stage.Stage[*benchEntry]) {
	b.Run("serial", func(b *testing.B) {
		s := newStage()
		defer s.Close()
		e := &benchEntry{1, 2, new(int)}
		b.ReportAllocs()
		for b.Loop() {
			s.Offer(e)
			s.Poll()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		s := newStage()
		defer s.Close()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			e := &benchEntry{1, 2, new(int)}
			for pb.Next() {
				s.Offer(e)
				s.Poll()
			}
		})
	})
}

// BenchmarkChanOfferPoll is the baseline: a buffered channel used the same
// way (non-blocking send and receive), with no hooks and no resize.
func BenchmarkChanOfferPoll(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		ch := make(chan *benchEntry, benchCap)
		e := &benchEntry{1, 2, new(int)}
		b.ReportAllocs()
		for b.Loop() {
			select {
			case ch <- e:
			default:
			}
			select {
			case <-ch:
			default:
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		ch := make(chan *benchEntry, benchCap)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			e := &benchEntry{1, 2, new(int)}
			for pb.Next() {
				select {
				case ch <- e:
				default:
				}
				select {
				case <-ch:
				default:
				}
			}
		})
	})
}

// TestOfferPollAllocs pins the zero-allocation hot path with the entry type
// of the benchmarks (a pointer, as a real hot entry is).
func TestOfferPollAllocs(t *testing.T) {
	ring, err := stage.NewRing("ring", 64, benchHooks())
	if err != nil {
		t.Fatal(err)
	}
	queue, err := stage.NewQueue("queue", 64, benchHooks())
	if err != nil {
		t.Fatal(err)
	}
	e := &benchEntry{1, 2, new(int)}
	for _, s := range []stage.Stage[*benchEntry]{ring, queue} {
		for _, tc := range []struct {
			name string
			fn   func()
		}{
			{"Offer+Poll", func() { s.Offer(e); s.Poll() }},
			{"OfferSilent+PollSilent", func() { s.OfferSilent(e); s.PollSilent() }},
		} {
			if got := testing.AllocsPerRun(1000, tc.fn); got != 0 {
				t.Errorf("%s %s: %v allocations, want 0", s.Name(), tc.name, got)
			}
		}
	}
}
