package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
)

// fakeParams exercises every kind the canonical encoding supports.
type fakeParams struct {
	Seed    int64
	Relief  float64
	Name    string
	Clamp   bool
	Weights []float32
	Pair    [2]uint16
	Inner   struct {
		Level int32
		Scale float32
	}
	small int8 // unexported fields count too
}

func defaultFakeParams() fakeParams {
	p := fakeParams{Seed: 7, Relief: 1.5, Name: "fake", Clamp: true, Weights: []float32{0.5, 0.25}, Pair: [2]uint16{3, 4}, small: 2}
	p.Inner.Level = 63
	p.Inner.Scale = 2
	return p
}

// fakeSource is an expensive source stand-in: it counts calls and can be
// held at a gate until the test releases it.
type fakeSource struct {
	producer terrain.Producer
	params   any
	seed     int64

	calls     atomic.Int64
	sawCancel atomic.Int64
	started   chan terrain.Request // when non-nil, receives each request as generation starts
	gate      chan struct{}        // when non-nil, generation waits for a receive (or ctx)
	err       error                // when non-nil, returned after the gate
	panicMsg  string               // when non-empty, Tile panics with it
}

func newFake() *fakeSource {
	return &fakeSource{producer: terrain.Producer{Name: "fake", Version: "1"}, params: defaultFakeParams(), seed: 7}
}

func (s *fakeSource) Producer() terrain.Producer { return s.producer }
func (s *fakeSource) Params() any                { return s.params }

func (s *fakeSource) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	s.calls.Add(1)
	if s.started != nil {
		s.started <- req
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			s.sawCancel.Add(1)
			return nil, ctx.Err()
		}
	}
	if s.panicMsg != "" {
		panic(s.panicMsg)
	}
	if s.err != nil {
		return nil, s.err
	}
	return makeTile(req, s.seed), nil
}

// makeTile builds a valid tile whose every sample depends on req and seed:
// low samples are under water, the others dry (NaN water).
func makeTile(req terrain.Request, seed int64) *terrain.Tile {
	side, res, b := req.Side(), int(req.Resolution), int(req.Border)
	t := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, side*side),
		Water:      make([]float32, res*res),
		Cover:      make([]terrain.Cover, res*res),
	}
	for j := range side {
		for i := range side {
			x, z := req.OriginX+int64(i), req.OriginZ+int64(j)
			h := (x*31+z*17+seed*13)%211 + int64(req.Size%7) + int64(req.Resolution%5)
			t.Elevations[j*side+i] = float32(h)*0.75 - 40
		}
	}
	t.Min, t.Max = float32(math.Inf(1)), float32(math.Inf(-1))
	for j := range res {
		for i := range res {
			e := t.Elevations[(j+b)*side+i+b]
			t.Min, t.Max = min(t.Min, e), max(t.Max, e)
			k := j*res + i
			if e < 0 {
				t.Water[k] = 0
				t.Cover[k] = terrain.CoverOcean
			} else {
				t.Water[k] = float32(math.NaN())
				t.Cover[k] = terrain.Cover(1 + (i+j)%(terrain.NumCovers-1))
			}
		}
	}
	return t
}

// sameTile compares two tiles through their encoding (NaN water compares
// equal to itself bit for bit).
func sameTile(a, b *terrain.Tile) bool {
	return bytes.Equal(archive.EncodeTile(a), archive.EncodeTile(b))
}

// set runs fn under h's lock, to install hooks while the archive runs.
func (h *hookStore) set(fn func(h *hookStore)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h)
}

// hookStore wraps a store, counting calls and letting tests intercept them.
type hookStore struct {
	archive.Store
	gets, puts, deletes, clears, closes atomic.Int64
	calls                               atomic.Int64 // every method

	mu       sync.Mutex // protects following fields
	onGet    func(ctx context.Context) error
	onPut    func(ctx context.Context, r archive.Record) error
	onDelete func(ctx context.Context) error
	onStats  func() error
	onClose  func() error
	log      []string
}

func newHookStore(l archive.Limits) *hookStore {
	return &hookStore{Store: memstore.New(l)}
}

func (h *hookStore) record(op string) {
	h.calls.Add(1)
	h.mu.Lock()
	h.log = append(h.log, op)
	h.mu.Unlock()
}

func (h *hookStore) ops() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func (h *hookStore) Get(ctx context.Context, d archive.Digest) (archive.Record, bool, error) {
	h.record("get")
	h.gets.Add(1)
	h.mu.Lock()
	fn := h.onGet
	h.mu.Unlock()
	if fn != nil {
		if err := fn(ctx); err != nil {
			return archive.Record{}, false, err
		}
	}
	return h.Store.Get(ctx, d)
}

func (h *hookStore) Put(ctx context.Context, r archive.Record) error {
	h.record("put")
	h.puts.Add(1)
	h.mu.Lock()
	fn := h.onPut
	h.mu.Unlock()
	if fn != nil {
		if err := fn(ctx, r); err != nil {
			return err
		}
	}
	return h.Store.Put(ctx, r)
}

func (h *hookStore) Delete(ctx context.Context, d archive.Digest) error {
	h.record("delete")
	h.deletes.Add(1)
	h.mu.Lock()
	fn := h.onDelete
	h.mu.Unlock()
	if fn != nil {
		if err := fn(ctx); err != nil {
			return err
		}
	}
	return h.Store.Delete(ctx, d)
}

func (h *hookStore) Clear(ctx context.Context) error {
	h.record("clear")
	h.clears.Add(1)
	return h.Store.Clear(ctx)
}

func (h *hookStore) Scan(ctx context.Context, fn func(archive.Record) error) error {
	h.record("scan")
	return h.Store.Scan(ctx, fn)
}

func (h *hookStore) Stats(ctx context.Context) (archive.StoreStats, error) {
	h.record("stats")
	h.mu.Lock()
	fn := h.onStats
	h.mu.Unlock()
	if fn != nil {
		if err := fn(); err != nil {
			return archive.StoreStats{}, err
		}
	}
	return h.Store.Stats(ctx)
}

func (h *hookStore) Close() error {
	h.record("close")
	h.closes.Add(1)
	h.mu.Lock()
	fn := h.onClose
	h.mu.Unlock()
	if fn != nil {
		if err := fn(); err != nil {
			return err
		}
	}
	return h.Store.Close()
}

// quietOptions discards logs.
func quietOptions() archive.Options {
	return archive.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// logCapture collects log lines.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for l := range bytes.Lines(c.buf.Bytes()) {
		out = append(out, string(bytes.TrimSpace(l)))
	}
	return out
}

func (c *logCapture) logger() *slog.Logger { return slog.New(slog.NewTextHandler(c, nil)) }

// wrap wraps src over store, failing the test on error, and closes the
// archive at the end of the test.
func wrap(t *testing.T, src terrain.Source, store archive.Store, opts archive.Options) *archive.Archive {
	t.Helper()
	a, err := archive.Wrap(src, store, opts)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

func tileOK(t *testing.T, a terrain.Source, req terrain.Request) *terrain.Tile {
	t.Helper()
	tile, err := a.Tile(t.Context(), req)
	if err != nil {
		t.Fatalf("Tile(%v) error %v", req, err)
	}
	if err := tile.Validate(req); err != nil {
		t.Fatalf("Tile(%v) returned an invalid tile: %v", req, err)
	}
	return tile
}

func flush(t *testing.T, a *archive.Archive) {
	t.Helper()
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func stats(t *testing.T, a *archive.Archive) archive.Stats {
	t.Helper()
	s, err := a.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

// storedFor returns the record the store holds for req from src, if any.
func storedFor(t *testing.T, s archive.Store, src terrain.Source, req terrain.Request) (archive.Record, bool) {
	t.Helper()
	key, err := archive.EncodeKey(src.Producer(), src.Params(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.Get(t.Context(), archive.DigestOf(key))
	if err != nil {
		t.Fatalf("store Get: %v", err)
	}
	return r, ok
}

var errBoom = errors.New("boom")

var req0 = terrain.Request{OriginX: -64, OriginZ: 128, Size: 64, Resolution: 16, Border: 1}
