package world

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/geom"
)

func TestEpochsBumpOf(t *testing.T) {
	var e Epochs // the zero value is usable
	a, b := geom.Chunk{X: 1, Z: -2}, geom.Chunk{X: -1, Z: 2}
	if e.Of(a) != 0 || e.Len() != 0 {
		t.Fatalf("fresh Epochs: Of = %d, Len = %d", e.Of(a), e.Len())
	}
	e.Bump(a)
	e.Bump(a, b, a)
	if got := e.Of(a); got != 3 {
		t.Fatalf("Of(a) = %d after three bumps, want 3", got)
	}
	if got := e.Of(b); got != 1 {
		t.Fatalf("Of(b) = %d, want 1", got)
	}
	if got := e.Of(geom.Chunk{X: 1, Z: 2}); got != 0 {
		t.Fatalf("a chunk never bumped reports %d", got)
	}
	if e.Len() != 2 {
		t.Fatalf("Len = %d, want 2", e.Len())
	}
	e.Bump() // nothing
	var nilEpochs *Epochs
	if nilEpochs.Of(a) != 0 || nilEpochs.Len() != 0 {
		t.Fatal("a nil Epochs reports changes")
	}
}

// TestEpochsManyChunks bumps a whole region at once, as a rewritten region
// file does, and checks every chunk of it and none outside it.
func TestEpochsManyChunks(t *testing.T) {
	e := NewEpochs()
	var region []geom.Chunk
	for z := range int64(geom.RegionSize) {
		for x := range int64(geom.RegionSize) {
			region = append(region, geom.Chunk{X: x - 16, Z: z + 1000})
		}
	}
	e.Bump(region...)
	e.Bump(region[:10]...)
	for i, c := range region {
		want := uint32(1)
		if i < 10 {
			want = 2
		}
		if got := e.Of(c); got != want {
			t.Fatalf("Of(%v) = %d, want %d", c, got, want)
		}
		if got := e.Of(geom.Chunk{X: c.X, Z: -c.Z}); got != 0 {
			t.Fatalf("Of(%v) = %d outside the bumped region", geom.Chunk{X: c.X, Z: -c.Z}, got)
		}
	}
	if e.Len() != len(region) {
		t.Fatalf("Len = %d, want %d", e.Len(), len(region))
	}
}

// TestEpochsConcurrent runs readers against writers (for the race
// detector) and checks that counts only grow and end exact.
func TestEpochsConcurrent(t *testing.T) {
	e := NewEpochs()
	chunks := []geom.Chunk{{X: 0, Z: 0}, {X: 5, Z: 7}, {X: -3, Z: 9}}
	const writers, bumps = 4, 200
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			last := make([]uint32, len(chunks))
			for {
				select {
				case <-done:
					return
				default:
				}
				for i, c := range chunks {
					v := e.Of(c)
					if v < last[i] {
						t.Errorf("Of(%v) went back from %d to %d", c, last[i], v)
						return
					}
					last[i] = v
				}
			}
		})
	}
	var ww sync.WaitGroup
	for range writers {
		ww.Go(func() {
			for range bumps {
				e.Bump(chunks...)
			}
		})
	}
	ww.Wait()
	close(done)
	wg.Wait()
	for _, c := range chunks {
		if got := e.Of(c); got != writers*bumps {
			t.Fatalf("Of(%v) = %d, want %d", c, got, writers*bumps)
		}
	}
}

func TestEpochsOfAllocs(t *testing.T) {
	e := NewEpochs()
	c := geom.Chunk{X: 4, Z: 4}
	e.Bump(c)
	if n := testing.AllocsPerRun(1000, func() { _ = e.Of(c) }); n != 0 {
		t.Fatalf("Of allocates %v times", n)
	}
}

// TestReservationStale walks one chunk through its changes: a reservation
// goes stale when the chunk is bumped, Reserve then loads it again, the
// stale copy stays valid for its holder and is retired until it closes.
func TestReservationStale(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := newFakeSource()
	ep := NewEpochs()
	s := NewResident(src, ResidentOptions{Epochs: ep})
	defer s.Close()
	ctx := context.Background()
	pos := geom.Chunk{X: 2, Z: 3}

	old, err := s.Reserve(ctx, pos)
	if err != nil {
		t.Fatal(err)
	}
	if old.Stale() {
		t.Fatal("a fresh reservation is stale")
	}
	oldChunk := old.Chunk()
	ep.Bump(geom.Chunk{X: 3, Z: 2}) // another chunk
	if old.Stale() {
		t.Fatal("a change of another chunk made the reservation stale")
	}
	ep.Bump(pos)
	if !old.Stale() {
		t.Fatal("the reservation is not stale after its chunk changed")
	}
	if _, ok := s.Peek(pos); ok {
		t.Fatal("Peek returns a stale copy")
	}
	fresh, err := s.Reserve(ctx, pos)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Stale() || fresh.Chunk() == oldChunk || src.callsAt(pos) != 2 {
		t.Fatalf("Reserve after a change: stale %v, same copy %v, %d loads; want a fresh load",
			fresh.Stale(), fresh.Chunk() == oldChunk, src.callsAt(pos))
	}
	if old.Chunk() != oldChunk {
		t.Fatal("the stale reservation lost its chunk")
	}
	checkInvariants(t, s)
	st := s.Stats()
	if st.Stale != 1 || st.Retired != 1 || st.Resident != 2 || st.Reserved != 2 {
		t.Fatalf("with a retired copy: %+v", st)
	}
	old.Close()
	checkInvariants(t, s)
	if st := s.Stats(); st.Retired != 0 || st.Resident != 1 || st.Reserved != 1 {
		t.Fatalf("after the retired copy closed: %+v", st)
	}
	if c, ok := s.Peek(pos); !ok || c != fresh.Chunk() {
		t.Fatal("closing the retired copy disturbed the fresh one")
	}
	fresh.Close()

	// An unreserved stale copy is dropped, not retired.
	ep.Bump(pos)
	r, err := s.Reserve(ctx, pos)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkInvariants(t, s)
	if st := s.Stats(); st.Stale != 2 || st.Retired != 0 || st.Resident != 1 || src.callsAt(pos) != 3 {
		t.Fatalf("after an unreserved copy went stale: %+v, %d loads", st, src.callsAt(pos))
	}
}

// TestReserveChangedWhileLoading bumps the chunk while its load runs: the
// waiter must not get the copy read before the change.
func TestReserveChangedWhileLoading(t *testing.T) {
	defer goleak.VerifyNone(t)
	ep := NewEpochs()
	pos := geom.Chunk{X: 1, Z: 1}
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	var mu sync.Mutex
	loads := 0
	src := sourceFunc(func(ctx context.Context, p geom.Chunk) (*Chunk, error) {
		mu.Lock()
		loads++
		first := loads == 1
		mu.Unlock()
		if first {
			started <- struct{}{}
			<-release
		}
		return &Chunk{Pos: p}, nil
	})
	s := NewResident(src, ResidentOptions{Epochs: ep})
	defer s.Close()
	type result struct {
		r   *Reservation
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := s.Reserve(context.Background(), pos)
		got <- result{r, err}
	}()
	<-started
	ep.Bump(pos) // the first load read the chunk before this change
	close(release)
	var res result
	select {
	case res = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("Reserve did not return")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	defer res.r.Close()
	mu.Lock()
	n := loads
	mu.Unlock()
	if res.r.Stale() || n != 2 {
		t.Fatalf("Reserve across a change: stale %v after %d loads; want a fresh copy from a second load", res.r.Stale(), n)
	}
	checkInvariants(t, s)
}

func BenchmarkReservationStale(b *testing.B) {
	ep := NewEpochs()
	for x := range int64(4096) { // a populated table
		ep.Bump(geom.Chunk{X: x, Z: x * 3})
	}
	s := NewResident(newFakeSource(), ResidentOptions{Epochs: ep})
	defer s.Close()
	r, err := s.Reserve(context.Background(), geom.Chunk{X: 7, Z: 21})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if r.Stale() {
			b.Fatal("stale")
		}
	}
}
