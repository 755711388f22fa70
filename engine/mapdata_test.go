package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/mesh"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/webmap"
)

// mapGet serves path through h and fails unless the status is want.
func mapGet(t *testing.T, h http.Handler, path string, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != want {
		t.Fatalf("%s: status %d, want %d: %.300s", path, rec.Code, want, rec.Body)
	}
	return rec
}

// TestMapBackendProcedural runs the map over a real engine on the
// procedural world: tiles, a mesh, memory cells after rejections, cached
// locations after the fill, and the inspection of a delivered place.
func TestMapBackendProcedural(t *testing.T) {
	e := newEngine(t, testConfig(t))
	run(t, e)
	b := engine.MapBackend(e)
	m, err := webmap.New(b, webmap.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler()

	ws := b.Worlds()
	if len(ws) != 1 || ws[0].Kind != webmap.KindProcedural || ws[0].Producer == "" || ws[0].MaxY <= ws[0].MinY {
		t.Fatalf("worlds: %+v", ws)
	}
	rs := b.Regions()
	if len(rs) != 1 || rs[0].Name != config.DefaultRegionName || rs[0].Shape.Kind != "circle" || rs[0].Shape.Radius != 512 {
		t.Fatalf("regions: %+v", rs)
	}
	// The chunk box holds the whole shape.
	box := rs[0].Chunks
	shape := e.Region(config.DefaultRegionName).Shape()
	for i := int64(0); i < shape.Len(); i += 7 {
		c := shape.Chunk(i)
		if c.X < box[0] || c.Z < box[1] || c.X > box[2] || c.Z > box[3] {
			t.Fatalf("chunk %v of the shape outside the box %v", c, box)
		}
	}

	// Tiles: zoom 0 around the origin (the region's centre) is opaque
	// terrain; a zoom-3 tile draws the whole region; far away nothing.
	for _, p := range []string{"/v1/worlds/world/tiles/0/0/0.png", "/v1/worlds/world/tiles/0/-1/-1.png", "/v1/worlds/world/tiles/3/-1/-1.png"} {
		rec := mapGet(t, h, p, http.StatusOK)
		img, err := png.Decode(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() != webmap.TileSize || b.Dy() != webmap.TileSize {
			t.Fatalf("%s: %v", p, b)
		}
	}
	rec := mapGet(t, h, "/v1/worlds/world/tiles/0/0/0.png", http.StatusOK)
	img, _ := png.Decode(bytes.NewReader(rec.Body.Bytes()))
	if _, _, _, a := img.At(10, 10).RGBA(); a != 0xffff {
		t.Errorf("terrain at block (10, 10) is not opaque (alpha %d)", a)
	}
	mapGet(t, h, "/v1/worlds/nowhere/tiles/0/0/0.png", http.StatusNotFound)

	// A mesh from the archive's heightfield.
	mr := mapGet(t, h, "/v1/worlds/world/meshes/0/0?quality=low", http.StatusOK)
	if mm, err := mesh.Decode(mr.Body.Bytes()); err != nil || mm.Quality != mesh.Low || mm.OriginX != 0 {
		t.Fatalf("mesh: %v %+v", err, mm)
	}

	// Memory: a rejection recorded in the region's table shows as a cell.
	r := e.Region(config.DefaultRegionName)
	bad := geom.Chunk{X: 3, Z: -2}
	if err := r.Memory().AddBadChunk(bad, memory.CauseSafety, ""); err != nil {
		t.Fatal(err)
	}
	r.Memory().Rebuild()
	v, err := b.Memory(config.DefaultRegionName, webmap.ChunkRect{MinX: 0, MinZ: -5, MaxX: 5, MaxZ: 0})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range v.Cells {
		if c.X == bad.X && c.Z == bad.Z {
			found = true
			if c.Cause != "safety" || c.Tier != "static" || c.State != webmap.StateActive || c.TTLLeft != -1 {
				t.Errorf("cell %+v, want safety static active -1", c)
			}
		}
	}
	if !found {
		t.Errorf("no cell for the rejected chunk %v in %+v", bad, v.Cells)
	}
	var memJSON struct {
		Now   float64
		Cells []webmap.MemoryCell
	}
	if err := json.Unmarshal(mapGet(t, h, "/v1/map/regions/default/memory?minX=3&minZ=-2&maxX=3&maxZ=-2", http.StatusOK).Body.Bytes(), &memJSON); err != nil || len(memJSON.Cells) != 1 || memJSON.Now <= 0 {
		t.Errorf("memory JSON: %v %+v", err, memJSON)
	}
	mapGet(t, h, "/v1/map/regions/default/memory?minX=0&minZ=0&maxX=300&maxZ=300", http.StatusBadRequest)
	mapGet(t, h, "/v1/map/regions/nope/memory?minX=0&minZ=0&maxX=3&maxZ=3", http.StatusNotFound)

	// Cached locations after the fill.
	waitFor(t, "the general sink to fill", func() bool { return fill(stats(t, e, config.DefaultRegionName), "general") >= 1 })
	locs, _, err := b.Cached(config.DefaultRegionName, webmap.MaxCached)
	if err != nil {
		t.Fatal(err)
	}
	hot := 0
	for _, l := range locs {
		if l.Stage == webmap.StageHot {
			hot++
			if l.Sink != "general" && !strings.HasPrefix(l.Sink, "group/") {
				t.Errorf("hot location %+v of sink %q", l, l.Sink)
			}
		}
		if !shape.Contains(geom.Block{X: l.X, Z: l.Z}.Chunk()) {
			t.Errorf("cached location %+v outside the shape", l)
		}
	}
	if hot == 0 {
		t.Errorf("no hot location listed after the fill: %+v", locs)
	}
	// Listing leaves the sink as it was.
	before := fill(stats(t, e, config.DefaultRegionName), "general")
	if _, _, err := b.Cached(config.DefaultRegionName, 1); err != nil {
		t.Fatal(err)
	}
	if after := fill(stats(t, e, config.DefaultRegionName), "general"); after < before {
		t.Errorf("listing emptied the sink: %d -> %d", before, after)
	}

	// A delivered place inspects as safe.
	loc := teleport(t, e, engine.Request{Player: "alice"})
	in, err := b.Inspect(context.Background(), config.DefaultRegionName, geom.Block{X: loc.X, Z: loc.Z})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Safe || in.Reason != "accepted" || !in.InShape || int64(in.Y) != loc.Y || in.Biome != loc.Biome || in.Ground == "" {
		t.Errorf("inspect of delivered %+v: %+v", loc, in)
	}
	var inJSON map[string]any
	if err := json.Unmarshal(mapGet(t, h, "/v1/map/regions/default/inspect?x=-600&z=0", http.StatusOK).Body.Bytes(), &inJSON); err != nil || inJSON["inShape"] != false {
		t.Errorf("inspect outside the shape: %v %+v", err, inJSON)
	}

	// Deliveries and the stream are served (what they hold depends on the
	// hand-out path feeding them: see mapdata_internal_test.go).
	mapGet(t, h, "/v1/map/regions/default/deliveries", http.StatusOK)
	if _, _, err := b.SubscribeDeliveries("nope"); err == nil {
		t.Error("subscribing to an unknown region succeeded")
	}
}

// TestMapBackendMinecraft draws a tile of a real 1.16 save: the region
// file holds chunks x 0..31, z -32..-1, so zoom-0 tile (0, -1) has
// terrain, and its chunks outside the file are transparent.
func TestMapBackendMinecraft(t *testing.T) {
	_, cfg, _ := minecraftConfig(t, geom.ShapeSpec{Kind: "circle", CenterX: 256, CenterZ: -256, Radius: 240})
	e := newEngine(t, cfg)
	b := engine.MapBackend(e)
	ws := b.Worlds()
	if len(ws) != 1 || ws[0].Kind != webmap.KindMinecraft || ws[0].Producer != engine.MapSurfaceProducer {
		t.Fatalf("worlds: %+v", ws)
	}
	m, err := webmap.New(b, webmap.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rec := mapGet(t, m.Handler(), "/v1/worlds/mc/tiles/0/0/-1.png", http.StatusOK)
	img, err := png.Decode(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	opaque := 0
	for y := 0; y < webmap.TileSize; y += 8 {
		for x := 0; x < webmap.TileSize; x += 8 {
			if _, _, _, a := img.At(x, y).RGBA(); a == 0xffff {
				opaque++
			}
		}
	}
	if opaque == 0 {
		t.Error("no terrain drawn from the save")
	}
	if b.WorldEpoch("mc") != 0 {
		t.Errorf("epoch %d before any change", b.WorldEpoch("mc"))
	}
	mr := mapGet(t, m.Handler(), "/v1/worlds/mc/meshes/0/-1?quality=full", http.StatusOK)
	if mm, err := mesh.Decode(mr.Body.Bytes()); err != nil || mm.Quality != mesh.Full {
		t.Fatalf("mesh: %v", err)
	}
}

// TestMapBackendRelief checks that the map's relief of a procedural world
// is its generator's relief (procgen.Relief of the world's Params), and
// that an unknown world is webmap.ErrNotFound.
func TestMapBackendRelief(t *testing.T) {
	cfg := testConfig(t)
	spec := specOf(t, cfg)
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	b := engine.MapBackend(e)
	req := terrain.Request{OriginX: -8192, OriginZ: 4096, Size: 8192, Resolution: 64, Border: 1}
	for name, ws := range spec.Worlds {
		if ws.Procedural == nil {
			continue
		}
		got, err := b.Relief(t.Context(), name, req)
		if err != nil {
			t.Fatal(err)
		}
		g, err := procgen.New(ws.Procedural.Params)
		if err != nil {
			t.Fatal(err)
		}
		want, err := g.Relief().Tile(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Elevations, want.Elevations) || !slices.Equal(got.Cover, want.Cover) {
			t.Errorf("world %s: the map's relief differs from the generator's", name)
		}
	}
	if _, err := b.Relief(t.Context(), "nowhere", req); !errors.Is(err, webmap.ErrNotFound) {
		t.Errorf("relief of an unknown world: %v, want ErrNotFound", err)
	}
}
