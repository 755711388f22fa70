package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rtpengine/rtp/internal/chromium"
)

// paintCoverJS polls, in the page, the share of the default region's
// circle that the terrain canvas covers with opaque pixels, every 50 ms,
// until it reaches 80% or 30 s have passed since the page opened. It
// resolves to the time since navigation started (performance.now) when
// it first reached 80% (null if never), the last share seen and the
// circle's pixels inside the canvas against its whole area.
const paintCoverJS = `(async () => {
	const limit = 30000, want = 0.8;
	const regions = (await fetch('/v1/map/regions').then((r) => r.json())).regions;
	const sh = regions[0].shape;
	const c = document.getElementById('base');
	let share = 0, inside = 0, area = 0;
	for (;;) {
		const m = window.rtpMap;
		if (m && m.debug().started && c.width > 0) {
			const d = devicePixelRatio || 1;
			const [cx, cy] = m.toScreen(sh.centerX, sh.centerZ);
			const [ex] = m.toScreen(sh.centerX + sh.radius, sh.centerZ);
			const r = (ex - cx) * d, x0 = cx * d, y0 = cy * d;
			const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0, opaque = 0;
			for (let y = Math.max(0, Math.floor(y0 - r)); y < Math.min(c.height, Math.ceil(y0 + r)); y++) {
				for (let x = Math.max(0, Math.floor(x0 - r)); x < Math.min(c.width, Math.ceil(x0 + r)); x++) {
					const dx = x + 0.5 - x0, dy = y + 0.5 - y0;
					if (dx * dx + dy * dy > r * r) continue;
					n++;
					if (px[4 * (y * c.width + x) + 3] >= 128) opaque++;
				}
			}
			share = n ? opaque / n : 0;
			inside = n;
			area = Math.PI * r * r;
			if (share >= want) return { ms: performance.now(), share, inside, area };
		}
		if (performance.now() > limit) return { ms: null, share, inside, area };
		await new Promise((res) => setTimeout(res, 50));
	}
})()`

// TestServeMapPaintsAtOnce opens the web map of a fresh default rtp
// serve (procedural world, default region, empty data directory) in
// headless Chromium and measures, in the page, the time from navigation
// until the terrain canvas covers at least 80% of the region's circle at
// the default view: at most 10 s. The server is the rtp command as users
// build it, in a process of its own: the target is its speed, not the
// race detector's.
func TestServeMapPaintsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a browser")
	}
	bin := chromium.Find()
	if bin == "" {
		t.Skip("no chromium binary found (install Debian's chromium or set RTP_CHROMIUM)")
	}
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+t.TempDir()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, buildRTP(t), cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const w, h = 1000, 700
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromium.Flags(t.TempDir(), w, h), chromedp.ExecPath(bin))...)
	defer acancel()
	tctx, tcancel := chromedp.NewContext(actx)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(s.addr+"/map/")); err != nil {
		t.Fatalf("open the map: %v", err)
	}
	type cover struct {
		MS     *float64 `json:"ms"`
		Share  float64  `json:"share"`
		Inside float64  `json:"inside"`
		Area   float64  `json:"area"`
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[cover](paintCoverJS, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("measure: %v", err)
	}
	if got.Inside < 0.95*got.Area {
		t.Fatalf("the default view shows %.0f of the region circle's %.0f pixels: it should fit the region", got.Inside, got.Area)
	}
	if got.MS == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("rtp serve's log:\n%s", s.log)
		t.Fatalf("after 30 s the terrain covers %.1f%% of the region at the default view, want 80%%", 100*got.Share)
	}
	t.Logf("headless Chromium, fresh default rtp serve: terrain over %.1f%% of the region %.0f ms after navigation", 100*got.Share, *got.MS)
	if *got.MS > 10000 {
		t.Errorf("terrain covered 80%% of the region after %s, want at most 10 s", fmt.Sprint(time.Duration(*got.MS*float64(time.Millisecond))))
	}
}
