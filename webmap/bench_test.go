package webmap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/meshcache"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// procBackend is the procedural world as the engine serves it, without
// an archive: procgen behind procworld for summaries and heightfields,
// procgen's relief for coarse tiles; one region, a circle of radius 8192
// round the origin (chunk box -513..512).
type procBackend struct {
	*fakeBackend
	gen *procgen.Generator
	w   *procworld.World
}

func newProcBackend(tb testing.TB) *procBackend {
	tb.Helper()
	g, err := procgen.New(procgen.DefaultParams())
	if err != nil {
		tb.Fatal(err)
	}
	w, err := procworld.New(g, procworld.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return &procBackend{fakeBackend: newFake(), gen: g, w: w}
}

func (p *procBackend) Worlds() []World {
	return []World{{Name: "proc", Kind: KindProcedural, Producer: p.gen.Producer().String(), MinY: procworld.MinY, MaxY: procworld.MaxY}}
}

func (p *procBackend) Regions() []Region {
	return []Region{{Name: "p", World: "proc", Shape: geom.ShapeSpec{Kind: geom.ShapeCircle, Radius: 8192}, Chunks: [4]int64{-513, -513, 512, 512}}}
}

func (p *procBackend) Summary(ctx context.Context, _ string, c geom.Chunk) (*world.Chunk, error) {
	return p.w.Summary(ctx, c)
}

func (p *procBackend) Heightfield(ctx context.Context, _ string, req terrain.Request) (*terrain.Tile, error) {
	return p.gen.Tile(ctx, req)
}

func (p *procBackend) Relief(ctx context.Context, _ string, req terrain.Request) (*terrain.Tile, error) {
	return p.gen.Relief().Tile(ctx, req)
}

// BenchmarkRenderTile renders one tile, drawn and encoded as PNG.
//
// procedural: a zoom-0 tile (512 x 512 blocks) and a zoom-4 tile (8,192 x
// 8,192 blocks, inside the region) of the procedural world, alternately,
// each from a new generator and world (cold: no drainage cell, terrain
// tile or map tile computed before), reported as ms/zoom0 and ms/zoom4 and
// their ratio; ns/op is the pair.
//
// minecraft: a zoom-0 tile from summaries already loaded (warm terrain):
// gathering the 1,024 chunks' columns, drawing and encoding the PNG.
func BenchmarkRenderTile(b *testing.B) {
	b.Run("procedural", func(b *testing.B) {
		ctx := context.Background()
		var took [2]time.Duration
		b.ReportAllocs()
		for b.Loop() {
			for i, zoom := range [2]int{0, 4} {
				b.StopTimer()
				m, err := New(newProcBackend(b), Options{})
				if err != nil {
					b.Fatal(err)
				}
				wi := m.worlds["proc"]
				k := tileKey{tileID: tileID{world: "proc", zoom: zoom}, producer: wi.Producer, renderer: RendererVersion}
				b.StartTimer()
				start := time.Now()
				if _, err := m.render(ctx, &wi, k); err != nil {
					b.Fatal(err)
				}
				took[i] += time.Since(start)
			}
		}
		n := float64(b.N)
		b.ReportMetric(took[0].Seconds()*1e3/n, "ms/zoom0")
		b.ReportMetric(took[1].Seconds()*1e3/n, "ms/zoom4")
		b.ReportMetric(float64(took[1])/float64(took[0]), "zoom4/zoom0")
	})
	b.Run("minecraft", func(b *testing.B) {
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
			if _, err := encodePNG(RenderBlocks(s)); err != nil {
				b.Fatal(err)
			}
		}
	})
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
