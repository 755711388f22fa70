package pipeline

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
)

// screenRecorder wraps a ScreenFunc and records the chunks screened.
type screenRecorder struct {
	mu     sync.Mutex
	chunks []geom.Chunk
	next   ScreenFunc
}

func (r *screenRecorder) screen(ctx context.Context, c geom.Chunk) (Screened, error) {
	r.mu.Lock()
	r.chunks = append(r.chunks, c)
	r.mu.Unlock()
	return r.next(ctx, c)
}

func (r *screenRecorder) screened() []geom.Chunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]geom.Chunk(nil), r.chunks...)
}

// drawEnv is a pipeline over flat terrain whose screenings are recorded,
// with a large shape and a distribution; it is run by taking everything
// each cycle, so candidates keep flowing.
func drawEnv(t *testing.T, radius int64, dist geom.Distribution, mem func(shape geom.Shape) *memory.Table) (*env, *screenRecorder) {
	t.Helper()
	rec := &screenRecorder{next: summaryScreen(flat)}
	e := newEnv(t, envConfig{opts: func(o *Options) {
		shape, err := geom.NewSquare(geom.Chunk{}, radius, 0)
		if err != nil {
			t.Fatal(err)
		}
		o.Shape = shape
		if mem != nil {
			o.Memory = mem(shape)
		} else {
			o.Memory, err = memory.New(memory.Options{Shape: shape, World: "overworld"})
			if err != nil {
				t.Fatal(err)
			}
		}
		o.Distribution = dist
		o.Screen = rec.screen
		o.ColdCapacity, o.BacklogCapacity = 256, 128
		o.Budget = Budget{Candidates: 64, Screens: 64, MaxScreens: 64}
	}})
	e.shape, e.mem = e.opts.Shape, e.opts.Memory
	return e, rec
}

// runDraws cycles until at least n chunks were screened, taking every hot
// entry as it comes.
func runDraws(e *env, rec *screenRecorder, n int) []geom.Chunk {
	e.t.Helper()
	for range 200 {
		if len(rec.screened()) >= n {
			break
		}
		e.cycle()
		for _, s := range e.p.singles {
			for {
				h, ok := s.Take()
				if !ok {
					break
				}
				h.Close()
			}
		}
		clearStage[Location](e.p.cold) // keep room for fresh draws
	}
	got := rec.screened()
	if len(got) < n {
		e.t.Fatalf("only %d chunks screened, want %d", len(got), n)
	}
	return got
}

// meanRank is the mean spiral index of chunks, as a fraction of the
// shape's Len.
func meanRank(t *testing.T, shape geom.Shape, chunks []geom.Chunk) float64 {
	t.Helper()
	var sum float64
	for _, c := range chunks {
		i, ok := shape.Index(c)
		if !ok {
			t.Fatalf("screened chunk %v is outside the shape", c)
		}
		sum += float64(i)
	}
	return sum / float64(len(chunks)) / float64(shape.Len())
}

// TestDistribution: the candidates follow Options.Distribution. Over a
// shape of 14,641 chunks and 1,000 draws, the mean spiral rank of uniform
// draws is 1/2 of the shape (standard error 0.009), of Weighted{3} 1/4
// (0.009) and of Normal{0.8, 0.05} about 0.79.
func TestDistribution(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dist     geom.Distribution
		lo, hi   float64
		centered bool
	}{
		{"default", nil, 0.45, 0.55, false},
		{"flat", geom.Flat{}, 0.45, 0.55, false},
		{"weighted", geom.Weighted{Exponent: 3}, 0.20, 0.30, true},
		{"normal", geom.Normal{Mean: 0.8, Deviation: 0.05}, 0.75, 0.83, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := drawEnv(t, 60, tc.dist, nil)
			defer e.shutdown()
			got := meanRank(t, e.shape, runDraws(e, rec, 1000))
			if got < tc.lo || got > tc.hi {
				t.Fatalf("mean spiral rank of the candidates = %.3f of the shape, want in [%.2f, %.2f]", got, tc.lo, tc.hi)
			}
		})
	}
}

// TestDistributionExpand: in expand mode, with the memory's universe grown
// past the shape and the shape's inner half bad, ranks over the shape's
// Len reach past its edge: candidates land on the selectable indices
// [bad, Len+bad), outside the shape for about bad/Len of them. Without
// Expand, or with Expand on a table no larger than the shape, the choice
// shrinks to the shape's selectable indices.
func TestDistributionExpand(t *testing.T) {
	const radius = 15 // 31x31 = 961 chunks
	bad := int64(400)
	table := func(headroom int64) func(geom.Shape) *memory.Table {
		return func(shape geom.Shape) *memory.Table {
			m, err := memory.New(memory.Options{Shape: shape, Len: geom.ExpandedUniverse(shape, headroom), World: "overworld"})
			if err != nil {
				t.Fatal(err)
			}
			for i := range bad {
				if err := m.AddBad(i, memory.CauseSafety, ""); err != nil {
					t.Fatal(err)
				}
			}
			m.Rebuild()
			return m
		}
	}
	for _, tc := range []struct {
		name     string
		dist     geom.Distribution
		headroom int64
		beyond   bool // some candidates past the shape
	}{
		{"expand", geom.Expand{}, 1000, true},
		{"expand pointer", &geom.Expand{Ranks: geom.Flat{}}, 1000, true},
		{"flat in the shape's table", geom.Flat{}, 0, false},
		{"expand without headroom", geom.Expand{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := drawEnv(t, radius, tc.dist, table(tc.headroom))
			defer e.shutdown()
			n := e.shape.Len()
			out := 0
			chunks := runDraws(e, rec, 600)
			for _, c := range chunks {
				i, err := e.mem.ChunkIndex(c)
				if err != nil {
					t.Fatalf("screened chunk %v: %v", c, err)
				}
				switch {
				case i < bad:
					t.Fatalf("candidate %v has index %d, in the bad run [0, %d)", c, i, bad)
				case i >= n+bad:
					t.Fatalf("candidate %v has index %d, past the expanded ranks [%d, %d)", c, i, bad, n+bad)
				case i >= n:
					out++
					if e.shape.Contains(c) {
						t.Fatalf("index %d past the shape maps to %v inside it", i, c)
					}
				}
			}
			share := float64(out) / float64(len(chunks))
			switch want := float64(bad) / float64(n); {
			case tc.beyond && (share < want-0.08 || share > want+0.08):
				t.Fatalf("%.3f of the candidates past the shape, want about %.3f", share, want)
			case !tc.beyond && out != 0:
				t.Fatalf("%d candidates past the shape, want none", out)
			}
			// Locations beyond the shape survive a restart.
			if tc.beyond {
				e.fill(20, func() bool { return e.p.Stats().Cold.Fill > 20 })
				if got, want := e.reload(), e.p.Stats().Cold.Fill; got == 0 || got != want {
					t.Fatalf("Restore = %d with cold %d", got, want)
				}
			}
		})
	}
}

// TestDistributionValidate: a distribution's own Validate is part of the
// options' validation, and a nil pointer is refused rather than panicking.
func TestDistributionValidate(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	for _, tc := range []struct {
		dist geom.Distribution
		want string
	}{
		{geom.Weighted{Exponent: -1}, "Distribution: geom: weighted exponent -1"},
		{geom.Expand{Ranks: geom.Normal{Mean: 2, Deviation: 0.1}}, "Distribution: geom: normal mean 2"},
		{(*geom.Expand)(nil), "Distribution is a nil *geom.Expand"},
	} {
		o := e.opts
		o.Distribution = tc.dist
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() with %#v = %v, want %q", tc.dist, err, tc.want)
		}
	}
	o := e.opts
	o.Distribution = geom.Expand{Ranks: geom.Weighted{Exponent: 2}}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate() with a valid distribution = %v", err)
	}
}

// TestOnPromote: every promotion into a sink calls OnPromote with its name,
// after the entry is visible in the sink (so a waiting request woken by it
// finds the entry) and outside every lock (the callback may take from the
// pipeline); a transfer calls it once per pulse for the destination, after
// Pulse released its lock; a panic in it is counted and does not stop the
// pipeline.
func TestOnPromote(t *testing.T) {
	var calls, found, missed atomic.Int64
	var pipe atomic.Pointer[Pipeline]
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.OnPromote = func(sink string) {
			if sink != "general" {
				t.Errorf("OnPromote(%q), want general", sink)
			}
			calls.Add(1)
			if h, ok := pipe.Load().General().Take(); ok {
				found.Add(1)
				h.Close()
			} else {
				missed.Add(1)
			}
		}
	}})
	defer e.shutdown()
	pipe.Store(e.p)
	for range 10 {
		e.cycle()
	}
	st := e.p.Stats()
	if calls.Load() == 0 || uint64(calls.Load()) != st.Promotions {
		t.Fatalf("OnPromote called %d times for %d promotions", calls.Load(), st.Promotions)
	}
	if missed.Load() != 0 || found.Load() != calls.Load() {
		t.Fatalf("a take inside OnPromote found %d entries and missed %d times; want every entry visible", found.Load(), missed.Load())
	}
}

func TestOnPromoteTransfer(t *testing.T) {
	var mu sync.Mutex
	var names []string
	var p *Pipeline
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.MinResidence = -1
		o.General = SinkConfig{Capacity: 3, Floor: -1}     // no demand: the general sink wants nothing
		o.Login = LoginConfig{Enabled: true, PlayerCap: 3} // kept full: wants 3
		o.OnPromote = func(sink string) {
			if sink != "login" {
				return
			}
			// Pulse has released its lock: this would fail under it.
			if !p.pulseMu.TryLock() {
				t.Error("OnPromote for a transfer called under pulseMu")
			} else {
				p.pulseMu.Unlock()
			}
			mu.Lock()
			names = append(names, sink)
			mu.Unlock()
		}
	}})
	defer e.shutdown()
	p = e.p
	a, b := e.p.General(), e.p.Login()
	for i := range 3 {
		a.deliver(e.hot(geom.Block{X: int64(i) * 16, Z: 7}), e.p.clock())
	}
	e.p.opts.Budget.Candidates = -1 // no feed: cold stays empty, only transfers fill the login reserve
	e.cycle()
	if b.Len() != 3 || a.Len() != 0 {
		t.Fatalf("after the pulse: general %d, login %d; want the 3 entries moved to login", a.Len(), b.Len())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 {
		t.Fatalf("OnPromote for login called %d times, want once for the pulse's 3 transfers", len(names))
	}
}

func TestOnPromotePanic(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.OnPromote = func(string) { panic("waiter gone") }
	}})
	defer e.shutdown()
	g := e.p.General()
	e.fill(20, func() bool { return g.Len() == g.Cap() })
	st := e.p.Stats()
	if st.CallbackPanics != st.Promotions || st.CallbackPanics == 0 {
		t.Fatalf("CallbackPanics = %d for %d promotions", st.CallbackPanics, st.Promotions)
	}
}

// nineChunks sets o's shape to a square of 9 chunks, with a memory of its
// own.
func nineChunks(t testing.TB, o *Options) {
	t.Helper()
	shape, err := geom.NewSquare(geom.Chunk{}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	o.Shape = shape
	o.Memory, err = memory.New(memory.Options{Shape: shape, World: "overworld"})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateGuard: on a shape of 9 chunks with room for 40 entries,
// memory draws the same good chunks again and again. No two locations of
// one chunk are ever in the pipeline at once, so all the entries ready at
// one time are on distinct chunks; the skipped draws are counted; a chunk
// handed out can be drawn again.
func TestDuplicateGuard(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		nineChunks(t, o)
		o.General.Capacity = 20
		o.Login = LoginConfig{Enabled: true, PlayerCap: 20}
		o.ColdCapacity = 40
	}})
	e.shape, e.mem = e.opts.Shape, e.opts.Memory
	defer e.shutdown()
	for range 10 {
		e.cycle()
		e.checkHeld("fill")
	}
	st := e.p.Stats()
	if st.Duplicates == 0 {
		t.Fatalf("Duplicates = 0 after 10 pulses drawing from 9 chunks: %+v", st)
	}
	if st.Held != 9 {
		t.Fatalf("Held = %d, want all 9 chunks in the pipeline", st.Held)
	}
	seen := map[geom.Chunk]bool{}
	var taken []*Hot
	for _, s := range []*Sink{e.p.General(), e.p.Login().Sink} {
		for {
			h, ok := s.Take()
			if !ok {
				break
			}
			if seen[h.Chunk()] {
				t.Fatalf("chunk %v handed out twice at once", h.Chunk())
			}
			seen[h.Chunk()] = true
			taken = append(taken, h)
		}
	}
	if len(taken) < 5 {
		t.Fatalf("only %d entries taken", len(taken))
	}
	for _, h := range taken {
		h.Close()
	}
	before := st.Promotions
	e.fill(10, func() bool { return e.p.Stats().Promotions >= before+uint64(len(taken)) })
	e.checkHeld("refill")
}

// TestDrawBackoff: in a region whose every chunk is in the pipeline, a
// pulse's draws fall from twice the candidates wanted to a few (each one
// is a duplicate, wasted work on the pulse goroutine), and once places
// leave the pipeline the draws find them again within a few pulses.
func TestDrawBackoff(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		nineChunks(t, o)
		o.General.Capacity = 20
		o.ColdCapacity = 400 // room in cold: every pulse wants candidates
		o.Budget.Candidates = 64
	}})
	e.shape, e.mem = e.opts.Shape, e.opts.Memory
	defer e.shutdown()
	dups := func() uint64 { return e.p.Stats().Duplicates }
	e.cycle()
	first := dups()
	if first <= 4*minDrawTries {
		t.Fatalf("first pulse: %d duplicates, want the full budget tried (twice the candidates wanted)", first)
	}
	for range 20 {
		e.cycle()
	}
	if st := e.p.Stats(); st.Held != 9 {
		t.Fatalf("Held = %d, want all 9 chunks in the pipeline", st.Held)
	}
	before := dups()
	e.cycle()
	if d := dups() - before; d > minDrawTries {
		t.Fatalf("a pulse in a full region drew %d duplicates, want at most %d", d, minDrawTries)
	}
	// Hand out what the general sink holds: its chunks leave the
	// pipeline, and the draws must find them again.
	taken := 0
	for {
		h, ok := e.p.General().Take()
		if !ok {
			break
		}
		h.Close()
		taken++
	}
	if taken == 0 {
		t.Fatal("nothing to take from the general sink")
	}
	e.fill(30, func() bool { return e.p.Stats().Held == 9 })
}

// TestDrawTries: the try budget halves after each pulse whose draws were
// mostly skipped, down to minDrawTries, and doubles back to twice the
// candidates wanted after each pulse that kept most of its draws.
// (TestDrawBackoff's refill would pass on the floor alone.)
func TestDrawTries(t *testing.T) {
	p := &Pipeline{}
	const n = 512
	if got := p.drawTries(n); got != 2*n {
		t.Fatalf("fresh budget %d, want %d", got, 2*n)
	}
	if got := p.drawTries(0); got != 0 {
		t.Fatalf("budget for no candidates %d, want 0", got)
	}
	for i, want := range []int{512, 256, 128, 64, 32, 16, minDrawTries, minDrawTries} {
		p.drawn(0, p.drawTries(n))
		if got := p.drawTries(n); got != want {
			t.Fatalf("after %d pulses of duplicates: budget %d, want %d", i+1, got, want)
		}
	}
	p.drawn(1, 3) // fewer tries than minDrawTries: no judgement
	if got := p.drawTries(n); got != minDrawTries {
		t.Fatalf("a pulse of 3 tries moved the budget to %d", got)
	}
	for range maxDrawShift {
		tries := p.drawTries(n)
		p.drawn(tries, tries)
	}
	if got := p.drawTries(n); got != 2*n {
		t.Fatalf("after pulses that kept every draw: budget %d, want %d back", got, 2*n)
	}
	// A pulse wanting fewer than the floor tries twice what it wants.
	if got := p.drawTries(2); got != 4 {
		t.Fatalf("budget for 2 candidates %d, want 4", got)
	}
}

// TestRestoreDuplicate: two rows of one chunk restore as one cold entry;
// the second row is deleted and counted as a duplicate.
func TestRestoreDuplicate(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer e.shutdown()
	idx, _ := e.shape.Index(geom.Chunk{X: 2, Z: 3})
	l := Location{World: "overworld", X: 2*16 + 8, Y: 65, Z: 3*16 + 8, Index: idx}
	other := l
	other.X++ // another column of the same chunk
	e.pers.Add(l)
	e.pers.Add(l)
	e.pers.Add(other)
	if n := e.reload(); n != 1 {
		t.Fatalf("Restore = %d, want 1 (three rows of one chunk)", n)
	}
	if st := e.p.Stats(); st.Duplicates != 2 || st.Held != 1 {
		t.Fatalf("Duplicates %d, Held %d; want 2 and 1", st.Duplicates, st.Held)
	}
	rows := 0
	for _, n := range e.pers.counts() {
		rows += n
	}
	if rows != 1 {
		t.Fatalf("%d rows left, want 1", rows)
	}
}

// TestOnPromoteWakesWaiter: a request that finds the sink empty waits for
// OnPromote and is served by the next promotion, long before the next
// pulse would come.
func TestOnPromoteWakesWaiter(t *testing.T) {
	wake := make(chan struct{}, 1)
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.OnPromote = func(string) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}})
	defer e.shutdown()
	g := e.p.General()
	if _, ok := g.Take(); ok {
		t.Fatal("a fresh pipeline had an entry ready")
	}
	served := make(chan *Hot)
	go func() {
		for range wake {
			if h, ok := g.Take(); ok {
				served <- h
				return
			}
		}
	}()
	// One pulse starts screenings; the next (the test's "period") starts
	// promotions, and the waiter is served as soon as one lands.
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Pulse(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-served:
		h.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by a promotion")
	}
}

// TestOnPromoteSinks: OnPromote names the sink an entry landed in, for
// every kind: login, general, network (a promotion, and a lease released
// back to the pool) and personal.
func TestOnPromoteSinks(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 2}
		o.Network = NetworkConfig{Enabled: true, Capacity: 2}
		o.Personal = PersonalConfig{Enabled: true}
		o.General.Capacity = 2
		o.OnPromote = func(sink string) {
			mu.Lock()
			calls[sink]++
			mu.Unlock()
		}
	}})
	defer e.shutdown()
	if err := e.p.Personal().Open("alex", 1); err != nil {
		t.Fatal(err)
	}
	e.fill(40, func() bool {
		return e.p.Login().Len() == 2 && e.p.General().Len() == 2 && e.p.Network().Len() == 2 &&
			e.p.Personal().PlayerLen("alex") == 1
	})
	st := e.p.Stats()
	mu.Lock()
	for _, s := range st.Sinks {
		if got := calls[s.Name]; uint64(got) != s.Promotions+s.TransfersIn || got == 0 {
			t.Errorf("OnPromote(%q) called %d times for %d promotions and %d transfers in", s.Name, got, s.Promotions, s.TransfersIn)
		}
	}
	before := calls["network"]
	mu.Unlock()

	n := e.p.Network()
	tok := n.NewToken()
	if _, err := n.Reserve(tok); err != nil {
		t.Fatal(err)
	}
	if !n.Release(tok) {
		t.Fatal("Release of a leased token = false")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["network"] != before+1 {
		t.Fatalf("OnPromote(network) called %d times after a release, want %d", calls["network"], before+1)
	}
}

// TestDrawEagerly: with Options.DrawEagerly pulses of skipped draws leave
// the try budget whole.
func TestDrawEagerly(t *testing.T) {
	p := &Pipeline{opts: Options{DrawEagerly: true}}
	const n = 512
	for i := range 2 * maxDrawShift {
		p.drawn(0, p.drawTries(n))
		if got := p.drawTries(n); got != 2*n {
			t.Fatalf("after %d pulses of duplicates: budget %d, want %d", i+1, got, 2*n)
		}
	}
}
