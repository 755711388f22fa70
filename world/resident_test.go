package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/bubble"
)

// mode is how the fake source answers for one position.
type mode uint8

const (
	modeOK          mode = iota // a fresh chunk
	modeFail                    // an I/O error
	modeUngenerated             // ErrUngenerated
	modePanic                   // panics
	modeBlock                   // blocks until its ctx ends
	modeNil                     // returns nil, nil
	numModes
)

func (m mode) String() string {
	return [...]string{"ok", "fail", "ungenerated", "panic", "block", "nil"}[m]
}

var errIO = errors.New("disk on fire")

// fakeSource answers by a per-position mode and counts its calls.
type fakeSource struct {
	mu        sync.Mutex // protects the following fields
	modes     map[geom.Chunk]mode
	calls     map[geom.Chunk]int
	cancelled int // blocked loads that saw their ctx end

	gate    chan struct{} // when non-nil, every load waits for it (ignoring ctx)
	blocks  Sizer         // when non-nil, the Blocks of every chunk
	loading atomic.Int32  // Load calls in progress
	maxLoad atomic.Int32  // the most seen at once
}

func newFakeSource() *fakeSource {
	return &fakeSource{modes: map[geom.Chunk]mode{}, calls: map[geom.Chunk]int{}}
}

func (f *fakeSource) set(pos geom.Chunk, m mode) {
	f.mu.Lock()
	f.modes[pos] = m
	f.mu.Unlock()
}

func (f *fakeSource) callsAt(pos geom.Chunk) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[pos]
}

type sizedBlocks int64

func (sizedBlocks) Block(x, y, z int) BlockID { return Air }
func (b sizedBlocks) MemSize() int64          { return int64(b) }

// sizedDerived is a ColumnReader and BlockReader that knows its size, as
// a procedural chunk is both at once.
type sizedDerived int64

func (sizedDerived) Block(x, y, z int) BlockID { return Air }
func (sizedDerived) Column(x, z int) Column    { return Column{} }
func (d sizedDerived) MemSize() int64          { return int64(d) }

// TestChunkMemSize: a chunk counts its head, its stored columns, and
// each Sizer it reads through, a value that is both its block reader and
// its column reader once.
func TestChunkMemSize(t *testing.T) {
	head := int64(unsafe.Sizeof(Chunk{}))
	cols := int64(unsafe.Sizeof([ChunkSize * ChunkSize]Column{}))
	for _, tc := range []struct {
		name string
		c    *Chunk
		want int64
	}{
		{"bare", &Chunk{}, head},
		{"stored", NewChunk(geom.Chunk{}, 0, 256), head + cols},
		{"stored with blocks", func() *Chunk { c := NewChunk(geom.Chunk{}, 0, 256); c.Blocks = sizedBlocks(1000); return c }(), head + cols + 1000},
		{"derived summaries only", &Chunk{Summaries: sizedDerived(300)}, head + 300},
		{"derived, one value for both", func() *Chunk { d := sizedDerived(300); return &Chunk{Blocks: d, Summaries: d} }(), head + 300},
		{"derived, two values", &Chunk{Blocks: sizedBlocks(1000), Summaries: sizedDerived(300)}, head + 1300},
	} {
		if got := tc.c.MemSize(); got != tc.want {
			t.Errorf("%s: MemSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func (f *fakeSource) Load(ctx context.Context, pos geom.Chunk) (*Chunk, error) {
	n := f.loading.Add(1)
	defer f.loading.Add(-1)
	for {
		m := f.maxLoad.Load()
		if n <= m || f.maxLoad.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	m := f.modes[pos]
	f.calls[pos]++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	switch m {
	case modeFail:
		return nil, errIO
	case modeUngenerated:
		return nil, fmt.Errorf("region file: %w", ErrUngenerated)
	case modePanic:
		panic("corrupt palette")
	case modeBlock:
		<-ctx.Done()
		f.mu.Lock()
		f.cancelled++
		f.mu.Unlock()
		return nil, ctx.Err()
	case modeNil:
		return nil, nil
	}
	c := &Chunk{Pos: pos, MinY: -64, MaxY: 320}
	if f.blocks != nil {
		c.Blocks = f.blocks.(BlockReader)
	}
	return c, nil
}

// checkInvariants verifies the store's internal structure.
func checkInvariants(t *testing.T, s *Resident) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var resident, reserved, loading int
	var bytes int64
	for pos, e := range s.entries {
		if e.pos != pos {
			t.Fatalf("entry at %v has pos %v", pos, e.pos)
		}
		if e.chunk == nil {
			if e.load == nil || e.refs != 0 || e.next != nil {
				t.Fatalf("loading entry %v: load %v refs %d listed %v", pos, e.load != nil, e.refs, e.next != nil)
			}
			loading++
			continue
		}
		resident++
		bytes += e.size
		if e.refs < 0 {
			t.Fatalf("entry %v has %d refs", pos, e.refs)
		}
		if e.refs > 0 {
			reserved++
			if e.next != nil {
				t.Fatalf("reserved entry %v is in the LRU list", pos)
			}
		} else if e.next == nil {
			t.Fatalf("unreserved entry %v is not in the LRU list", pos)
		}
	}
	for e := range s.retired {
		if !e.retired || e.chunk == nil || e.refs <= 0 || e.next != nil || s.entries[e.pos] == e {
			t.Fatalf("retired entry %v: retired %v refs %d listed %v mapped %v",
				e.pos, e.retired, e.refs, e.next != nil, s.entries[e.pos] == e)
		}
		resident++
		reserved++
		bytes += e.size
	}
	listed := 0
	for e := s.lru.next; e != &s.lru; e = e.next {
		listed++
		if s.entries[e.pos] != e {
			t.Fatalf("LRU list holds a forgotten entry %v", e.pos)
		}
	}
	if listed != resident-reserved {
		t.Fatalf("LRU list holds %d entries, want %d unreserved", listed, resident-reserved)
	}
	if resident != s.resident || reserved != s.reserved || bytes != s.bytes {
		t.Fatalf("gauges resident %d reserved %d bytes %d, counted %d %d %d",
			s.resident, s.reserved, s.bytes, resident, reserved, bytes)
	}
	if loading > s.loading {
		t.Fatalf("%d loading entries, gauge says %d", loading, s.loading)
	}
	open := 0
	perEntry := map[*entry]int{}
	for lifespan, head := range s.open {
		if head.next == head {
			t.Fatalf("the list of lifespan %v is empty but kept", lifespan)
		}
		var last time.Time
		for r := head.next; r != head; r = r.next {
			open++
			// r.closed may already be set: Close marks it before taking
			// the lock to unlink it.
			perEntry[r.e]++
			if r.lifespan != lifespan {
				t.Fatalf("a reservation of lifespan %v in the list of %v", r.lifespan, lifespan)
			}
			if r.opened.Before(last.Add(-time.Second)) {
				t.Fatalf("the list of lifespan %v is out of order: opened %v after %v", lifespan, r.opened, last)
			}
			last = r.opened
		}
	}
	if uint64(open) != s.opened-s.nclosed {
		t.Fatalf("open list holds %d, opened %d - closed %d", open, s.opened, s.nclosed)
	}
	for e, n := range perEntry {
		if _, retired := s.retired[e]; e.refs < n || (s.entries[e.pos] != e && !retired) {
			t.Fatalf("entry %v: %d open reservations, %d refs, mapped %v", e.pos, n, e.refs, s.entries[e.pos] == e)
		}
	}
	// The budget: over it only when nothing unreserved is left to evict.
	if s.overBudgetLocked() && listed > 0 {
		t.Fatalf("over budget (%d chunks, %d bytes) with %d evictable chunks", s.resident, s.bytes, listed)
	}
}

func quietLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// modelRes is a reservation the model test holds.
type modelRes struct {
	r        *Reservation
	pos      geom.Chunk
	chunk    *Chunk
	epoch    uint32 // the copy's epoch
	deadline time.Time
	closed   bool
}

// TestResidentModel runs random operation sequences against the store and
// a naive model (a recency-ordered slice of resident positions with
// reference counts), comparing them after every step. The source fails,
// reports ungenerated chunks, panics, blocks and returns nothing, each at
// some positions; time is fake so lifespans and timeouts are exact. Chunks
// change at the source (Epochs.Bump) at random: a stale copy is never
// handed out, and one still reserved is retired until its reservations
// close.
func TestResidentModel(t *testing.T) {
	forEachLoadMode(t, func(t *testing.T, onCaller bool) {
		var forced, evicted, failed, retired uint64
		for seed := range uint64(40) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f, e, l, st := runModel(t, seed, onCaller)
					forced, evicted, failed, retired = forced+f, evicted+e, failed+l, retired+st
				})
			})
		}
		// The sequences must reach the paths they are meant to test.
		if forced == 0 || evicted == 0 || failed == 0 || retired == 0 {
			t.Fatalf("sequences force-closed %d, evicted %d, failed %d loads, retired %d stale copies; want some of each",
				forced, evicted, failed, retired)
		}
	})
}

// forEachLoadMode runs f for both places a load runs: a loader goroutine
// of the store, and the caller's own (ResidentOptions.LoadOnCaller).
func forEachLoadMode(t *testing.T, f func(t *testing.T, onCaller bool)) {
	t.Run("loader", func(t *testing.T) { f(t, false) })
	t.Run("caller", func(t *testing.T) { f(t, true) })
}

// runModel runs one sequence and returns how many reservations the
// watchdog closed, chunks were evicted and loads failed.
func runModel(t *testing.T, seed uint64, onCaller bool) (forcedN, evictedN, failedN, retiredN uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const (
		npos     = 10
		budget   = 3
		lifespan = 20 * time.Second
		interval = time.Second
	)
	src := newFakeSource()
	positions := make([]geom.Chunk, npos)
	modes := make([]mode, npos)
	for i := range positions {
		positions[i] = geom.Chunk{X: int64(i) - 3, Z: int64(i * 7)}
		if i >= 5 { // half the positions misbehave in some way
			modes[i] = mode(1 + rng.IntN(int(numModes)-1))
		}
		src.set(positions[i], modes[i])
	}
	var logs syncBuffer
	start := time.Now()
	epochs := NewEpochs()
	s := NewResident(src, ResidentOptions{
		MaxChunks: budget, Lifespan: lifespan, WatchdogInterval: interval,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Epochs: epochs,
		LoadOnCaller: onCaller,
	})

	// The model.
	var (
		recency  []geom.Chunk // unreserved resident chunks, most recent first
		refs     = map[geom.Chunk]int{}
		resident = map[geom.Chunk]*Chunk{}
		held     []*modelRes
		opened   uint64
		nclosed  uint64
		forced   uint64
		evicted  uint64
		epoch    = map[geom.Chunk]uint32{} // the source's epochs
		loadedAt = map[geom.Chunk]uint32{} // the epoch of each resident copy
		retired  = map[*Chunk]int{}        // retired copies and their references
		staleN   uint64
	)
	fresh := func(p geom.Chunk) bool { return loadedAt[p] == epoch[p] }
	removeRecency := func(p geom.Chunk) {
		for i, q := range recency {
			if q == p {
				recency = append(recency[:i], recency[i+1:]...)
				return
			}
		}
	}
	evict := func() {
		for len(resident)+len(retired) > budget && len(recency) > 0 {
			p := recency[len(recency)-1]
			recency = recency[:len(recency)-1]
			delete(resident, p)
			evicted++
		}
	}
	release := func(h *modelRes) {
		h.closed = true
		nclosed++
		if n, ok := retired[h.chunk]; ok {
			if n == 1 {
				delete(retired, h.chunk)
			} else {
				retired[h.chunk] = n - 1
			}
			return
		}
		refs[h.pos]--
		if refs[h.pos] == 0 {
			recency = append([]geom.Chunk{h.pos}, recency...)
			evict()
		}
	}
	// expire closes, in the model, what the watchdog closed by now: every
	// tick at start + k*interval closes reservations due at or before it.
	// Ties are closed in the order they were opened, as the store does.
	expire := func() {
		lastTick := start.Add(time.Since(start) / interval * interval)
		for _, h := range held {
			if !h.closed && !h.deadline.After(lastTick) {
				release(h)
				forced++
			}
		}
	}

	for step := range 300 {
		op := rng.IntN(11)
		switch {
		case op < 5: // Reserve
			i := rng.IntN(npos)
			pos := positions[i]
			timeout := time.Duration(1+rng.IntN(3)) * 700 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			r, err := s.Reserve(ctx, pos)
			cancel()
			synctest.Wait()
			if c, ok := resident[pos]; ok && !fresh(pos) {
				staleN++
				if refs[pos] == 0 {
					removeRecency(pos)
				} else {
					retired[c] = refs[pos]
					retiredN++
				}
				delete(resident, pos)
				delete(refs, pos)
			}
			m := modes[i]
			if _, ok := resident[pos]; ok {
				m = modeOK // a hit
			}
			switch m {
			case modeOK:
				if err != nil {
					t.Fatalf("step %d: Reserve(%v) = %v, want a reservation", step, pos, err)
				}
				c := r.Chunk()
				if c == nil || c.Pos != pos {
					t.Fatalf("step %d: Reserve(%v).Chunk() = %v", step, pos, c)
				}
				if old, ok := resident[pos]; ok && old != c {
					t.Fatalf("step %d: a hit on %v returned another chunk", step, pos)
				}
				if _, ok := resident[pos]; !ok {
					resident[pos] = c
					refs[pos] = 0
					loadedAt[pos] = epoch[pos]
				}
				if refs[pos] == 0 {
					removeRecency(pos)
				}
				refs[pos]++
				opened++
				if r.Stale() {
					t.Fatalf("step %d: Reserve(%v) handed out a stale copy", step, pos)
				}
				held = append(held, &modelRes{r: r, pos: pos, chunk: c, epoch: epoch[pos], deadline: r.opened.Add(lifespan)})
				evict()
			case modeFail, modeUngenerated, modePanic, modeNil:
				want := map[mode]error{modeFail: errIO, modeUngenerated: ErrUngenerated, modePanic: ErrSourcePanic, modeNil: ErrNoChunk}[m]
				var pe *PosError
				if r != nil || !errors.Is(err, want) || !errors.As(err, &pe) || pe.Pos != pos {
					t.Fatalf("step %d: Reserve(%v) [%v] = %v, %v; want a *PosError wrapping %v", step, pos, m, r, err, want)
				}
			case modeBlock:
				if r != nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("step %d: Reserve(%v) [block] = %v, %v; want DeadlineExceeded", step, pos, r, err)
				}
			}
		case op < 8: // Close a held reservation, sometimes twice
			if len(held) == 0 {
				continue
			}
			h := held[rng.IntN(len(held))]
			if err := h.r.Close(); err != nil {
				t.Fatalf("step %d: Close() = %v", step, err)
			}
			if !h.closed {
				release(h)
			}
			if rng.IntN(3) == 0 {
				_ = h.r.Close()
			}
		case op < 9: // Peek every position
			for _, pos := range positions {
				c, ok := s.Peek(pos)
				want, wantOK := resident[pos]
				if !fresh(pos) {
					want, wantOK = nil, false
				}
				if ok != wantOK || c != want {
					t.Fatalf("step %d: Peek(%v) = %p, %v; want %p, %v", step, pos, c, ok, want, wantOK)
				}
			}
		case op < 10: // a chunk changes at the source
			pos := positions[rng.IntN(npos)]
			epochs.Bump(pos)
			epoch[pos]++
		default: // let time pass
			bubble.Advance(time.Duration(1+rng.IntN(8)) * time.Second)
		}
		expire()
		checkInvariants(t, s)
		st := s.Stats()
		if st.Opened != opened || st.Closed != nclosed || st.Forced != forced || st.Evictions != evicted ||
			st.Resident != len(resident)+len(retired) || st.Retired != len(retired) || st.Stale != staleN || st.Loading != 0 {
			t.Fatalf("step %d: stats %+v; model opened %d closed %d forced %d evicted %d resident %d retired %d stale %d",
				step, st, opened, nclosed, forced, evicted, len(resident), len(retired), staleN)
		}
		for _, h := range held {
			if h.r.Closed() != h.closed {
				t.Fatalf("step %d: reservation on %v Closed() = %v, model %v", step, h.pos, h.r.Closed(), h.closed)
			}
			if got, want := h.r.Stale(), h.epoch != epoch[h.pos]; got != want {
				t.Fatalf("step %d: reservation on %v Stale() = %v, want %v", step, h.pos, got, want)
			}
			switch {
			case h.closed:
				if h.r.Chunk() != nil {
					t.Fatalf("step %d: closed reservation still returns its chunk", step)
				}
			case h.r.Chunk() != h.chunk:
				t.Fatalf("step %d: open reservation on %v lost its chunk", step, h.pos)
			case resident[h.pos] == h.chunk && fresh(h.pos):
				// A reserved chunk is never evicted.
				if c, ok := s.Peek(h.pos); !ok || c != h.chunk {
					t.Fatalf("step %d: reserved chunk %v evicted", step, h.pos)
				}
			}
		}
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range held {
		if !h.closed {
			h.closed = true
			nclosed++
		}
		if !h.r.Closed() {
			t.Fatalf("reservation on %v open after shutdown", h.pos)
		}
	}
	st := s.Stats()
	if st.Opened != st.Closed || st.Open != 0 || st.Closed != nclosed || st.Resident != 0 || st.Reserved != 0 || st.Bytes != 0 {
		t.Fatalf("after shutdown: %+v (model closed %d)", st, nclosed)
	}
	if forced > 0 && !strings.Contains(logs.String(), "outlived its lifespan") {
		t.Fatalf("forced closes were not logged:\n%s", logs.String())
	}
	return forced, evicted, st.LoadErrors, retiredN
}

// TestResidentConcurrent hammers the store from several goroutines with a
// misbehaving source, checking the invariants as it goes, then checks that
// opened == closed and no goroutine is left.
func TestResidentConcurrent(t *testing.T) {
	forEachLoadMode(t, testResidentConcurrent)
}

func testResidentConcurrent(t *testing.T, onCaller bool) {
	defer goleak.VerifyNone(t)
	src := newFakeSource()
	const npos = 24
	positions := make([]geom.Chunk, npos)
	for i := range positions {
		positions[i] = geom.Chunk{X: int64(i % 5), Z: int64(i / 5)}
		switch {
		case i%8 == 5:
			src.set(positions[i], modeFail)
		case i%8 == 6:
			src.set(positions[i], modeBlock)
		case i%8 == 7:
			src.set(positions[i], mode(2+(i/8)%2)) // ungenerated or panic
		}
	}
	var logs syncBuffer
	s := NewResident(src, ResidentOptions{
		MaxChunks: 6, Lifespan: 30 * time.Millisecond, WatchdogInterval: 5 * time.Millisecond,
		LoadConcurrency: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		LoadOnCaller: onCaller,
	})

	workers, iters := 6, 400
	if testing.Short() {
		iters = 100
	}
	var wg sync.WaitGroup
	var evictedReserved atomic.Int32
	stop := make(chan struct{})
	checkerDone := make(chan struct{})
	go func() {
		defer close(checkerDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				checkInvariants(t, s)
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var held []*Reservation
			for range iters {
				switch rng.IntN(4) {
				case 0, 1:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3))*time.Millisecond)
					r, err := s.Reserve(ctx, positions[rng.IntN(npos)])
					cancel()
					if err == nil {
						held = append(held, r)
					}
				case 2:
					if len(held) > 0 {
						i := rng.IntN(len(held))
						r := held[i]
						if c := r.Chunk(); c != nil {
							if p, ok := s.Peek(r.Pos()); !r.Closed() && (!ok || p != c) {
								evictedReserved.Add(1)
							}
						}
						r.Close()
						r.Close()
						held = append(held[:i], held[i+1:]...)
					}
				case 3:
					s.Peek(positions[rng.IntN(npos)])
				}
			}
			for _, r := range held[:len(held)/2] {
				r.Close()
			}
			// The other half is left for the shutdown to close.
		}()
	}
	wg.Wait()
	close(stop)
	<-checkerDone
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Opened == 0 || st.Opened != st.Closed || st.Open != 0 || st.Resident != 0 || st.Loading != 0 {
		t.Fatalf("after shutdown: %+v", st)
	}
	if n := evictedReserved.Load(); n > 0 {
		t.Fatalf("%d reserved chunks were evicted", n)
	}
	if m := src.maxLoad.Load(); m > 3 {
		t.Fatalf("%d loads ran at once, want at most LoadConcurrency 3", m)
	}
	t.Logf("stats: %+v", st)
}

func TestResidentSingleFlight(t *testing.T) {
	forEachLoadMode(t, testResidentSingleFlight)
}

func testResidentSingleFlight(t *testing.T, onCaller bool) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.gate = make(chan struct{})
		s := NewResident(src, ResidentOptions{LoadOnCaller: onCaller})
		defer s.Close()
		pos := geom.Chunk{X: 1, Z: 2}
		const n = 10
		got := make([]*Reservation, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, err := s.Reserve(context.Background(), pos)
				if err != nil {
					t.Errorf("Reserve: %v", err)
				}
				got[i] = r
			})
		}
		synctest.Wait()
		if c := src.callsAt(pos); c != 1 {
			t.Fatalf("%d concurrent reservations made %d loads, want 1", n, c)
		}
		if st := s.Stats(); st.Loading != 1 || st.Misses != n || st.Opened != 0 {
			t.Fatalf("while loading: %+v", st)
		}
		close(src.gate)
		wg.Wait()
		for i, r := range got {
			if r.Chunk() != got[0].Chunk() {
				t.Fatalf("reservation %d holds another chunk", i)
			}
		}
		if st := s.Stats(); st.Loads != 1 || st.Opened != n || st.Open != n || st.Resident != 1 {
			t.Fatalf("after the load: %+v", st)
		}
		// Closing all but one keeps the chunk; a hit loads nothing.
		for _, r := range got[1:] {
			r.Close()
		}
		r, err := s.Reserve(context.Background(), pos)
		if err != nil || r.Chunk() != got[0].Chunk() || src.callsAt(pos) != 1 {
			t.Fatalf("hit: %v, %v, %d loads", r, err, src.callsAt(pos))
		}
		if st := s.Stats(); st.Hits != 1 {
			t.Fatalf("hits = %d, want 1", st.Hits)
		}
	})
}

// TestResidentAbandonedLoad: when every caller leaves, the load is
// cancelled and forgotten; the next Reserve starts a new one.
func TestResidentAbandonedLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		pos := geom.Chunk{X: 9}
		src.set(pos, modeBlock)
		s := NewResident(src, ResidentOptions{})
		defer s.Close()

		ctx1, cancel1 := context.WithTimeout(context.Background(), time.Second)
		defer cancel1()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel2()
		var wg sync.WaitGroup
		var err1, err2 error
		wg.Go(func() { _, err1 = s.Reserve(ctx1, pos) })
		wg.Go(func() { _, err2 = s.Reserve(ctx2, pos) })
		bubble.Advance(1500 * time.Millisecond)
		// One caller left; the other still waits, so the load goes on.
		if !errors.Is(err1, context.DeadlineExceeded) {
			t.Fatalf("first Reserve = %v, want DeadlineExceeded", err1)
		}
		src.mu.Lock()
		cancelled := src.cancelled
		src.mu.Unlock()
		if cancelled != 0 || s.Stats().Loading != 1 {
			t.Fatalf("the load was cancelled while a caller still waited")
		}
		wg.Wait()
		synctest.Wait()
		if !errors.Is(err2, context.DeadlineExceeded) {
			t.Fatalf("second Reserve = %v, want DeadlineExceeded", err2)
		}
		checkAbandoned(t, s, src, pos)
	})
}

// checkAbandoned checks that the one load of pos, blocked in src until
// every caller left, was cancelled and forgotten: nothing is resident or
// open, and the next Reserve starts a new load.
func checkAbandoned(t *testing.T, s *Resident, src *fakeSource, pos geom.Chunk) {
	t.Helper()
	src.mu.Lock()
	cancelled := src.cancelled
	src.mu.Unlock()
	if cancelled != 1 {
		t.Fatal("the abandoned load was not cancelled")
	}
	if st := s.Stats(); st.Loading != 0 || st.Resident != 0 || st.Loads != 1 || st.LoadErrors != 1 || st.Open != 0 {
		t.Fatalf("after abandoning: %+v", st)
	}
	src.set(pos, modeOK)
	r, err := s.Reserve(context.Background(), pos)
	if err != nil || src.callsAt(pos) != 2 {
		t.Fatalf("Reserve after abandon = %v, %v with %d loads; want a new load", r, err, src.callsAt(pos))
	}
	r.Close()
	checkInvariants(t, s)
}

func TestResidentCloseIdempotent(t *testing.T) {
	src := newFakeSource()
	s := NewResident(src, ResidentOptions{})
	defer s.Close()
	r, err := s.Reserve(context.Background(), geom.Chunk{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Closed() || r.Chunk() == nil {
		t.Fatal("new reservation is closed")
	}
	for range 3 {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Opened != 1 || st.Closed != 1 || st.Open != 0 || st.Reserved != 0 || st.Resident != 1 {
		t.Fatalf("after three Close calls: %+v", st)
	}
	if !r.Closed() || r.Chunk() != nil {
		t.Fatal("closed reservation still gives its chunk")
	}
	var nilRes *Reservation
	if !nilRes.Closed() || nilRes.Chunk() != nil || nilRes.Close() != nil || nilRes.Age() != 0 {
		t.Fatal("nil reservation is not a closed one")
	}
}

func TestResidentWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		src := newFakeSource()
		s := NewResident(src, ResidentOptions{
			Lifespan: 5 * time.Second, WatchdogInterval: time.Second, Logger: quietLogger(&logs),
		})
		short, err := s.Reserve(context.Background(), geom.Chunk{X: 1})
		if err != nil {
			t.Fatal(err)
		}
		long, err := s.ReserveFor(context.Background(), geom.Chunk{X: 1}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		forever, err := s.ReserveFor(context.Background(), geom.Chunk{X: 2}, 0)
		if err != nil {
			t.Fatal(err)
		}
		bubble.Advance(4 * time.Second)
		if short.Closed() || short.Age() != 4*time.Second {
			t.Fatalf("closed early (age %v)", short.Age())
		}
		bubble.Advance(time.Second)
		if !short.Closed() || long.Closed() || forever.Closed() {
			t.Fatalf("after 5 s: short %v long %v forever %v; want only short closed",
				short.Closed(), long.Closed(), forever.Closed())
		}
		if !strings.Contains(logs.String(), "outlived its lifespan") || !strings.Contains(logs.String(), "chunk(1, 0)") {
			t.Fatalf("force close not logged with its position: %q", logs.String())
		}
		short.Close() // the owner's late Close is a no-op
		if st := s.Stats(); st.Forced != 1 || st.Closed != 1 || st.Open != 2 {
			t.Fatalf("stats: %+v", st)
		}
		bubble.Advance(2 * time.Hour)
		if !long.Closed() || forever.Closed() {
			t.Fatalf("after 2 h: long %v forever %v", long.Closed(), forever.Closed())
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !forever.Closed() {
			t.Fatal("shutdown left a reservation open")
		}
		if st := s.Stats(); st.Forced != 2 || st.Closed != 3 || st.Opened != 3 {
			t.Fatalf("final stats: %+v", st)
		}
	})
}

// TestResidentWatchdogOrder: reservations of one lifespan opened at
// different times are force-closed each at its own deadline, the later
// ones left open (the sweep stops at the first live reservation of a
// list, which must therefore be the oldest).
func TestResidentWatchdogOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		s := NewResident(newFakeSource(), ResidentOptions{
			Lifespan: 5 * time.Second, WatchdogInterval: time.Second, Logger: quietLogger(&logs),
		})
		var rs []*Reservation
		for i := range 3 {
			r, err := s.Reserve(context.Background(), geom.Chunk{X: int64(i)})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
			bubble.Advance(2 * time.Second) // opened at 0, 2 and 4 s
		}
		// At 6 s only the first is due (5 s); at 8 s the second (7 s).
		synctest.Wait()
		if !rs[0].Closed() || rs[1].Closed() || rs[2].Closed() {
			t.Fatalf("at 6 s: closed %v %v %v, want only the first", rs[0].Closed(), rs[1].Closed(), rs[2].Closed())
		}
		bubble.Advance(2 * time.Second)
		if !rs[1].Closed() || rs[2].Closed() {
			t.Fatalf("at 8 s: second closed %v, third %v; want the second only", rs[1].Closed(), rs[2].Closed())
		}
		bubble.Advance(2 * time.Second)
		if !rs[2].Closed() {
			t.Fatal("at 10 s the third (due at 9 s) is still open")
		}
		if st := s.Stats(); st.Forced != 3 || st.Open != 0 {
			t.Fatalf("stats %+v, want 3 forced and none open", st)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestResidentNoLifespan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewResident(newFakeSource(), ResidentOptions{Lifespan: -1, WatchdogInterval: time.Minute})
		r, err := s.Reserve(context.Background(), geom.Chunk{})
		if err != nil {
			t.Fatal(err)
		}
		bubble.Advance(100 * time.Hour)
		if r.Closed() {
			t.Fatal("a reservation with no lifespan was force-closed")
		}
		s.Close()
		if !r.Closed() {
			t.Fatal("shutdown left it open")
		}
	})
}

func TestResidentShutdown(t *testing.T) {
	forEachLoadMode(t, testResidentShutdown)
}

func testResidentShutdown(t *testing.T, onCaller bool) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		blocked := geom.Chunk{X: 5}
		src.set(blocked, modeBlock)
		s := NewResident(src, ResidentOptions{LoadOnCaller: onCaller})
		held, err := s.Reserve(context.Background(), geom.Chunk{})
		if err != nil {
			t.Fatal(err)
		}
		var waitErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, waitErr = s.Reserve(context.Background(), blocked) })
		synctest.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if !errors.Is(waitErr, ErrClosed) {
			t.Fatalf("a Reserve waiting during shutdown got %v, want ErrClosed", waitErr)
		}
		if !held.Closed() {
			t.Fatal("shutdown left a reservation open")
		}
		held.Close()
		if _, err := s.Reserve(context.Background(), geom.Chunk{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Reserve after shutdown = %v, want ErrClosed", err)
		}
		if _, ok := s.Peek(geom.Chunk{}); ok {
			t.Fatal("Peek after shutdown found a chunk")
		}
		if err := s.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
		if st := s.Stats(); st.Opened != 1 || st.Closed != 1 || st.Resident != 0 || st.Loading != 0 {
			t.Fatalf("after shutdown: %+v", st)
		}
	})
}

// TestResidentShutdownDeadline: a source that ignores cancellation makes
// Shutdown wait only until its ctx ends; the loader finishes later.
func TestResidentShutdownDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		src.gate = make(chan struct{})
		s := NewResident(src, ResidentOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		go s.Reserve(ctx, geom.Chunk{})
		synctest.Wait()
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		if err := s.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown with a stuck source = %v, want DeadlineExceeded", err)
		}
		close(src.gate)
		cancel()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Opened != 0 || st.Resident != 0 || st.Loading != 0 {
			t.Fatalf("after shutdown: %+v", st)
		}
	})
}

// TestResidentLoadRacesCancel: a waiter whose ctx ends just as its load
// finishes either gets the reservation or an error, and leaks no
// reference either way.
func TestResidentLoadRacesCancel(t *testing.T) {
	forEachLoadMode(t, testResidentLoadRacesCancel)
}

func testResidentLoadRacesCancel(t *testing.T, onCaller bool) {
	var got, lost int
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.gate = make(chan struct{})
			s := NewResident(src, ResidentOptions{LoadOnCaller: onCaller})
			ctx, cancel := context.WithCancel(context.Background())
			var r *Reservation
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				r, err = s.Reserve(ctx, geom.Chunk{})
			}()
			synctest.Wait()
			close(src.gate)
			cancel()
			<-done
			synctest.Wait()
			checkInvariants(t, s)
			st := s.Stats()
			if err == nil {
				got++
				if st.Open != 1 || st.Reserved != 1 {
					t.Fatalf("got a reservation but stats say %+v", st)
				}
				r.Close()
			} else {
				lost++
				if st.Open != 0 || st.Reserved != 0 {
					t.Fatalf("Reserve failed (%v) but stats say %+v", err, st)
				}
			}
			if st := s.Stats(); st.Reserved != 0 || st.Open != 0 {
				t.Fatalf("leaked a reference: %+v", st)
			}
			s.Close()
		})
	}
	t.Logf("reserved %d times, cancelled %d times", got, lost)
}

func TestResidentLoadBudgetBytes(t *testing.T) {
	src := newFakeSource()
	src.blocks = sizedBlocks(100_000)
	per := (&Chunk{Blocks: sizedBlocks(100_000)}).MemSize()
	if per <= 100_000 {
		t.Fatalf("MemSize = %d, want more than the blocks' 100000", per)
	}
	s := NewResident(src, ResidentOptions{MaxChunks: -1, MaxBytes: 3*per + per/2})
	defer s.Close()
	var held []*Reservation
	for i := range 5 {
		r, err := s.Reserve(context.Background(), geom.Chunk{X: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	// Five reserved chunks exceed the byte budget: nothing may be evicted.
	if st := s.Stats(); st.Resident != 5 || st.Evictions != 0 || st.Bytes != 5*per {
		t.Fatalf("all reserved: %+v", st)
	}
	// Release in order 0..4: each release beyond the budget evicts the
	// least recently released chunk.
	for _, r := range held {
		r.Close()
	}
	st := s.Stats()
	if st.Resident != 3 || st.Evictions != 2 || st.Bytes != 3*per {
		t.Fatalf("all released: %+v", st)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := s.Peek(geom.Chunk{X: int64(i)}); ok != want {
			t.Errorf("Peek(chunk %d) resident = %v, want %v", i, ok, want)
		}
	}
}

func TestResidentPeekKeepsRecency(t *testing.T) {
	s := NewResident(newFakeSource(), ResidentOptions{MaxChunks: 2})
	defer s.Close()
	reserveClose := func(x int64) {
		t.Helper()
		r, err := s.Reserve(context.Background(), geom.Chunk{X: x})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	reserveClose(1)
	reserveClose(2)
	// Peek at 1 (the oldest): it must stay the eviction victim.
	if _, ok := s.Peek(geom.Chunk{X: 1}); !ok {
		t.Fatal("chunk 1 not resident")
	}
	reserveClose(3)
	if _, ok := s.Peek(geom.Chunk{X: 1}); ok {
		t.Fatal("Peek changed recency: chunk 1 survived")
	}
	// Reserve does change recency: touch 2, then 4 evicts 3.
	reserveClose(2)
	reserveClose(4)
	if _, ok := s.Peek(geom.Chunk{X: 2}); !ok {
		t.Fatal("a reservation did not refresh chunk 2")
	}
	if _, ok := s.Peek(geom.Chunk{X: 3}); ok {
		t.Fatal("chunk 3 should have been evicted")
	}
}

func TestResidentAge(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := NewResident(newFakeSource(), ResidentOptions{Clock: clock})
	defer s.Close()
	r, err := s.Reserve(context.Background(), geom.Chunk{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(90 * time.Second)
	mu.Unlock()
	if got := r.Age(); got != 90*time.Second {
		t.Fatalf("Age() = %v, want 1m30s", got)
	}
	if r.Pos() != (geom.Chunk{}) {
		t.Fatalf("Pos() = %v", r.Pos())
	}
}

func TestResidentWrongChunk(t *testing.T) {
	s := NewResident(sourceFunc(func(ctx context.Context, pos geom.Chunk) (*Chunk, error) {
		return &Chunk{Pos: geom.Chunk{X: pos.X + 1}}, nil
	}), ResidentOptions{})
	defer s.Close()
	if _, err := s.Reserve(context.Background(), geom.Chunk{}); !errors.Is(err, ErrNoChunk) {
		t.Fatalf("Reserve with a source answering another position = %v, want ErrNoChunk", err)
	}
	if st := s.Stats(); st.Resident != 0 || st.LoadErrors != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestResidentCancelledBeforeMiss(t *testing.T) {
	src := newFakeSource()
	s := NewResident(src, ResidentOptions{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Reserve(ctx, geom.Chunk{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve with a dead ctx = %v", err)
	}
	if src.callsAt(geom.Chunk{}) != 0 {
		t.Fatal("a dead ctx started a load")
	}
}

type sourceFunc func(ctx context.Context, pos geom.Chunk) (*Chunk, error)

func (f sourceFunc) Load(ctx context.Context, pos geom.Chunk) (*Chunk, error) { return f(ctx, pos) }

func TestReserveHitAllocs(t *testing.T) {
	s := NewResident(newFakeSource(), ResidentOptions{})
	defer s.Close()
	ctx := context.Background()
	r, err := s.Reserve(ctx, geom.Chunk{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	allocs := testing.AllocsPerRun(1000, func() {
		r, _ := s.Reserve(ctx, geom.Chunk{})
		r.Close()
	})
	if allocs > 1 {
		t.Fatalf("a reservation on a resident chunk allocates %v times, want at most 1", allocs)
	}
}

func BenchmarkReserveHit(b *testing.B) {
	s := NewResident(newFakeSource(), ResidentOptions{})
	defer s.Close()
	ctx := context.Background()
	pos := geom.Chunk{X: 3, Z: -4}
	keep, err := s.Reserve(ctx, pos)
	if err != nil {
		b.Fatal(err)
	}
	defer keep.Close()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := s.Reserve(ctx, pos)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, err := s.Reserve(ctx, pos)
				if err != nil {
					b.Error(err)
					return
				}
				r.Close()
			}
		})
	})
}

// TestResidentLoadOnCaller: with LoadOnCaller the caller that misses runs
// the load on its own goroutine (without it, a loader goroutine does), and
// a caller whose ctx ends during its own load leaves it as any waiter:
// the load goes on for the others, and is cancelled when the last leaves.
func TestResidentLoadOnCaller(t *testing.T) {
	onStack := func(onCaller bool) bool {
		var here bool
		src := sourceFunc(func(_ context.Context, pos geom.Chunk) (*Chunk, error) {
			buf := make([]byte, 64<<10)
			here = strings.Contains(string(buf[:runtime.Stack(buf, false)]), "world.(*Resident).reserveOnce")
			return &Chunk{Pos: pos}, nil
		})
		s := NewResident(src, ResidentOptions{LoadOnCaller: onCaller})
		defer s.Close()
		r, err := s.Reserve(context.Background(), geom.Chunk{X: 1})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		return here
	}
	if !onStack(true) {
		t.Error("LoadOnCaller: the load ran off the caller's goroutine")
	}
	if onStack(false) {
		t.Error("without LoadOnCaller: the load ran on the caller's goroutine")
	}

	t.Run("owner leaves first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			pos := geom.Chunk{X: 9}
			src.set(pos, modeBlock)
			s := NewResident(src, ResidentOptions{LoadOnCaller: true})
			defer s.Close()
			ctx1, cancel1 := context.WithTimeout(context.Background(), time.Second)
			defer cancel1()
			ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel2()
			var err1, err2 error
			done1 := make(chan struct{})
			go func() { defer close(done1); _, err1 = s.Reserve(ctx1, pos) }()
			synctest.Wait() // the first caller runs the load
			done2 := make(chan struct{})
			go func() { defer close(done2); _, err2 = s.Reserve(ctx2, pos) }()
			bubble.Advance(1500 * time.Millisecond)
			select {
			case <-done1:
				t.Fatal("the loading caller returned before its Source did")
			default:
			}
			if st := s.Stats(); st.Loading != 1 {
				t.Fatalf("the load ended while a caller still waited: %+v", st)
			}
			<-done1
			<-done2
			if !errors.Is(err1, context.DeadlineExceeded) || !errors.Is(err2, context.DeadlineExceeded) {
				t.Fatalf("Reserve = %v and %v, want DeadlineExceeded for both", err1, err2)
			}
			checkAbandoned(t, s, src, pos)
		})
	})

	t.Run("others keep the load", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := newFakeSource()
			src.gate = make(chan struct{})
			pos := geom.Chunk{Z: 4}
			s := NewResident(src, ResidentOptions{LoadOnCaller: true})
			defer s.Close()
			ctx1, cancel1 := context.WithCancel(context.Background())
			var err1, err2 error
			var r2 *Reservation
			done1 := make(chan struct{})
			go func() { defer close(done1); _, err1 = s.Reserve(ctx1, pos) }()
			synctest.Wait()
			done2 := make(chan struct{})
			go func() { defer close(done2); r2, err2 = s.Reserve(context.Background(), pos) }()
			synctest.Wait()
			cancel1()
			synctest.Wait()
			close(src.gate)
			<-done1
			<-done2
			if !errors.Is(err1, context.Canceled) {
				t.Fatalf("the loading caller whose ctx ended got %v, want Canceled", err1)
			}
			if err2 != nil || r2.Chunk() == nil {
				t.Fatalf("the caller that joined got %v, %v; want the chunk", r2, err2)
			}
			checkInvariants(t, s)
			if st := s.Stats(); st.Open != 1 || st.Reserved != 1 || st.Loads != 1 || st.LoadErrors != 0 {
				t.Fatalf("after the load: %+v", st)
			}
			r2.Close()
			if st := s.Stats(); st.Reserved != 0 || st.Resident != 1 {
				t.Fatalf("after closing: %+v", st)
			}
		})
	})
}
