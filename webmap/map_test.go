package webmap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/terrain/mesh"
	"github.com/rtpengine/rtp/terrain/meshcache"
)

func newMap(t testing.TB, f *fakeBackend, opts Options) *Map {
	t.Helper()
	m, err := New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// get serves one request through m's handler.
func get(m *Map, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	return rec
}

func TestTileServe(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{})
	rec := get(m, "/v1/worlds/mc/tiles/0/0/0.png?v=17")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "image/png" {
		t.Errorf("content type %q", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "public, max-age=30" {
		t.Errorf("cache control %q", cc)
	}
	img, err := decodePNG(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != TileSize || img.Bounds().Dy() != TileSize {
		t.Fatalf("tile of %v", img.Bounds())
	}
	if f.reads.Load() != tileChunks*tileChunks {
		t.Errorf("%d summaries read for a zoom-0 tile, want %d", f.reads.Load(), tileChunks*tileChunks)
	}
	tag := rec.Header().Get("ETag")
	if !strings.HasPrefix(tag, `"`) || strings.HasPrefix(tag, "W/") {
		t.Errorf("ETag %q is not strong", tag)
	}
	// Cached: no more reads, same bytes.
	again := get(m, "/v1/worlds/mc/tiles/0/0/0.png")
	if again.Body.String() != rec.Body.String() || f.reads.Load() != tileChunks*tileChunks {
		t.Error("a second request rendered again")
	}
	// 304 on a matching If-None-Match, also in a list.
	for _, inm := range []string{tag, `"x", ` + tag, "*"} {
		nm := get(m, "/v1/worlds/mc/tiles/0/0/0.png", "If-None-Match", inm)
		if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 || nm.Header().Get("ETag") != tag {
			t.Errorf("If-None-Match %s: status %d, %d bytes, ETag %q", inm, nm.Code, nm.Body.Len(), nm.Header().Get("ETag"))
		}
	}
	if nm := get(m, "/v1/worlds/mc/tiles/0/0/0.png", "If-None-Match", `"other"`); nm.Code != http.StatusOK {
		t.Errorf("a stale If-None-Match got %d", nm.Code)
	}
	// HEAD: headers, no body.
	req := httptest.NewRequest(http.MethodHead, "/v1/worlds/mc/tiles/0/0/0.png", nil)
	hr := httptest.NewRecorder()
	m.Handler().ServeHTTP(hr, req)
	if hr.Code != http.StatusOK || hr.Body.Len() != 0 || hr.Header().Get("ETag") != tag {
		t.Errorf("HEAD: %d, %d bytes, ETag %q", hr.Code, hr.Body.Len(), hr.Header().Get("ETag"))
	}
	// Outside every region: transparent, no reads.
	n := f.reads.Load()
	far := get(m, "/v1/worlds/mc/tiles/0/100/100.png")
	if far.Code != http.StatusOK || f.reads.Load() != n {
		t.Errorf("far tile: status %d, %d reads", far.Code, f.reads.Load()-n)
	}
	if img, _ := decodePNG(far.Body.Bytes()); img == nil || img.NRGBAAt(10, 10).A != 0 {
		t.Error("far tile is not transparent")
	}
}

func TestTileUngeneratedTransparent(t *testing.T) {
	f := newFake()
	f.ungenerated[geom.Chunk{X: 2, Z: 3}] = true
	m := newMap(t, f, Options{})
	img, err := decodePNG(get(m, "/v1/worlds/mc/tiles/0/0/0.png").Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a := img.NRGBAAt(2*16+5, 3*16+5).A; a != 0 {
		t.Errorf("ungenerated chunk alpha %d, want 0", a)
	}
	if a := img.NRGBAAt(5, 5).A; a != 255 {
		t.Errorf("generated chunk alpha %d, want 255", a)
	}
}

// TestCoarseTileSamples checks that a zoom-k tile draws, at each pixel,
// the column at its block centre (a Minecraft world's summary column, a
// procedural world's heightfield sample), transparent where that chunk is
// ungenerated or outside the regions' extent, and that it reads each chunk
// holding a sample once: never finer tiles, never beyond the extent.
func TestCoarseTileSamples(t *testing.T) {
	ctx := context.Background()
	for _, w := range []string{"mc", "proc"} {
		for _, zoom := range []int{1, 2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/zoom=%d", w, zoom), func(t *testing.T) {
				f := newFake()
				f.ungenerated[geom.Chunk{X: 40, Z: 7}] = true
				m := newMap(t, f, Options{})
				wi := m.worlds[w]
				s, err := m.renderCoarse(ctx, &wi, zoom, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				stride := int64(1) << zoom
				// The extent is chunks -64..63: blocks [0, 1024) of tile (0, 0).
				n := int(min(1024/stride, TileSize))
				if w == "mc" {
					perAxis := min(int64(n), 64)
					if got, want := f.reads.Load(), perAxis*perAxis; got != want {
						t.Errorf("read %d summaries, want %d (one per chunk holding a sample)", got, want)
					}
				} else {
					wantReliefs := int64(0)
					if zoom > DrainageZoom {
						wantReliefs = int64((n + coarseBlock - 1) / coarseBlock * ((n + coarseBlock - 1) / coarseBlock))
					}
					if got := f.reliefs.Load(); got != wantReliefs {
						t.Errorf("%d relief requests, want %d", got, wantReliefs)
					}
				}
				for j := 0; j < TileSize; j += 3 {
					for i := 0; i < TileSize; i += 5 {
						o := j*TileSize + i
						if i >= n || j >= n {
							if s.Present[o] {
								t.Fatalf("column (%d, %d) beyond the extent is present", i, j)
							}
							continue
						}
						b := geom.Block{X: int64(i)*stride + stride/2, Z: int64(j)*stride + stride/2}
						if w == "mc" && b.Chunk() == (geom.Chunk{X: 40, Z: 7}) {
							if s.Present[o] {
								t.Fatalf("column (%d, %d) of an ungenerated chunk is present", i, j)
							}
							continue
						}
						if w == "proc" {
							// The heightfield samples at (i+0.5)*stride: the
							// fake's SurfaceTile takes the column at its floor.
							b = geom.Block{X: int64(math.Floor((float64(i) + 0.5) * float64(stride))), Z: int64(math.Floor((float64(j) + 0.5) * float64(stride)))}
						}
						want := height(b.X, b.Z)
						if w == "proc" {
							want = topY(float32(want)+1, -64, 320)
						}
						if !s.Present[o] || s.Top[o] != want {
							t.Fatalf("column (%d, %d): present %v top %d, want the column at %v, top %d", i, j, s.Present[o], s.Top[o], b, want)
						}
					}
				}
				// The PNG route draws the same surface.
				img := tileAt(t, m, w, zoom, 0, 0)
				if a := img.NRGBAAt(n/2, n/2).A; a != 255 {
					t.Errorf("pixel inside the extent alpha %d", a)
				}
				if n < TileSize {
					if a := img.NRGBAAt(n, n).A; a != 0 {
						t.Errorf("pixel beyond the extent alpha %d", a)
					}
				}
			})
		}
	}
}

func tileAt(t *testing.T, m *Map, w string, zoom int, tx, tz int64) *image.NRGBA {
	t.Helper()
	b, err := m.Tile(context.Background(), w, zoom, tx, tz)
	if err != nil {
		t.Fatal(err)
	}
	img, err := decodePNG(b)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestTileCacheBound(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{TileEntries: 3})
	// Five tiles inside the regions' box (zoom-0 tiles -2..1).
	five := [5][2]int64{{-2, 0}, {-1, 0}, {0, 0}, {1, 0}, {1, 1}}
	for _, p := range five {
		if _, err := m.Tile(context.Background(), "mc", 0, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if st := m.Stats(); st.TileEntries != 3 || st.TileRenders != 5 {
		t.Errorf("entries %d, renders %d: want 3 and 5", st.TileEntries, st.TileRenders)
	}
	// The oldest went first: tile 0 renders again, tile 4 does not.
	r := m.Stats().TileRenders
	_, _ = m.Tile(context.Background(), "mc", 0, 1, 1)
	if m.Stats().TileRenders != r {
		t.Error("the newest tile was evicted")
	}
	_, _ = m.Tile(context.Background(), "mc", 0, -2, 0)
	if m.Stats().TileRenders != r+1 {
		t.Error("the oldest tile was kept")
	}

	// A byte bound of about two tiles keeps two.
	one, _ := m.Tile(context.Background(), "mc", 0, 1, 1)
	mb := newMap(t, f, Options{TileBytes: int64(2*len(one) + len(one)/2)})
	for _, p := range five {
		if _, err := mb.Tile(context.Background(), "mc", 0, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if st := mb.Stats(); st.TileBytes > mb.opts.TileBytes || st.TileEntries > 3 || st.TileEntries < 1 {
		t.Errorf("byte bound %d: %d entries of %d bytes", mb.opts.TileBytes, st.TileEntries, st.TileBytes)
	}
}

func TestTileInvalidation(t *testing.T) {
	f := newFake()
	f.epoch.Store(1) // the world has changed before: digests are computed
	m := newMap(t, f, Options{})
	first := get(m, "/v1/worlds/mc/tiles/0/0/0.png")
	other := get(m, "/v1/worlds/mc/tiles/0/1/0.png")
	parent := get(m, "/v1/worlds/mc/tiles/1/0/0.png")
	far := get(m, "/v1/worlds/mc/tiles/1/-1/-1.png")
	renders := m.Stats().TileRenders
	f.bump(geom.Chunk{X: 3, Z: 4}) // in tile (0, 0) only
	again := get(m, "/v1/worlds/mc/tiles/0/0/0.png")
	if again.Header().Get("ETag") == first.Header().Get("ETag") {
		t.Error("the ETag did not change with the terrain")
	}
	if again.Body.String() == first.Body.String() {
		t.Error("the tile was not drawn again")
	}
	if m.Stats().TileRenders != renders+1 || m.Stats().TileStale != 1 {
		t.Errorf("renders %d stale %d after the change, want %d and 1", m.Stats().TileRenders, m.Stats().TileStale, renders+1)
	}
	if o := get(m, "/v1/worlds/mc/tiles/0/1/0.png"); o.Header().Get("ETag") != other.Header().Get("ETag") || m.Stats().TileRenders != renders+1 {
		t.Error("an unchanged neighbour was invalidated")
	}
	if p := get(m, "/v1/worlds/mc/tiles/1/0/0.png"); p.Header().Get("ETag") == parent.Header().Get("ETag") {
		t.Error("the parent's ETag did not change")
	}
	if p := get(m, "/v1/worlds/mc/tiles/1/-1/-1.png"); p.Header().Get("ETag") != far.Header().Get("ETag") {
		t.Error("an unrelated parent's ETag changed")
	}
	// An old ETag is no longer 304.
	if nm := get(m, "/v1/worlds/mc/tiles/0/0/0.png", "If-None-Match", first.Header().Get("ETag")); nm.Code != http.StatusOK {
		t.Errorf("old ETag: status %d, want 200", nm.Code)
	}
}

func TestTileCorruptEntryRerendered(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{})
	good, err := m.Tile(context.Background(), "proc", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := string(good)
	k := tileKey{tileID: tileID{world: "proc", zoom: 0}, producer: "procgen@test", renderer: RendererVersion}
	e, ok := m.tiles.Peek(k)
	if !ok {
		t.Fatal("tile not cached")
	}
	e.png = append([]byte(nil), e.png...)
	e.png[100] ^= 0xff // damage the stored copy
	got, err := m.Tile(context.Background(), "proc", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want || m.Stats().TileCorrupt != 1 || m.Stats().TileRenders != 2 {
		t.Errorf("corrupt %d renders %d; same bytes %v", m.Stats().TileCorrupt, m.Stats().TileRenders, string(got) == want)
	}
}

func TestTileSharedRender(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{})
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := m.Tile(context.Background(), "mc", 0, 1, 1)
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	st := m.Stats()
	if st.TileRenders != 1 {
		t.Errorf("%d renders for 8 concurrent requests, want 1", st.TileRenders)
	}
	// Every request but the one that rendered either joined its render
	// or found the tile cached.
	if st.TileShared+st.TileHits != 7 {
		t.Errorf("%d shared + %d hits for 8 concurrent requests, want 7", st.TileShared, st.TileHits)
	}
}

// TestTileRenderPanic: a render that panics answers 500, is counted and
// logged, caches nothing and does not poison the tile: the next request
// renders again.
func TestTileRenderPanic(t *testing.T) {
	f := newFake()
	var calls atomic.Int64
	f.hook = func(context.Context) error {
		calls.Add(1)
		panic("summary bug")
	}
	var logged syncBuffer
	m := newMap(t, f, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	for i := range 2 {
		rec := get(m, "/v1/worlds/mc/tiles/0/0/0.png")
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusInternalServerError ||
			body.Error.Code != codeInternal || !strings.Contains(body.Error.Message, "summary bug") {
			t.Fatalf("request %d: %d %s, want a 500 naming the panic", i, rec.Code, rec.Body)
		}
	}
	st := m.Stats()
	if calls.Load() != 2 || st.RenderErrors != 2 || st.TileRenders != 0 || st.TileEntries != 0 {
		t.Errorf("%d summary calls, stats %+v: want 2 calls, 2 render errors, nothing rendered or cached", calls.Load(), st)
	}
	if n := strings.Count(logged.String(), `level=ERROR msg="flight: load panicked"`); n != 2 {
		t.Errorf("%d panics logged, want 2:\n%s", n, logged.String())
	}
}

// TestTileRenderAbandoned: a render whose every requester has left is
// cancelled, is not counted as a failure, and the next request renders
// afresh.
func TestTileRenderAbandoned(t *testing.T) {
	f := newFake()
	entered := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	var block atomic.Bool
	block.Store(true)
	f.hook = func(ctx context.Context) error {
		if !block.Load() {
			return nil
		}
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		select {
		case stopped <- ctx.Err():
		default:
		}
		return ctx.Err()
	}
	m := newMap(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Tile(ctx, "mc", 0, 0, 0)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoning request: %v, want context.Canceled", err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the render saw %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned render was not cancelled")
	}
	block.Store(false)
	if _, err := m.Tile(context.Background(), "mc", 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.RenderErrors != 0 || st.TileRenders != 1 || st.TileEntries != 1 {
		t.Errorf("stats %+v: want no render error, one render, one cached tile", st)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRouteErrors(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{})
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/worlds/mc/tiles/9/0/0.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/-1/0/0.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/01/0/0.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/a/0/0.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/0/x/0.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/0/0/0", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/0/0/99999999.png", 400, "bad_request"},
		{"/v1/worlds/mc/tiles/8/0/257.png", 400, "bad_request"},
		{"/v1/worlds/nope/tiles/0/0/0.png", 404, "not_found"},
		{"/v1/worlds/mc/meshes/0/0?quality=best", 400, "bad_request"},
		{"/v1/worlds/nope/meshes/0/0", 404, "not_found"},
		{"/v1/worlds/mc/meshes/0/q", 400, "bad_request"},
		{"/v1/map/regions/nope/memory?minX=0&minZ=0&maxX=1&maxZ=1", 404, "not_found"},
		{"/v1/map/regions/m/memory?minX=0&minZ=0&maxX=256&maxZ=255", 400, "bad_request"},
		{"/v1/map/regions/m/memory?minX=0&minZ=0&maxX=1", 400, "bad_request"},
		{"/v1/map/regions/m/memory?minX=5&minZ=0&maxX=1&maxZ=1", 400, "bad_request"},
		{"/v1/map/regions/m/memory?minX=0&minZ=0&maxX=1&maxZ=1e3", 400, "bad_request"},
		{"/v1/map/regions/nope/cached", 404, "not_found"},
		{"/v1/map/regions/nope/deliveries", 404, "not_found"},
		{"/v1/map/regions/nope/deliveries/stream", 404, "not_found"},
		{"/v1/map/regions/m/inspect?x=1", 400, "bad_request"},
		{"/v1/map/regions/m/inspect?x=1&z=zz", 400, "bad_request"},
		{"/v1/map/regions/nope/inspect?x=1&z=2", 404, "not_found"},
		{"/v1/map/nothing", 404, "not_found"},
	} {
		rec := get(m, tc.path)
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d %s", tc.path, rec.Code, rec.Body, tc.status, tc.code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", tc.path, ct)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/map/worlds", nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
	// A failing backend is a 500 JSON error, never cached.
	bad := newFake()
	bad.failErr = context.DeadlineExceeded
	mb := newMap(t, bad, Options{})
	if rec := get(mb, "/v1/worlds/mc/tiles/0/0/0.png"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("failing render: %d %s, want 503", rec.Code, rec.Body)
	}
	if mb.Stats().TileEntries != 0 {
		t.Error("a failed render was cached")
	}
}

func TestJSONRoutes(t *testing.T) {
	f := newFake()
	f.epoch.Store(7)
	f.cells = []MemoryCell{{X: 1, Z: 2, Cause: "safety", Tier: "static", State: StateActive, TTLLeft: -1}, {X: 90, Z: 90, Cause: "biome"}}
	f.cached = []CachedLocation{{X: 1, Y: 65, Z: 2, Stage: StageHot, Sink: "general"}, {X: 3, Y: 66, Z: 4, Stage: StageCold}}
	f.feed.Publish(Delivery{X: 5, Y: 70, Z: 6, Sink: "general", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)})
	m := newMap(t, f, Options{})
	decode := func(path string, v any) {
		t.Helper()
		rec := get(m, path)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var worlds struct {
		Worlds []struct {
			Name, Kind, Producer string
			Epoch                uint64
			MinY, MaxY           int
		}
	}
	decode("/v1/map/worlds", &worlds)
	if len(worlds.Worlds) != 2 || worlds.Worlds[0].Name != "mc" || worlds.Worlds[0].Kind != "minecraft" || worlds.Worlds[0].Epoch != 7 || worlds.Worlds[1].Kind != "procedural" || worlds.Worlds[0].MinY != -64 {
		t.Errorf("worlds: %+v", worlds)
	}
	var regions struct {
		Regions []struct {
			Name, World string
			Shape       map[string]any
			Chunks      [4]int64
			Border      *Border
		}
	}
	decode("/v1/map/regions", &regions)
	if len(regions.Regions) != 2 || regions.Regions[0].Name != "m" || regions.Regions[0].Border != nil || regions.Regions[1].Border == nil || regions.Regions[0].Chunks != [4]int64{-64, -64, 63, 63} || regions.Regions[0].Shape["kind"] != "circle" {
		t.Errorf("regions: %+v", regions)
	}
	var mem struct {
		Now   float64
		Cells []MemoryCell
	}
	decode("/v1/map/regions/m/memory?minX=0&minZ=0&maxX=10&maxZ=10", &mem)
	if mem.Now != 1733000000.5 || len(mem.Cells) != 1 || mem.Cells[0] != f.cells[0] {
		t.Errorf("memory: %+v", mem)
	}
	var cached struct {
		Locations []CachedLocation
		Truncated bool
	}
	decode("/v1/map/regions/m/cached", &cached)
	if len(cached.Locations) != 2 || cached.Locations[0] != f.cached[0] || cached.Truncated {
		t.Errorf("cached: %+v", cached)
	}
	var dl struct{ Deliveries []map[string]any }
	decode("/v1/map/regions/m/deliveries", &dl)
	if len(dl.Deliveries) != 1 || dl.Deliveries[0]["at"] != "2026-01-02T03:04:05.000000006Z" || dl.Deliveries[0]["sink"] != "general" {
		t.Errorf("deliveries: %+v", dl)
	}
	var in map[string]any
	decode("/v1/map/regions/m/inspect?x=-17&z=33", &in)
	if in["safe"] != true || in["reason"] != "accepted" || in["chunk"].(map[string]any)["x"] != float64(-2) || in["memory"] != nil {
		t.Errorf("inspect: %+v", in)
	}
	if _, ok := in["cached"].([]any); !ok {
		t.Errorf("inspect cached is not a list: %+v", in["cached"])
	}
}

func TestCachedTruncated(t *testing.T) {
	f := newFake()
	for i := range MaxCached + 5 {
		f.cached = append(f.cached, CachedLocation{X: int64(i), Stage: StageCold})
	}
	m := newMap(t, f, Options{CachedTTL: -1})
	var cached struct {
		Locations []CachedLocation
		Truncated bool
	}
	if err := json.Unmarshal(get(m, "/v1/map/regions/m/cached").Body.Bytes(), &cached); err != nil {
		t.Fatal(err)
	}
	if len(cached.Locations) != MaxCached || !cached.Truncated {
		t.Errorf("%d locations, truncated %v", len(cached.Locations), cached.Truncated)
	}
}

func TestDeliveryStream(t *testing.T) {
	f := newFake()
	m := newMap(t, f, Options{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/map/regions/m/deliveries/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	// The opening comment arrives before any delivery: the stream is
	// flushed, and subscribed.
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("first line %q, %v", line, err)
	}
	f.feed.Publish(Delivery{X: 1, Y: 64, Z: -2, Sink: "login", At: time.Unix(1, 0)})
	var event, data string
	for data == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimSpace(strings.TrimPrefix(line, "data: "))
		}
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(data), &d); err != nil || event != "delivery" || d["sink"] != "login" || d["z"] != float64(-2) {
		t.Fatalf("event %q data %q (%v)", event, data, err)
	}
	// A gone client ends the subscription.
	cancel()
	eventually.True(t, 10*time.Second, "the subscription ended with its client", func() bool {
		f.feed.mu.Lock()
		defer f.feed.mu.Unlock()
		return len(f.feed.subs) == 0
	})
}

func TestMeshServe(t *testing.T) {
	f := newFake()
	cache := meshcache.New()
	m := newMap(t, f, Options{Meshes: cache})
	rec := get(m, "/v1/worlds/mc/meshes/0/-1")
	if rec.Code != http.StatusOK || rec.Header().Get("X-RTP-Mesh-Quality") != "full" || rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("full: %d %q %s", rec.Code, rec.Header().Get("X-RTP-Mesh-Quality"), rec.Body.String()[:min(rec.Body.Len(), 200)])
	}
	mm, err := mesh.Decode(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if mm.Quality != mesh.Full || mm.VertexCount() != MeshResolution*MeshResolution || mm.OriginZ != -TileSize {
		t.Errorf("full mesh: quality %v, %d vertices, origin z %d", mm.Quality, mm.VertexCount(), mm.OriginZ)
	}
	if cache.Len() != 1 || m.Stats().MeshBuilds != 1 {
		t.Errorf("cache %d entries, %d builds after one full mesh", cache.Len(), m.Stats().MeshBuilds)
	}
	again := get(m, "/v1/worlds/mc/meshes/0/-1?quality=full")
	if again.Body.String() != rec.Body.String() || m.Stats().MeshHits != 1 || m.Stats().MeshBuilds != 1 {
		t.Errorf("second full request: hits %d builds %d", m.Stats().MeshHits, m.Stats().MeshBuilds)
	}
	if nm := get(m, "/v1/worlds/mc/meshes/0/-1", "If-None-Match", rec.Header().Get("ETag")); nm.Code != http.StatusNotModified {
		t.Errorf("mesh If-None-Match: %d", nm.Code)
	}
	low := get(m, "/v1/worlds/mc/meshes/0/-1?quality=low")
	lm, err := mesh.Decode(low.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if low.Header().Get("X-RTP-Mesh-Quality") != "low" || lm.Quality != mesh.Low || lm.VertexCount() >= mm.VertexCount() || cache.Len() != 1 {
		t.Errorf("low: header %q quality %v, %d vertices, cache %d", low.Header().Get("X-RTP-Mesh-Quality"), lm.Quality, lm.VertexCount(), cache.Len())
	}
	if low.Header().Get("ETag") == rec.Header().Get("ETag") {
		t.Error("low and full share an ETag")
	}
	// A change under the tile: a new mesh, not the cached one.
	f.epoch.Add(1)
	f.bump(geom.Chunk{X: 1, Z: -30})
	changed := get(m, "/v1/worlds/mc/meshes/0/-1")
	if changed.Header().Get("ETag") == rec.Header().Get("ETag") || m.Stats().MeshBuilds != 3 {
		t.Errorf("after a change: same ETag %v, builds %d", changed.Header().Get("ETag") == rec.Header().Get("ETag"), m.Stats().MeshBuilds)
	}
	// All ungenerated: 404.
	for cz := int64(-65); cz <= -32; cz++ {
		for cx := int64(-33); cx <= 0; cx++ {
			f.ungenerated[geom.Chunk{X: cx, Z: cz}] = true
		}
	}
	if rec := get(m, "/v1/worlds/mc/meshes/-1/-2"); rec.Code != http.StatusNotFound {
		t.Errorf("ungenerated mesh: %d %s", rec.Code, rec.Body)
	}
}

func TestStaticPage(t *testing.T) {
	m := newMap(t, newFake(), Options{})
	rec := get(m, "/map/")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("/map/: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec := get(m, "/map"); rec.Code != http.StatusMovedPermanently {
		t.Errorf("/map: %d", rec.Code)
	}
}
