package enginemap_test

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
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/stores/sqlite"
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
	b := newBackend(t, e)
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

	// The place handed out is the region's delivery.
	var delJSON struct {
		Deliveries []struct {
			X, Y, Z int64
			Sink    string
			At      string
		}
	}
	if err := json.Unmarshal(mapGet(t, h, "/v1/map/regions/default/deliveries", http.StatusOK).Body.Bytes(), &delJSON); err != nil {
		t.Fatal(err)
	}
	if ds := delJSON.Deliveries; len(ds) != 1 || ds[0].X != loc.X || ds[0].Y != loc.Y || ds[0].Z != loc.Z || ds[0].Sink != loc.Sink || ds[0].At == "" {
		t.Errorf("deliveries %+v, want the one of %+v", ds, loc)
	}
	if _, _, err := b.SubscribeDeliveries("nope"); !errors.Is(err, webmap.ErrNotFound) {
		t.Errorf("subscribing to an unknown region: %v, want ErrNotFound", err)
	}
	if _, err := b.Deliveries("nope"); !errors.Is(err, webmap.ErrNotFound) {
		t.Errorf("deliveries of an unknown region: %v, want ErrNotFound", err)
	}
}

// TestMapBackendMinecraft draws a tile of a real 1.16 save: the region
// file holds chunks x 0..31, z -32..-1, so zoom-0 tile (0, -1) has
// terrain, and its chunks outside the file are transparent.
func TestMapBackendMinecraft(t *testing.T) {
	cfg := minecraftConfig(t, geom.ShapeSpec{Kind: "circle", CenterX: 256, CenterZ: -256, Radius: 240})
	e := newEngine(t, cfg)
	b := newBackend(t, e)
	ws := b.Worlds()
	if len(ws) != 1 || ws[0].Kind != webmap.KindMinecraft || ws[0].Producer != webmap.SurfaceProducer {
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
	// A chunk the game reports changed counts one change; its neighbour none.
	changed := geom.Chunk{X: 3, Z: -4}
	if _, err := e.ChunksChanged("mc", []geom.Chunk{changed}); err != nil {
		t.Fatal(err)
	}
	if got := b.ChunkEpoch("mc", changed); got != 1 {
		t.Errorf("epoch of the changed chunk %d, want 1", got)
	}
	if got := b.ChunkEpoch("mc", geom.Chunk{X: 4, Z: -4}); got != 0 {
		t.Errorf("epoch of an unchanged chunk %d, want 0", got)
	}
	if got := b.ChunkEpoch("nowhere", changed); got != 0 {
		t.Errorf("epoch in an unknown world %d, want 0", got)
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
	b := newBackend(t, e)
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

// TestMapRegionsWire: the map's description of the regions, read by its
// page's script, is what it was before the shape had one type: a circle
// and a square with their hole, a rotated rectangle with the larger of
// its holes, a region given as a geom.Shape as the square around it.
func TestMapRegionsWire(t *testing.T) {
	sq, err := geom.NewSquare(geom.Chunk{X: 3, Z: -2}, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec := engine.Spec{
		Stores:  sqlite.Stores{},
		DataDir: t.TempDir(),
		Regions: map[string]engine.RegionSpec{
			"a-circle": {Shape: geom.ShapeSpec{CenterX: 40, CenterZ: -8, Radius: 300, Inner: 20}},
			"b-square": {Shape: geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 100}},
			"c-rect": {Shape: geom.ShapeSpec{Kind: geom.ShapeRectangle, CenterX: -100, CenterZ: 37,
				RadiusX: 1000, RadiusZ: 300, InnerX: 100, InnerZ: 50, Rotation: 30}},
			"d-geom": {Geom: sq},
		},
	}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(t.Context()) })
	got, err := json.Marshal(newBackend(t, e).Regions())
	if err != nil {
		t.Fatal(err)
	}
	const want = `[` +
		`{"name":"a-circle","world":"world","shape":{"kind":"circle","centerX":40,"centerZ":-8,"radius":300,"innerRadius":20},"chunks":[-18,-21,22,19],"border":null},` +
		`{"name":"b-square","world":"world","shape":{"kind":"square","centerX":0,"centerZ":0,"radius":100},"chunks":[-8,-8,7,7],"border":null},` +
		`{"name":"c-rect","world":"world","shape":{"kind":"rectangle","centerX":-100,"centerZ":37,"radiusX":1000,"radiusZ":300,"rotation":30,"innerRadius":100},"chunks":[-71,-47,58,50],"border":null},` +
		`{"name":"d-geom","world":"world","shape":{"kind":"square","centerX":56,"centerZ":-24,"radius":88},"chunks":[-3,-8,9,4],"border":null}]`
	if string(got) != want {
		t.Errorf("map regions\n%s\nwant\n%s", got, want)
	}
}

// TestDeliveries: a backend records the places the engine hands out from
// its New on, streams them to its subscribers, and records none after
// Close; a second backend of the engine starts empty.
func TestDeliveries(t *testing.T) {
	e := newEngine(t, testConfig(t))
	run(t, e)
	b := newBackend(t, e)
	ch, cancel, err := b.SubscribeDeliveries(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	before := time.Now()
	loc := teleport(t, e, engine.Request{Player: "alice"})
	after := time.Now()
	ds, err := b.Deliveries(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].X != loc.X || ds[0].Y != loc.Y || ds[0].Z != loc.Z || ds[0].Sink != loc.Sink {
		t.Fatalf("deliveries %+v, want the one of %+v", ds, loc)
	}
	if ds[0].At.Before(before) || ds[0].At.After(after) {
		t.Errorf("delivery dated %v, want within [%v, %v]", ds[0].At, before, after)
	}
	select { // published before Teleport returned
	case d := <-ch:
		if d != ds[0] {
			t.Errorf("streamed %+v, want %+v", d, ds[0])
		}
	default:
		t.Fatal("no delivery streamed")
	}

	b2 := newBackend(t, e)
	if ds2, err := b2.Deliveries(config.DefaultRegionName); err != nil || len(ds2) != 0 {
		t.Errorf("a new backend's deliveries: %+v, %v; want none", ds2, err)
	}
	b.Close()
	b.Close() // harmless
	loc2 := teleport(t, e, engine.Request{Player: "bob"})
	if got, _ := b.Deliveries(config.DefaultRegionName); len(got) != 1 || got[0] != ds[0] {
		t.Errorf("a closed backend's deliveries: %+v, want %+v", got, ds[:1])
	}
	select {
	case d := <-ch:
		t.Errorf("a closed backend streamed %+v", d)
	default:
	}
	if ds2, _ := b2.Deliveries(config.DefaultRegionName); len(ds2) != 1 || ds2[0].X != loc2.X || ds2[0].Z != loc2.Z {
		t.Errorf("the second backend's deliveries: %+v, want the one of %+v", ds2, loc2)
	}
}
