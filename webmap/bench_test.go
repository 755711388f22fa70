package webmap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain/meshcache"
	"github.com/rtpengine/rtp/world"
)

// BenchmarkRenderTile renders one zoom-0 tile (512x512 pixels) from
// summaries already loaded (warm terrain): gathering the 1,024 chunks'
// columns, drawing and encoding the PNG.
func BenchmarkRenderTile(b *testing.B) {
	for _, kind := range []string{KindProcedural, KindMinecraft} {
		b.Run(kind, func(b *testing.B) {
			f := newFake()
			ctx := context.Background()
			summary := func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) { return f.Summary(ctx, "mc", c) }
			if _, err := loadSurface(ctx, summary, 0, 0, -64, 320, nil); err != nil { // warm
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				s, err := loadSurface(ctx, summary, 0, 0, -64, 320, nil)
				if err != nil {
					b.Fatal(err)
				}
				render := RenderBlocks
				if kind == KindProcedural {
					render = RenderRelief
				}
				img := render(s)
				if _, err := encodePNG(img); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTileServeCached serves a cached tile through the Handler.
func BenchmarkTileServeCached(b *testing.B) {
	m := newMap(b, newFake(), Options{})
	h := m.Handler()
	req := httptest.NewRequest(http.MethodGet, "/v1/worlds/mc/tiles/0/0/0.png", nil)
	h.ServeHTTP(httptest.NewRecorder(), req)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkMeshServe serves a full-quality mesh through the Handler: hit
// restores it from the mesh cache (then encodes it), build reads the
// heightfield and builds it on every request (no retention).
func BenchmarkMeshServe(b *testing.B) {
	f := newFake()
	for _, mode := range []string{"hit", "build"} {
		b.Run(mode, func(b *testing.B) {
			profile := meshcache.ProfileBalanced
			if mode == "build" {
				profile = -1 // no retention: every request builds
			}
			m := newMap(b, f, Options{MeshProfile: profile})
			h := m.Handler()
			req := httptest.NewRequest(http.MethodGet, "/v1/worlds/proc/meshes/0/0", nil)
			h.ServeHTTP(httptest.NewRecorder(), req)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
			st := m.Stats()
			b.ReportMetric(float64(st.MeshHits)/float64(st.MeshHits+st.MeshBuilds), "hit-ratio")
		})
	}
}
