package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world"
)

// Test terrain: every chunk's columns share one ground, top and biome,
// decided by the chunk's position.
var (
	stone  = world.Block("minecraft:stone")
	lava   = world.Block("minecraft:lava")
	plains = world.Biome("minecraft:plains")
	desert = world.Biome("minecraft:desert")
)

// terrain describes the chunk at pos.
type terrain func(pos geom.Chunk) (ground world.BlockID, biome world.BiomeID, top int16)

// flat is terrain safe everywhere, at top 64.
func flat(geom.Chunk) (world.BlockID, world.BiomeID, int16) { return stone, plains, 64 }

// mixed has lava chunks and desert chunks among safe ones.
func mixed(pos geom.Chunk) (world.BlockID, world.BiomeID, int16) {
	switch {
	case pos.X%5 == 0 && pos.Z%3 == 0:
		return lava, plains, 62
	case (pos.X%7+7)%7 == 1:
		return stone, desert, 70
	}
	return stone, plains, 64 + int16((pos.X+pos.Z)&3)
}

func makeChunk(pos geom.Chunk, tr terrain) *world.Chunk {
	g, b, top := tr(pos)
	c := world.NewChunk(pos, -64, 320)
	for i := range c.Columns {
		c.Columns[i] = world.Column{Top: top, Ground: g, Above: [2]world.BlockID{world.Air, world.Air}, Biome: b}
	}
	return c
}

// countingSource is a world.Source that counts its loads and can be told
// to fail the test on any load (for the zero-I/O recheck tests).
type countingSource struct {
	t       testing.TB
	terrain terrain
	loads   atomic.Int64
	forbid  atomic.Bool
	// fail, when set, makes Load of matching chunks fail.
	fail func(geom.Chunk) error
	// columns, when set, changes the columns of every chunk loaded
	// (terrain that varies within a chunk).
	columns func(*world.Chunk)
}

func (s *countingSource) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	s.loads.Add(1)
	if s.forbid.Load() {
		s.t.Errorf("chunk %v loaded while loads are forbidden", pos)
	}
	if s.fail != nil {
		if err := s.fail(pos); err != nil {
			return nil, err
		}
	}
	c := makeChunk(pos, s.terrain)
	if s.columns != nil {
		s.columns(c)
	}
	return c, nil
}

// countingReserver records every reservation the pipeline opens.
type countingReserver struct {
	r    *world.Resident
	mu   sync.Mutex
	all  []*world.Reservation
	hook func(geom.Chunk) error // optional failure injection
}

func (c *countingReserver) ReserveFor(ctx context.Context, pos geom.Chunk, lifespan time.Duration) (*world.Reservation, error) {
	if c.hook != nil {
		if err := c.hook(pos); err != nil {
			return nil, err
		}
	}
	res, err := c.r.ReserveFor(ctx, pos, lifespan)
	if err == nil {
		c.mu.Lock()
		c.all = append(c.all, res)
		c.mu.Unlock()
	}
	return res, err
}

// openCount is how many recorded reservations are still open.
func (c *countingReserver) openCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.all {
		if !r.Closed() {
			n++
		}
	}
	return n
}

// fakeCheck is the full check: it reads only the reserved chunk.
func fakeCheck(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
	c := res.Chunk()
	if c == nil || b.Chunk() != c.Pos {
		return 0, memory.CauseNullChunk, false
	}
	col := c.Column(b.Local())
	switch {
	case col.Top == world.NoTop:
		return 0, memory.CauseVert, false
	case col.Ground == lava:
		return 0, memory.CauseSafety, false
	case col.Biome == desert:
		return 0, memory.CauseBiome, false
	}
	return int(col.Top) + 1, 0, true
}

// summaryScreen screens from the terrain description, without any
// reservation: it sees lava (the ground) but not biomes, which the full
// check judges.
func summaryScreen(tr terrain) ScreenFunc {
	return func(ctx context.Context, c geom.Chunk) (Screened, error) {
		g, _, top := tr(c)
		if g == lava {
			return Screened{Cause: memory.CauseSafety}, nil
		}
		return Screened{OK: true, Block: c.Center(), Y: int(top) + 1}, nil
	}
}

// memStore is an in-memory persistence backend with the Persister
// contract; persist_test runs the contract suite on it.
type memStore struct {
	mu     sync.Mutex
	rows   []memRow
	adds   int
	remove int
	urgent int // hot marks asked for urgently
	lazy   int // hot marks that may ride a batch
	// hold, when set, delays the callbacks of hot marks until it is
	// closed, as a commit that has not happened yet.
	hold chan struct{}
}

type memRow struct {
	region string
	key    Key
	loc    Location
	n      int
}

type memPersister struct {
	s      *memStore
	region string
	key    Key
}

func (s *memStore) region(region string, key Key) *memPersister {
	return &memPersister{s: s, region: region, key: key}
}

func (m *memPersister) find(l Location) int {
	return slices.IndexFunc(m.s.rows, func(r memRow) bool { return r.region == m.region && r.key == m.key && r.loc == l })
}

func (m *memPersister) Add(l Location) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.adds++
	if i := m.find(l); i >= 0 {
		m.s.rows[i].n++
		return
	}
	m.s.rows = append(m.s.rows, memRow{m.region, m.key, l, 1})
}

func (m *memPersister) Remove(l Location) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.remove++
	if i := m.find(l); i >= 0 {
		if m.s.rows[i].n--; m.s.rows[i].n == 0 {
			m.s.rows = slices.Delete(m.s.rows, i, i+1)
		}
	}
}

func (m *memPersister) Load(context.Context) ([]Location, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.s.rows = slices.DeleteFunc(m.s.rows, func(r memRow) bool { return r.region == m.region && r.key != m.key })
	var out []Location
	for _, r := range m.s.rows {
		if r.region == m.region {
			for range r.n {
				out = append(out, r.loc)
			}
		}
	}
	return out, nil
}

func (m *memPersister) Flush(context.Context) error { return nil }

// MarkHot implements Persister: the store is never lost, so a mark is
// durable at once, or once hold is closed. It counts the marks by urgency.
func (m *memPersister) MarkHot(_ Location, urgent bool, done func(error)) {
	m.s.mu.Lock()
	if urgent {
		m.s.urgent++
	} else {
		m.s.lazy++
	}
	hold := m.s.hold
	m.s.mu.Unlock()
	if hold == nil {
		done(nil)
		return
	}
	go func() {
		<-hold
		done(nil)
	}()
}

// marks returns the hot marks asked for so far, by urgency.
func (m *memPersister) marks() (urgent, lazy int) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.urgent, m.s.lazy
}

// Recovery implements Persister: an in-memory store always shuts down
// cleanly.
func (m *memPersister) Recovery() Recovery { return Recovery{} }

// counts returns the row count per location of this region and key.
func (m *memPersister) counts() map[Location]int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	out := map[Location]int{}
	for _, r := range m.s.rows {
		if r.region == m.region && r.key == m.key {
			out[r.loc] += r.n
		}
	}
	return out
}

func (m *memPersister) ops() (adds, removes int) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.adds, m.s.remove
}

// logRecorder is a slog.Handler keeping every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// warnings returns the messages of the warning records, each with its
// "transition" and "reason" attributes when present.
func (l *logRecorder) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level != slog.LevelWarn {
			continue
		}
		s := r.Message
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "transition" || a.Key == "reason" {
				s += fmt.Sprintf(" %s=%s", a.Key, a.Value)
			}
			return true
		})
		out = append(out, s)
	}
	return out
}

// env is a pipeline over a real resident store with counting fakes.
type env struct {
	t     testing.TB
	src   *countingSource
	res   *world.Resident
	rsv   *countingReserver
	mem   *memory.Table
	shape geom.Shape
	store *memStore
	pers  *memPersister
	logs  *logRecorder
	p     *Pipeline
	now   *fakeClock
	opts  Options     // what p was made with, for reload
	old   []*Pipeline // pipelines closed by reload
}

// fakeClock is a settable clock (tests not under synctest).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 9, 3, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type envConfig struct {
	terrain  terrain
	columns  func(*world.Chunk) // see countingSource.columns
	realTime bool               // use time.Now (synctest) instead of a fake clock
	store    *memStore
	key      Key
	opts     func(*Options)
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	if cfg.terrain == nil {
		cfg.terrain = flat
	}
	if cfg.store == nil {
		cfg.store = &memStore{}
	}
	if cfg.key == "" {
		cfg.key = NewKey(1, []byte("test"))
	}
	e := &env{t: t, store: cfg.store, logs: &logRecorder{}}
	e.src = &countingSource{t: t, terrain: cfg.terrain, columns: cfg.columns}
	clock := time.Now
	if !cfg.realTime {
		e.now = newFakeClock()
		clock = e.now.Now
	}
	e.res = world.NewResident(e.src, world.ResidentOptions{Clock: clock, MaxChunks: -1})
	e.rsv = &countingReserver{r: e.res}
	shape, err := geom.NewSquare(geom.Chunk{}, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.shape = shape
	e.mem, err = memory.New(memory.Options{Shape: shape, World: "overworld", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	e.pers = cfg.store.region("r", cfg.key)
	opts := Options{
		Region: "r", World: "overworld", Shape: shape, Memory: e.mem,
		Reserver: e.rsv, Screen: summaryScreen(cfg.terrain), Check: fakeCheck,
		Persister: e.pers, Seed: 42, ColdCapacity: 64, BacklogCapacity: 32,
		Clock: clock, Logger: slog.New(e.logs),
	}
	if cfg.opts != nil {
		cfg.opts(&opts)
	}
	e.opts = opts
	e.p, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// reload closes the pipeline and starts a new one on the same store,
// persistence and resident chunks, restoring the persisted locations.
func (e *env) reload() int {
	e.t.Helper()
	if err := e.p.Close(context.Background()); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.old = append(e.old, e.p)
	p, err := New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.p = p
	n, err := p.Restore(context.Background())
	if err != nil {
		e.t.Fatalf("Restore: %v", err)
	}
	return n
}

// cycle runs one pulse and waits for the work it started.
func (e *env) cycle() {
	e.t.Helper()
	if err := e.p.Pulse(context.Background()); err != nil {
		e.t.Fatalf("Pulse: %v", err)
	}
	if err := e.p.Settle(context.Background()); err != nil {
		e.t.Fatalf("Settle: %v", err)
	}
}

// fill cycles until cond holds (at most n cycles).
func (e *env) fill(n int, cond func() bool) {
	e.t.Helper()
	for range n {
		if cond() {
			return
		}
		e.cycle()
	}
	if !cond() {
		e.t.Fatalf("condition not reached after %d pulses; stats %+v", n, e.p.Stats())
	}
}

// shutdown closes the pipeline and the store and checks reservation
// hygiene: every reservation opened was closed, exactly once.
func (e *env) shutdown() {
	e.t.Helper()
	if err := e.p.Close(context.Background()); err != nil {
		e.t.Errorf("Pipeline.Close: %v", err)
	}
	open := e.rsv.openCount()
	if err := e.res.Close(); err != nil {
		e.t.Errorf("Resident.Close: %v", err)
	}
	e.checkHygiene(open)
}

func (e *env) checkHygiene(openBeforeStoreClose int) {
	e.t.Helper()
	if openBeforeStoreClose != 0 {
		e.t.Errorf("%d reservations still open after Pipeline.Close (leaked)", openBeforeStoreClose)
	}
	rs := e.res.Stats()
	if rs.Opened != rs.Closed || rs.Forced != 0 {
		e.t.Errorf("resident store: opened %d, closed %d, forced %d; want opened == closed, none forced", rs.Opened, rs.Closed, rs.Forced)
	}
	for _, p := range append(e.old, e.p) {
		st := p.Stats().Reservations
		if st.DoubleReleases != 0 || st.ForeignClosed != 0 {
			e.t.Errorf("reservation releases: %+v; want no double release and no foreign close", st)
		}
		if n := p.held.len(); n != 0 {
			e.t.Errorf("%d chunks still held by the double-delivery guard after Close, want 0", n)
		}
	}
}

// live returns a hot entry on a fresh reservation of the chunk of b
// (for unit tests of sinks).
func (e *env) hot(b geom.Block) *Hot {
	e.t.Helper()
	res, err := e.rsv.ReserveFor(context.Background(), b.Chunk(), -1)
	if err != nil {
		e.t.Fatal(err)
	}
	y, _, ok := fakeCheck(res, b)
	if !ok {
		y = 0
	}
	idx, _ := e.shape.Index(b.Chunk())
	now := e.p.clock()
	return &Hot{Location: Location{World: "overworld", X: b.X, Y: int64(y), Z: b.Z, Index: idx}, Res: res, Since: now, Arrived: now, ctr: &e.p.rel}
}

var errInjected = errors.New("injected failure")
