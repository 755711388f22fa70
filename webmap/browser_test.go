package webmap_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/terrain/mesh"
	"github.com/rtpengine/rtp/webmap"
	"github.com/rtpengine/rtp/webmap/enginemap"
	"github.com/rtpengine/rtp/webmap/internal/browsertest"
)

// The browser tests drive the page in headless Chromium. They need a
// chromium binary (Debian: apt-get install chromium; or $RTP_CHROMIUM) and
// are skipped, saying so, without one.

const (
	winW, winH = 1000, 700
)

func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	p := browsertest.FindChromium()
	if p == "" {
		t.Skip("browser tests skipped: no chromium binary found (install Debian's chromium or set RTP_CHROMIUM)")
	}
	if testing.Short() {
		t.Skip("browser tests skipped in -short mode: they start a browser")
	}
	return p
}

// countingHandler counts requests by path prefix on top of h.
type countingHandler struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := "other"
	switch {
	case strings.Contains(r.URL.Path, "/tiles/"):
		kind = "tile"
	case strings.Contains(r.URL.Path, "/meshes/"):
		kind = "mesh-" + r.URL.Query().Get("quality")
	}
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
	c.mu.Unlock()
	c.h.ServeHTTP(w, r)
}

func (c *countingHandler) count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[kind]
}

type debugInfo struct {
	Started bool    `json:"started"`
	World   string  `json:"world"`
	Region  string  `json:"region"`
	Epoch   float64 `json:"epoch"`
	Pending int     `json:"pending"`
	View    struct {
		CX, CZ, Zoom float64
		TileZoom     int `json:"tileZoom"`
		Width        int `json:"width"`
		Height       int `json:"height"`
	} `json:"view"`
	Tiles struct {
		FromArchive int `json:"fromArchive"`
		FromNetwork int `json:"fromNetwork"`
		Errors      int `json:"errors"`
		Visible     int `json:"visible"`
		Ready       int `json:"ready"`
		Drawn       int `json:"drawn"`
	} `json:"tiles"`
	Coarse struct {
		Zoom        int `json:"zoom"`
		Visible     int `json:"visible"`
		Ready       int `json:"ready"`
		FromNetwork int `json:"fromNetwork"`
	} `json:"coarse"`
	Drawn struct {
		Tiles          int `json:"tiles"`
		MemoryCells    int `json:"memoryCells"`
		ProbationCells int `json:"probationCells"`
		CachedMarkers  int `json:"cachedMarkers"`
		Subspaces      int `json:"subspaces"`
		Deliveries     int `json:"deliveries"`
		Claims         int `json:"claims"`
	} `json:"drawn"`
	Cached     int `json:"cached"`
	Deliveries int `json:"deliveries"`
	Claims     int `json:"claims"`
	View3D     *struct {
		WebGL    int    `json:"webgl"`
		Quality  string `json:"quality"`
		Frames   int    `json:"frames"`
		Vertices int    `json:"vertices"`
	} `json:"view3d"`
	Marks struct {
		FirstPaint *float64 `json:"firstPaint"`
		TileFill   *float64 `json:"tileFill"`
	} `json:"marks"`
	Archive struct {
		Hits     int `json:"hits"`
		Misses   int `json:"misses"`
		Puts     int `json:"puts"`
		Rejected int `json:"rejected"`
		Corrupt  int `json:"corrupt"`
		Cleared  int `json:"cleared"`
		Errors   int `json:"errors"`
	} `json:"archive"`
}

type archiveEntry struct {
	Key   string  `json:"key"`
	Epoch float64 `json:"epoch"`
	Len   int     `json:"len"`
}

// page is one browser tab on a server.
type page struct {
	t   *testing.T
	b   *browsertest.Browser
	url string
}

func openPage(t *testing.T, chromium, base, hash string) *page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b, err := browsertest.Launch(ctx, chromium, t.TempDir(), winW, winH)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p := &page{t: t, b: b, url: base + "/map/" + hash}
	p.do(chromedp.Navigate(p.url))
	p.idle()
	return p
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.Ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v (page errors: %v)", err, p.b.Errors())
	}
}

// eval evaluates expr, awaiting a promise, and decodes its JSON value into
// res (nil: ignored).
func (p *page) eval(expr string, res any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.Ctx, 60*time.Second)
	defer cancel()
	raw, err := browsertest.Eval[[]byte](ctx, `(async () => { const v = await (`+expr+`); return v === undefined ? null : v; })()`)
	if err != nil {
		p.t.Fatalf("evaluate %s: %v (page errors: %v)", expr, err, p.b.Errors())
	}
	if res != nil {
		if err := json.Unmarshal(raw, res); err != nil {
			p.t.Fatalf("evaluate %s: decode %s: %v", expr, raw, err)
		}
	}
}

func (p *page) debug() debugInfo {
	p.t.Helper()
	var d debugInfo
	p.eval(`window.rtpMap.debug()`, &d)
	return d
}

func (p *page) idle() {
	p.t.Helper()
	if err := browsertest.Idle(p.b.Ctx, 90*time.Second); err != nil {
		p.t.Fatalf("%v (page errors: %v)", err, p.b.Errors())
	}
}

// waitFor polls the JavaScript condition until it holds.
func (p *page) waitFor(cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.Ctx, 100*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		p.t.Fatalf("waiting for %s: %v (page errors: %v)", cond, err, p.b.Errors())
	}
}

func (p *page) noErrors() {
	p.t.Helper()
	if errs := p.b.Errors(); len(errs) > 0 {
		p.t.Errorf("page reported %d errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

// pixel returns the RGBA of the base (terrain) canvas at block (x, z).
func (p *page) pixel(x, z float64) [4]int {
	p.t.Helper()
	var px [4]int
	p.eval(fmt.Sprintf(`(() => {
		const [sx, sy] = window.rtpMap.toScreen(%v, %v);
		const c = document.getElementById('base');
		const d = devicePixelRatio || 1;
		return Array.from(c.getContext('2d').getImageData(Math.floor(sx*d), Math.floor(sy*d), 1, 1).data);
	})()`, x, z), &px)
	return px
}

func (p *page) entries() []archiveEntry {
	p.t.Helper()
	var es []archiveEntry
	p.eval(`window.rtpMap.archive.list()`, &es)
	return es
}

func (p *page) reload() {
	p.t.Helper()
	p.do(chromedp.Reload())
	p.idle()
}

// waitArchived waits until the archive holds at least n entries and no
// write is pending.
func (p *page) waitArchived(n int) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`window.rtpMap.archive.list().then(l => l.length >= %d)`, n))
}

func near(a [4]int, r, g, b int) bool {
	d := func(x, y int) bool { return x-y <= 2 && y-x <= 2 }
	return d(a[0], r) && d(a[1], g) && d(a[2], b) && a[3] == 255
}

func TestBrowserFake(t *testing.T) {
	chromium := chromiumOrSkip(t)
	fake, err := browsertest.NewFake(os.DirFS("static"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)

	// Start at zoom 0 centred inside tile (0, 0).
	p := openPage(t, chromium, srv.URL, "#x=256&z=256&zoom=0")
	d := p.debug()
	if !d.Started || d.World != "world" || d.Region != "default" {
		t.Fatalf("page state %+v, want world/default started", d)
	}
	if d.Marks.FirstPaint == nil || d.Marks.TileFill == nil {
		t.Fatalf("marks %+v: first paint or tile fill missing", d.Marks)
	}
	t.Logf("headless Chromium, fake service, %dx%d map: first paint %.1f ms, tile fill %.1f ms (%d tiles)",
		d.View.Width, d.View.Height, *d.Marks.FirstPaint, *d.Marks.TileFill, d.Tiles.Visible)

	t.Run("Tiles", func(t *testing.T) {
		p.t = t
		for _, c := range []struct {
			zoom   float64
			x, z   float64
			tz     int
			tx, ty int
		}{
			{0, 256, 256, 0, 0, 0},
			{0, -10, 300, 0, -1, 0},
			{0, 300, -5, 0, 0, -1},
			{1, 700, 200, 1, 0, 0},
			{1, -1200, 100, 1, -2, 0},
			{2.5, 3000, 3000, 2, 1, 1},
		} {
			p.eval(fmt.Sprintf(`window.rtpMap.setView(%v, %v, %v)`, c.x, c.z, c.zoom), nil)
			p.idle()
			got := p.pixel(c.x, c.z)
			want := browsertest.TileColour(c.tz, c.tx, c.ty)
			if !near(got, int(want.R), int(want.G), int(want.B)) {
				t.Errorf("zoom %v block (%v, %v): pixel %v, want tile %d/%d/%d colour %v", c.zoom, c.x, c.z, got, c.tz, c.tx, c.ty, want)
			}
		}
		if d := p.debug(); d.Tiles.Errors != 0 {
			t.Errorf("%d tile errors", d.Tiles.Errors)
		}
	})

	// A view of tiles not loaded yet: the page requests the tiles two
	// zooms up first, draws them scaled while its own load, then its own.
	t.Run("CoarseFirst", func(t *testing.T) {
		p.t = t
		release := fake.Hold(1)
		defer release()
		before := len(fake.TileZooms())
		const x, z = 20000.5, 20100.5
		p.eval(fmt.Sprintf(`window.rtpMap.setView(%v, %v, 1.2)`, x, z), nil)
		p.waitFor(fmt.Sprintf(`(() => {
			const dbg = window.rtpMap.debug();
			if (dbg.coarse.zoom !== 3 || dbg.coarse.visible === 0 || dbg.coarse.ready !== dbg.coarse.visible) return false;
			const [sx, sy] = window.rtpMap.toScreen(%v, %v);
			const d = devicePixelRatio || 1;
			return document.getElementById('base').getContext('2d').getImageData(Math.floor(sx*d), Math.floor(sy*d), 1, 1).data[3] === 255;
		})()`, x, z))
		coarse := browsertest.TileColour(3, 4, 4)
		if px := p.pixel(x, z); !near(px, int(coarse.R), int(coarse.G), int(coarse.B)) {
			t.Errorf("while the view's tiles load: pixel %v, want the zoom-3 tile's colour %v", px, coarse)
		}
		if d := p.debug(); d.Coarse.Zoom != 3 || d.Coarse.Visible == 0 || d.Coarse.Ready != d.Coarse.Visible || d.Tiles.Drawn != 0 {
			t.Errorf("while the view's tiles load: coarse %+v, tiles %+v", d.Coarse, d.Tiles)
		}
		zooms := fake.TileZooms()[before:]
		seenFine := false
		for i, zm := range zooms {
			switch zm {
			case 1:
				seenFine = true
			case 3:
				if seenFine {
					t.Fatalf("tile requests by zoom %v: a coarse one (#%d) after the view's own", zooms, i)
				}
			}
		}
		release()
		p.idle()
		fine := browsertest.TileColour(1, 20000/1024, 20100/1024)
		if px := p.pixel(x, z); !near(px, int(fine.R), int(fine.G), int(fine.B)) {
			t.Errorf("once loaded: pixel %v, want the zoom-1 tile's colour %v", px, fine)
		}
	})

	t.Run("Overlays", func(t *testing.T) {
		p.t = t
		p.eval(`window.rtpMap.setView(0, 0, 0)`, nil)
		p.idle()
		// The stream sends one delivery beyond the two recent ones.
		p.waitFor(`window.rtpMap.debug().drawn.deliveries === 3`)
		d := p.debug()
		probation := 0
		for _, c := range fake.Cells {
			if c.State == "probation" {
				probation++
			}
		}
		if d.Drawn.MemoryCells != len(fake.Cells) || d.Drawn.ProbationCells != probation {
			t.Errorf("drew %d memory cells (%d probation), the service has %d (%d)", d.Drawn.MemoryCells, d.Drawn.ProbationCells, len(fake.Cells), probation)
		}
		if d.Drawn.CachedMarkers != len(fake.Cached) {
			t.Errorf("drew %d cached markers, the service has %d", d.Drawn.CachedMarkers, len(fake.Cached))
		}
		groups := map[int]bool{}
		for _, l := range fake.Cached {
			if l.Group > 0 {
				groups[l.Group] = true
			}
		}
		if d.Drawn.Subspaces != len(groups) || len(groups) == 0 {
			t.Errorf("drew %d group subspaces, the service has %d", d.Drawn.Subspaces, len(groups))
		}
		if d.Drawn.Claims != len(fake.Claims) {
			t.Errorf("drew %d claims, the service has %d", d.Drawn.Claims, len(fake.Claims))
		}
		// Turning a layer off removes its marks.
		p.eval(`window.rtpMap.setLayers({memory: false, cached: false})`, nil)
		p.idle()
		if d := p.debug(); d.Drawn.MemoryCells != 0 || d.Drawn.CachedMarkers != 0 || d.Drawn.Subspaces != 0 || d.Drawn.Claims != len(fake.Claims) {
			t.Errorf("with memory and cached off: drawn %+v", d.Drawn)
		}
		p.eval(`window.rtpMap.setLayers({memory: true, cached: true})`, nil)
		p.idle()
		// Hovering a memory cell shows its TTL.
		var tip string
		p.eval(`(() => { const [sx, sy] = window.rtpMap.toScreen(8, 8); const r = document.getElementById('overlay').getBoundingClientRect();
			document.getElementById('overlay').dispatchEvent(new PointerEvent('pointermove', {clientX: r.left + sx, clientY: r.top + sy, bubbles: true}));
			return document.getElementById('tip').hidden ? '' : document.getElementById('tip').textContent; })()`, &tip)
		if !strings.Contains(tip, "safety") || !strings.Contains(tip, "left") {
			t.Errorf("hover tip over chunk 0,0 = %q, want its cause and TTL", tip)
		}
	})

	t.Run("Inspect", func(t *testing.T) {
		p.t = t
		var pos [2]float64
		p.eval(`(() => { const [sx, sy] = window.rtpMap.toScreen(100.5, 50.5); const r = document.getElementById('overlay').getBoundingClientRect(); return [r.left + sx, r.top + sy]; })()`, &pos)
		before := fake.Requests("inspect")
		p.do(chromedp.MouseClickXY(pos[0], pos[1]))
		p.waitFor(`document.querySelector('#inspect dd[data-field="biome"]') !== null`)
		var fields map[string]string
		p.eval(`Object.fromEntries(Array.from(document.querySelectorAll('#inspect dd')).map(e => [e.dataset.field, e.textContent]))`, &fields)
		if fake.Requests("inspect") != before+1 {
			t.Errorf("click made %d inspect requests, want 1", fake.Requests("inspect")-before)
		}
		for k, want := range map[string]string{
			"block": "100, 50", "chunk": "6, 3", "biome": "minecraft:plains", "ground": "minecraft:grass_block[snowy=false]",
			"y": "65", "safe": "yes", "reason": "accepted",
		} {
			if fields[k] != want {
				t.Errorf("panel %s = %q, want %q", k, fields[k], want)
			}
		}
		if !strings.Contains(fields["memory"], "safety") || !strings.Contains(fields["cached"], "hot/general") {
			t.Errorf("panel memory %q cached %q", fields["memory"], fields["cached"])
		}
	})

	t.Run("View3D", func(t *testing.T) {
		p.t = t
		p.eval(`window.rtpMap.open3d(0, 0)`, nil)
		p.waitFor(`window.rtpMap.debug().view3d && window.rtpMap.debug().view3d.quality === 'full'`)
		d := p.debug()
		if d.View3D.WebGL == 0 {
			t.Fatal("no WebGL context")
		}
		var cover float64
		p.eval(`window.rtpMap.coverage3d()`, &cover)
		if cover < 0.05 {
			t.Errorf("3-D view covers %.3f of its canvas, want the terrain drawn", cover)
		}
		if d.View3D.Vertices != 33*33 {
			t.Errorf("3-D view shows %d vertices, want the full mesh's %d", d.View3D.Vertices, 33*33)
		}
		if fake.Requests("mesh-low") != 1 || fake.Requests("mesh-full") != 1 {
			t.Errorf("mesh requests low %d full %d, want 1 and 1", fake.Requests("mesh-low"), fake.Requests("mesh-full"))
		}
		t.Logf("WebGL %d, %d frames, coverage %.2f", d.View3D.WebGL, d.View3D.Frames, cover)
	})

	t.Run("MeshDecoder", func(t *testing.T) {
		p.t = t
		// The page's decoder against terrain/mesh.Decode on the same bytes:
		// valid encodings of both index widths and mutated ones.
		full, err := mesh.Encode(browsertest.GridMesh(mesh.Full))
		if err != nil {
			t.Fatal(err)
		}
		wide := browsertest.GridMesh(mesh.Full)
		for len(wide.Vertices)/3 <= 1<<16 {
			wide.Vertices = append(wide.Vertices, 1, 64, 1)
			wide.Normals = append(wide.Normals, 0, 1, 0)
		}
		wideEnc, err := mesh.Encode(wide)
		if err != nil {
			t.Fatal(err)
		}
		inputs := [][]byte{full, wideEnc, full[:len(full)-1], full[:40], {}}
		rng := rand.New(rand.NewPCG(7, 9))
		for range 150 {
			b := append([]byte(nil), full...)
			switch rng.IntN(3) {
			case 0:
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			case 1:
				b = b[:rng.IntN(len(b))]
			default:
				b = append(b, byte(rng.IntN(256)))
			}
			inputs = append(inputs, b)
		}
		enc := make([]string, len(inputs))
		for i, b := range inputs {
			enc[i] = base64.StdEncoding.EncodeToString(b)
		}
		arg, _ := json.Marshal(enc)
		type result struct {
			OK      bool      `json:"ok"`
			Err     string    `json:"err"`
			Quality string    `json:"quality"`
			Origin  [2]int64  `json:"origin"`
			Pos     []float64 `json:"pos"`
			Norm    []float64 `json:"norm"`
			Idx     []int     `json:"idx"`
		}
		var got []result
		p.eval(`import('/map/static/js/mesh.js').then(m => `+string(arg)+`.map(s => {
			const bin = atob(s); const u = new Uint8Array(bin.length);
			for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
			try {
				const r = m.decodeMesh(u.buffer);
				return {ok: true, quality: r.quality, origin: [r.originX, r.originZ], pos: Array.from(r.positions), norm: Array.from(r.normals), idx: Array.from(r.indices)};
			} catch (e) { return {ok: false, err: String(e.message)}; }
		}))`, &got)
		if len(got) != len(inputs) {
			t.Fatalf("%d results for %d inputs", len(got), len(inputs))
		}
		for i, b := range inputs {
			want, werr := mesh.Decode(b)
			r := got[i]
			if r.OK != (werr == nil) {
				t.Errorf("input %d (%d bytes): page ok=%v (%s), Go error %v", i, len(b), r.OK, r.Err, werr)
				continue
			}
			if !r.OK {
				if !strings.HasPrefix(r.Err, "mesh:") {
					t.Errorf("input %d: page error %q lacks the mesh: prefix", i, r.Err)
				}
				continue
			}
			if r.Quality != want.Quality.String() || r.Origin != [2]int64{want.OriginX, want.OriginZ} ||
				len(r.Pos) != len(want.Vertices) || len(r.Idx) != len(want.Indices) {
				t.Errorf("input %d: page decoded %s at %v with %d/%d, Go %v at %d,%d with %d/%d", i, r.Quality, r.Origin,
					len(r.Pos), len(r.Idx), want.Quality, want.OriginX, want.OriginZ, len(want.Vertices), len(want.Indices))
				continue
			}
			for k, v := range want.Vertices {
				if d := r.Pos[k] - float64(v); d > 1e-3 || d < -1e-3 {
					t.Errorf("input %d: position component %d is %v, Go %v", i, k, r.Pos[k], v)
					break
				}
			}
			for k, v := range want.Normals {
				if d := r.Norm[k] - float64(v); d > 1e-5 || d < -1e-5 {
					t.Errorf("input %d: normal component %d is %v, Go %v", i, k, r.Norm[k], v)
					break
				}
			}
			for k, v := range want.Indices {
				if r.Idx[k] != int(v) {
					t.Errorf("input %d: index %d is %d, Go %d", i, k, r.Idx[k], v)
					break
				}
			}
		}
	})

	t.Run("ArchiveBounds", func(t *testing.T) {
		p.t = t
		var got struct {
			AfterD   []string `json:"afterD"`
			AfterE   []string `json:"afterE"`
			AfterF   []string `json:"afterF"`
			Totals   struct{ Count, Bytes int }
			Stale    bool `json:"stale"`
			Rejected int  `json:"rejected"`
			Big      bool `json:"big"`
		}
		p.eval(`import('/map/static/js/archive.js').then(async (m) => {
			const a = new m.Archive({name: 'bounds-test', maxEntries: 3, maxBytes: 1000});
			await a.setEpoch('w', 1);
			const body = (n, v) => new Uint8Array(n).fill(v).buffer;
			for (const k of ['a', 'b', 'c']) await a.put(k, 'w', 1, body(100, k.charCodeAt(0)));
			await a.get('a', 1); await a.touch('a'); // a is now the most recently used
			await a.put('d', 'w', 1, body(100, 1));  // 4 entries: b goes
			const afterD = (await a.keys()).sort();
			await a.put('e', 'w', 1, body(700, 2));  // 4 entries: c goes; 900 bytes
			const afterE = (await a.keys()).sort();
			await a.put('f', 'w', 1, body(300, 3));  // 1200 bytes: a, then d go
			const afterF = (await a.keys()).sort();
			const stale = await a.put('g', 'w', 0, body(10, 4)); // another epoch: discarded
			const big = await a.put('h', 'w', 1, body(2000, 5)); // larger than the bound
			return {afterD, afterE, afterF, totals: await a.totals(), stale, rejected: a.stats.rejected, big};
		})`, &got)
		if fmt.Sprint(got.AfterD) != "[a c d]" || fmt.Sprint(got.AfterE) != "[a d e]" || fmt.Sprint(got.AfterF) != "[e f]" {
			t.Errorf("LRU eviction: after d %v (want [a c d]), after e %v (want [a d e]), after f %v (want [e f])", got.AfterD, got.AfterE, got.AfterF)
		}
		if got.Totals.Count != 2 || got.Totals.Bytes != 1000 {
			t.Errorf("totals %+v, want 2 entries of 1000 bytes", got.Totals)
		}
		if got.Stale || got.Rejected != 1 || got.Big {
			t.Errorf("a write of another epoch stored %v (rejected %d), an oversized one %v: want both discarded", got.Stale, got.Rejected, got.Big)
		}
	})

	t.Run("ReloadFromArchive", func(t *testing.T) {
		p.t = t
		p.eval(`window.rtpMap.setView(256, 256, 0)`, nil)
		p.idle()
		d := p.debug()
		p.waitArchived(d.Tiles.Visible)
		for _, e := range p.entries() {
			if strings.Contains(e.Key, "|low") {
				t.Errorf("archive keeps a low-quality mesh: %s", e.Key)
			}
		}
		tiles, full := fake.Requests("tile"), fake.Requests("mesh-full")
		p.reload()
		d = p.debug()
		if got := fake.Requests("tile"); got != tiles {
			t.Errorf("reload fetched %d tiles, want 0 (all from the archive)", got-tiles)
		}
		if d.Tiles.FromArchive != d.Tiles.Visible || d.Tiles.Drawn != d.Tiles.Visible {
			t.Errorf("after reload: %+v, want every visible tile from the archive", d.Tiles)
		}
		p.eval(`window.rtpMap.open3d(0, 0)`, nil)
		p.waitFor(`window.rtpMap.debug().view3d && window.rtpMap.debug().view3d.quality === 'full'`)
		if got := fake.Requests("mesh-full"); got != full {
			t.Errorf("reload fetched the full mesh %d times, want 0", got-full)
		}
		p.eval(`window.rtpMap.close3d()`, nil)
		if d := p.debug(); d.Marks.FirstPaint != nil {
			t.Logf("reload from the archive: first paint %.1f ms, tile fill %.1f ms", *d.Marks.FirstPaint, *d.Marks.TileFill)
		}
	})

	t.Run("CorruptEntry", func(t *testing.T) {
		p.t = t
		var key string
		p.eval(`window.rtpMap.archive.list().then(l => l.find(e => e.key.includes('|tile|0|0|0|')).key)`, &key)
		var ok bool
		p.eval(fmt.Sprintf(`window.rtpMap.archive.corrupt(%q)`, key), &ok)
		if !ok {
			t.Fatalf("could not corrupt %s", key)
		}
		tiles := fake.Requests("tile")
		p.reload()
		d := p.debug()
		if d.Archive.Corrupt != 1 || fake.Requests("tile") != tiles+1 {
			t.Errorf("corrupt entry: archive %+v, %d tile requests, want 1 corrupt and 1 refetch", d.Archive, fake.Requests("tile")-tiles)
		}
		if px, want := p.pixel(256, 256), browsertest.TileColour(0, 0, 0); !near(px, int(want.R), int(want.G), int(want.B)) {
			t.Errorf("refetched tile pixel %v, want %v", px, want)
		}
	})

	t.Run("EpochClears", func(t *testing.T) {
		p.t = t
		d := p.debug()
		p.waitArchived(d.Tiles.Visible)
		fake.SetEpoch(2)
		tiles := fake.Requests("tile")
		p.eval(`window.rtpMap.refreshWorlds().then(() => true)`, nil)
		p.idle()
		d = p.debug()
		if d.Epoch != 2 || d.Archive.Cleared != 1 {
			t.Errorf("after the epoch change: epoch %v, archive %+v, want epoch 2 and one clear", d.Epoch, d.Archive)
		}
		if got, want := fake.Requests("tile")-tiles, d.Tiles.Visible+d.Coarse.Visible; got != want {
			t.Errorf("after the epoch change the page fetched %d tiles, want the %d visible and their %d coarse previews", got, d.Tiles.Visible, d.Coarse.Visible)
		}
		p.waitArchived(d.Tiles.Visible)
		for _, e := range p.entries() {
			if e.Epoch != 2 {
				t.Errorf("archive entry %s of epoch %v survived the change to 2", e.Key, e.Epoch)
			}
		}
		// A reload draws the new epoch from the archive again.
		tiles = fake.Requests("tile")
		p.reload()
		if got := fake.Requests("tile"); got != tiles {
			t.Errorf("reload after the epoch change fetched %d tiles, want 0", got-tiles)
		}
	})

	p.t = t
	p.noErrors()
}

// TestBrowserReal runs the page against the real web map over a small
// engine on the procedural world.
func TestBrowserReal(t *testing.T) {
	chromium := chromiumOrSkip(t)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	rc := config.DefaultRegion()
	rc.Shape.Radius = 400
	rc.Pulse = 5 * time.Millisecond
	rc.Sinks.General.Capacity = 8
	cfg.Regions[config.DefaultRegionName] = rc
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.New(ctx, spec, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); _ = e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-ran
		_ = e.Close(context.Background())
	})
	b := enginemap.New(e)
	t.Cleanup(b.Close)
	m, err := webmap.New(b, webmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{h: m.Handler()}
	mux := http.NewServeMux()
	mux.Handle("/map/", h)
	mux.Handle("/v1/map/", h)
	mux.Handle("/v1/worlds/", h)
	// The server's claims route, with no claims.
	mux.HandleFunc("GET /v1/worlds/{world}/claims", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"claims":[]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// Wait for the engine to cache a few locations.
	var cached struct {
		Locations []struct{ X, Y, Z int } `json:"locations"`
	}
	if _, ok := eventually.Within(60*time.Second, func() bool {
		resp, err := http.Get(srv.URL + "/v1/map/regions/default/cached")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&cached)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return len(cached.Locations) >= 4
	}); !ok {
		t.Fatalf("the engine cached %d locations in 60 s", len(cached.Locations))
	}

	p := openPage(t, chromium, srv.URL, "")
	d := p.debug()
	t.Logf("headless Chromium, real web map: first paint %.1f ms, tile fill %.1f ms (%d tiles at zoom %d)",
		*d.Marks.FirstPaint, *d.Marks.TileFill, d.Tiles.Visible, d.View.TileZoom)
	if d.Tiles.Errors != 0 || d.Tiles.Drawn != d.Tiles.Visible {
		t.Errorf("tiles %+v, want every visible tile drawn", d.Tiles)
	}
	// The procedural world has terrain everywhere: the centre is opaque.
	if px := p.pixel(0, 0); px[3] != 255 {
		t.Errorf("terrain pixel at the origin %v, want opaque", px)
	}
	p.eval(`window.rtpMap.setLayers({cached: true})`, nil)
	p.idle()
	if d := p.debug(); d.Cached < len(cached.Locations) || d.Drawn.CachedMarkers != d.Cached {
		t.Errorf("page knows %d cached locations and drew %d, the service had %d", d.Cached, d.Drawn.CachedMarkers, len(cached.Locations))
	}

	// Inspect a cached location by clicking it.
	l := cached.Locations[0]
	p.eval(fmt.Sprintf(`window.rtpMap.setView(%d, %d, 0)`, l.X, l.Z), nil)
	p.idle()
	var pos [2]float64
	p.eval(fmt.Sprintf(`(() => { const [sx, sy] = window.rtpMap.toScreen(%v, %v); const r = document.getElementById('overlay').getBoundingClientRect(); return [r.left + sx, r.top + sy]; })()`, float64(l.X)+0.5, float64(l.Z)+0.5), &pos)
	p.do(chromedp.MouseClickXY(pos[0], pos[1]))
	p.waitFor(`document.querySelector('#inspect dd[data-field="safe"]') !== null`)
	var fields map[string]string
	p.eval(`Object.fromEntries(Array.from(document.querySelectorAll('#inspect dd')).map(e => [e.dataset.field, e.textContent]))`, &fields)
	if want := fmt.Sprintf("%d, %d", l.X, l.Z); fields["block"] != want || fields["safe"] != "yes" || fields["y"] != fmt.Sprint(l.Y) {
		t.Errorf("panel of cached location %+v: %v", l, fields)
	}

	// The 3-D view of the tile at the origin.
	p.eval(`window.rtpMap.open3d(0, 0)`, nil)
	p.waitFor(`window.rtpMap.debug().view3d && window.rtpMap.debug().view3d.quality === 'full'`)
	var cover float64
	p.eval(`window.rtpMap.coverage3d()`, &cover)
	if cover < 0.05 {
		t.Errorf("3-D view covers %.3f of its canvas", cover)
	}
	p.eval(`window.rtpMap.close3d()`, nil)

	// A reload draws from the archive.
	p.eval(`window.rtpMap.setView(0, 0, 1)`, nil)
	p.idle()
	p.waitArchived(p.debug().Tiles.Visible)
	tiles := h.count("tile")
	p.reload()
	d = p.debug()
	if got := h.count("tile"); got != tiles || d.Tiles.FromNetwork != 0 || d.Tiles.FromArchive != d.Tiles.Visible {
		t.Errorf("reload fetched %d tiles (%+v), want all from the archive", got-tiles, d.Tiles)
	}
	t.Logf("reload from the archive: first paint %.1f ms, tile fill %.1f ms", *d.Marks.FirstPaint, *d.Marks.TileFill)
	p.noErrors()
}
