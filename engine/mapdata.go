package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/webmap"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/procworld"
)

// MapSurfaceProducer names what draws a Minecraft world for the map: the
// column summaries of its region files (webmap.SurfaceTile and the block
// renderer). Change its version when they would draw a save differently.
const MapSurfaceProducer = "anvil-surface@1"

// Map data.
//
// MapBackend adapts an Engine to webmap.Backend, read-only: the worlds'
// sources (the procedural world through its terrain archive), the
// Minecraft worlds' change epochs (world.Epochs, lock-free) and the
// watcher's count of changed chunks as the world epoch, each region's
// memory table, pipeline (pipeline.Pipeline.Locations) and checker.
//
// Deliveries reach the map through mapFeed, which the hand-out path calls
// for each location handed out. The feeds of an Engine live in mapFeeds,
// keyed by a weak pointer so that an Engine no longer referenced is
// collected with its feeds; until MapBackend is first called for an
// Engine, mapFeed costs one atomic load.

// mapFeeds holds the delivery feeds of the engines that have a map
// backend: weak.Pointer[Engine] -> *engineFeeds.
var mapFeeds sync.Map

// mapFeedsUsed counts the engines registered in mapFeeds, so that mapFeed
// returns at once while no map exists.
var mapFeedsUsed atomic.Int64

// engineFeeds are one engine's delivery feeds, by region (fixed once
// made).
type engineFeeds map[string]*webmap.Feed

// feeds returns e's delivery feeds, registering them on first use.
func (e *Engine) feeds() engineFeeds {
	key := weak.Make(e)
	if v, ok := mapFeeds.Load(key); ok {
		return v.(engineFeeds)
	}
	f := engineFeeds{}
	for _, name := range e.names {
		f[name] = new(webmap.Feed)
	}
	v, loaded := mapFeeds.LoadOrStore(key, f)
	if !loaded {
		mapFeedsUsed.Add(1)
		runtime.AddCleanup(e, func(k weak.Pointer[Engine]) {
			mapFeeds.Delete(k)
			mapFeedsUsed.Add(-1)
		}, key)
	}
	return v.(engineFeeds)
}

// mapFeed publishes a location handed out by region r to the map's
// delivery feed of r. The hand-out path calls it once per location.
func (e *Engine) mapFeed(r *Region, loc Location) {
	if mapFeedsUsed.Load() == 0 {
		return
	}
	v, ok := mapFeeds.Load(weak.Make(e))
	if !ok {
		return
	}
	if f := v.(engineFeeds)[r.name]; f != nil {
		f.Publish(webmap.Delivery{X: loc.X, Y: loc.Y, Z: loc.Z, Sink: loc.Sink, At: e.opts.Clock()})
	}
}

// mapBackend implements webmap.Backend over an Engine.
type mapBackend struct {
	e     *Engine
	feeds engineFeeds
	// reliefs are the procedural worlds' reliefs (procgen.Relief), by
	// world: fixed at MapBackend.
	reliefs map[string]terrain.Source
}

// MapBackend returns the web map's view of e (see package webmap). It is
// safe for concurrent use, reads e without changing it (but for the sweep
// of Cached: see pipeline.Pipeline.Locations) and stays valid as long as
// e; after e's shutdown its reads fail or report empty.
func MapBackend(e *Engine) webmap.Backend {
	m := &mapBackend{e: e, feeds: e.feeds(), reliefs: map[string]terrain.Source{}}
	for name, w := range e.worlds {
		if w.archive == nil {
			continue
		}
		if p, ok := w.archive.Params().(procgen.Params); ok {
			if g, err := procgen.New(p); err == nil { // the archive's generator accepted p
				m.reliefs[name] = g.Relief()
			}
		}
	}
	return m
}

var _ webmap.Backend = (*mapBackend)(nil)

func (m *mapBackend) world(name string) (*worldState, error) {
	w := m.e.worlds[name]
	if w == nil {
		return nil, fmt.Errorf("engine: %w: world %q", webmap.ErrNotFound, name)
	}
	return w, nil
}

func (m *mapBackend) region(name string) (*Region, error) {
	r := m.e.regions[name]
	if r == nil {
		return nil, fmt.Errorf("engine: %w: region %q", webmap.ErrNotFound, name)
	}
	return r, nil
}

// Worlds implements webmap.Backend.
func (m *mapBackend) Worlds() []webmap.World {
	out := make([]webmap.World, 0, len(m.e.worlds))
	for name, w := range m.e.worlds {
		wv := webmap.World{Name: name, Kind: webmap.KindProcedural, MinY: procworld.MinY, MaxY: procworld.MaxY}
		if w.archive != nil {
			wv.Producer = w.archive.Producer().String()
		}
		if w.archive == nil { // Minecraft and embedders' worlds: drawn from their surface
			wv.Kind, wv.Producer = webmap.KindMinecraft, MapSurfaceProducer
			wv.MinY, wv.MaxY = minecraftHeight(w)
		}
		out = append(out, wv)
	}
	slices.SortFunc(out, func(a, b webmap.World) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// minecraftHeight returns the build height of a Minecraft world: the
// overworld of 1.18 (data version 2860) and later spans -64..320, older
// overworlds and the other dimensions 0..256.
func minecraftHeight(w *worldState) (minY, maxY int) {
	if s, ok := w.closer.(*anvil.World); ok {
		if s.Dimension() != anvil.Overworld {
			return 0, 256
		}
		if v := s.Level().DataVersion; v > 0 && v < 2860 {
			return 0, 256
		}
	}
	return -64, 320
}

// Regions implements webmap.Backend.
func (m *mapBackend) Regions() []webmap.Region {
	out := make([]webmap.Region, 0, len(m.e.names))
	for _, name := range m.e.names {
		r := m.e.regions[name]
		v := webmap.Region{Name: name, World: r.spec.World, Shape: r.spec.Shape, Chunks: shapeChunks(r.spec.Shape)}
		if r.spec.Geom != nil {
			v.Shape, v.Chunks = geomView(r.shape)
		}
		if b := r.spec.Safety.Border; b != nil {
			v.Border = &webmap.Border{CenterX: b.CenterX, CenterZ: b.CenterZ, Size: b.Size}
		}
		out = append(out, v)
	}
	return out
}

// shapeChunks returns a chunk box holding every chunk of shape s: its
// block extent (a rotated rectangle's bounding box) plus one chunk on
// every side, since shapes are built on chunk centres.
func shapeChunks(s geom.ShapeSpec) [4]int64 {
	hx, hz := float64(s.Radius), float64(s.Radius)
	if s.Kind == geom.ShapeRectangle {
		th := s.Rotation * math.Pi / 180
		c, sn := math.Abs(math.Cos(th)), math.Abs(math.Sin(th))
		rx, rz := float64(s.RadiusX), float64(s.RadiusZ)
		hx, hz = rx*c+rz*sn, rx*sn+rz*c
	}
	lo := geom.Block{X: s.CenterX - int64(math.Ceil(hx)), Z: s.CenterZ - int64(math.Ceil(hz))}.Chunk()
	hi := geom.Block{X: s.CenterX + int64(math.Ceil(hx)), Z: s.CenterZ + int64(math.Ceil(hz))}.Chunk()
	return [4]int64{lo.X - 1, lo.Z - 1, hi.X + 1, hi.Z + 1}
}

// geomView describes a region given as a geom.Shape (RegionSpec.Geom)
// to the map: a square around the chunk its spiral starts from (the
// centre, but for a shape with a hole), of the Chebyshev distance to its
// last chunk, which every chunk of the spiral lies within; and that
// square's chunk box plus one chunk on every side.
func geomView(g geom.Shape) (geom.ShapeSpec, [4]int64) {
	c0, last := g.Chunk(0), g.Chunk(g.Len()-1)
	if c, ok := g.(interface{ Center() geom.Chunk }); ok {
		c0 = c.Center()
	}
	k := max(abs64(last.X-c0.X), abs64(last.Z-c0.Z))
	o := c0.Origin()
	half := int64(geom.ChunkSize / 2)
	v := geom.ShapeSpec{
		Kind:    geom.ShapeSquare,
		CenterX: o.X + half, CenterZ: o.Z + half,
		Radius: (k << geom.ChunkShift) + half,
	}
	return v, [4]int64{c0.X - k - 1, c0.Z - k - 1, c0.X + k + 1, c0.Z + k + 1}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// WorldEpoch implements webmap.Backend: the number of chunk changes the
// watcher applied (0 for the procedural world and unwatched worlds). The
// watcher bumps the chunks' epochs before it counts them.
func (m *mapBackend) WorldEpoch(name string) uint64 {
	w := m.e.worlds[name]
	if w == nil || w.watch == nil {
		return 0
	}
	return w.watch.chunks.Load()
}

// ChunkEpoch implements webmap.Backend.
func (m *mapBackend) ChunkEpoch(name string, c geom.Chunk) uint32 {
	w := m.e.worlds[name]
	if w == nil || w.watch == nil {
		return 0
	}
	return w.watch.epochs.Of(c)
}

// Summary implements webmap.Backend.
func (m *mapBackend) Summary(ctx context.Context, name string, c geom.Chunk) (*world.Chunk, error) {
	w, err := m.world(name)
	if err != nil {
		return nil, err
	}
	return world.Summary(ctx, w.source, c)
}

// Heightfield implements webmap.Backend: the procedural world's tile
// through its archive, a Minecraft world's column tops.
func (m *mapBackend) Heightfield(ctx context.Context, name string, req terrain.Request) (*terrain.Tile, error) {
	w, err := m.world(name)
	if err != nil {
		return nil, err
	}
	if w.archive != nil {
		return w.archive.Tile(ctx, req)
	}
	return webmap.SurfaceTile(ctx, func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) {
		return world.Summary(ctx, w.source, c)
	}, req)
}

// Relief implements webmap.Backend: the relief of the procedural world's
// generator (procgen.Relief), not archived (the map keeps the tiles it
// draws from it); a world without one (a Minecraft world) answers as
// Heightfield.
func (m *mapBackend) Relief(ctx context.Context, name string, req terrain.Request) (*terrain.Tile, error) {
	if r := m.reliefs[name]; r != nil {
		return r.Tile(ctx, req)
	}
	return m.Heightfield(ctx, name, req)
}

// memoryRuns is a memory export's runs for lookups by index.
type memoryRuns struct {
	now               float64 // Unix seconds
	active, probation []memory.ExportRun
}

func (m *mapBackend) runs(r *Region) memoryRuns {
	ex := r.mem.Export()
	now := m.e.opts.Clock()
	byStart := func(a, b memory.ExportRun) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	}
	slices.SortFunc(ex.Active, byStart)
	slices.SortFunc(ex.Probation, byStart)
	return memoryRuns{now: float64(now.UnixNano()) / 1e9, active: ex.Active, probation: ex.Probation}
}

// find returns the run of runs (sorted, disjoint) holding index i.
func find(runs []memory.ExportRun, i int64) (memory.ExportRun, bool) {
	j := sort.Search(len(runs), func(j int) bool { return runs[j].Start+runs[j].Len > i })
	if j < len(runs) && runs[j].Start <= i {
		return runs[j], true
	}
	return memory.ExportRun{}, false
}

// state returns the memory's verdict on index i, or false when it holds
// nothing there.
func (mr memoryRuns) state(i int64) (cause, tier, state string, ttlLeft float64, ok bool) {
	if run, found := find(mr.active, i); found {
		ttlLeft = -1
		if run.Expires > 0 {
			ttlLeft = max(float64(run.Expires)-mr.now, 0)
		}
		return run.Cause, run.Tier, webmap.StateActive, ttlLeft, true
	}
	if run, found := find(mr.probation, i); found {
		ttlLeft = max(float64(run.Expires+run.TTL)-mr.now, 0)
		return run.Cause, run.Tier, webmap.StateProbation, ttlLeft, true
	}
	return "", "", "", 0, false
}

// Memory implements webmap.Backend. Chunks the memory has no index for
// (outside the shape and its expansion) hold nothing.
func (m *mapBackend) Memory(name string, rect webmap.ChunkRect) (webmap.MemoryView, error) {
	r, err := m.region(name)
	if err != nil {
		return webmap.MemoryView{}, err
	}
	if n := rect.Len(); n > webmap.MaxMemoryChunks {
		return webmap.MemoryView{}, fmt.Errorf("engine: memory of %d chunks, at most %d", n, webmap.MaxMemoryChunks)
	}
	mr := m.runs(r)
	v := webmap.MemoryView{Now: m.e.opts.Clock()}
	if len(mr.active) == 0 && len(mr.probation) == 0 {
		return v, nil
	}
	for cz := rect.MinZ; cz <= rect.MaxZ; cz++ {
		for cx := rect.MinX; cx <= rect.MaxX; cx++ {
			i, err := r.mem.ChunkIndex(geom.Chunk{X: cx, Z: cz})
			if err != nil {
				continue
			}
			cause, tier, state, left, ok := mr.state(i)
			if !ok {
				continue
			}
			v.Cells = append(v.Cells, webmap.MemoryCell{X: cx, Z: cz, Cause: cause, Tier: tier, State: state, TTLLeft: left})
		}
	}
	return v, nil
}

// Cached implements webmap.Backend (pipeline.Pipeline.Locations).
func (m *mapBackend) Cached(name string, limit int) ([]webmap.CachedLocation, bool, error) {
	r, err := m.region(name)
	if err != nil {
		return nil, false, err
	}
	locs, more := r.pipe.Locations(limit)
	out := make([]webmap.CachedLocation, len(locs))
	for i, l := range locs {
		out[i] = cachedView(l)
	}
	return out, more, nil
}

// cachedView is the map's view of a location cached in a pipeline: a
// group subspace's places keep their subspace's number and radius.
func cachedView(l pipeline.CachedLocation) webmap.CachedLocation {
	cl := webmap.CachedLocation{X: l.X, Y: l.Y, Z: l.Z, Stage: webmap.StageCold, Sink: l.Sink, Group: l.Group, Radius: l.Radius}
	if l.Hot {
		cl.Stage = webmap.StageHot
	}
	return cl
}

// Deliveries implements webmap.Backend.
func (m *mapBackend) Deliveries(name string) ([]webmap.Delivery, error) {
	if _, err := m.region(name); err != nil {
		return nil, err
	}
	return m.feeds[name].Recent(), nil
}

// SubscribeDeliveries implements webmap.Backend.
func (m *mapBackend) SubscribeDeliveries(name string) (<-chan webmap.Delivery, func(), error) {
	if _, err := m.region(name); err != nil {
		return nil, nil, err
	}
	ch, cancel := m.feeds[name].Subscribe()
	return ch, cancel, nil
}

// Inspect implements webmap.Backend: the region's checker on the column's
// summary, or on the loaded chunk when the rules need its blocks.
func (m *mapBackend) Inspect(ctx context.Context, name string, b geom.Block) (webmap.Inspection, error) {
	r, err := m.region(name)
	if err != nil {
		return webmap.Inspection{}, err
	}
	c := b.Chunk()
	in := webmap.Inspection{
		Block:   webmap.XZ{X: b.X, Z: b.Z},
		Chunk:   webmap.XZ{X: c.X, Z: c.Z},
		InShape: r.shape.Contains(c),
	}
	if i, err := r.mem.ChunkIndex(c); err == nil {
		if cause, _, state, left, ok := m.runs(r).state(i); ok {
			in.Memory = &webmap.MemoryState{Cause: cause, State: state, TTLLeft: left}
		}
	}
	locs, _ := r.pipe.Locations(webmap.MaxCached)
	for _, l := range locs {
		if l.Chunk() == c {
			in.Cached = append(in.Cached, cachedView(l))
		}
	}
	ch, err := world.Summary(ctx, r.world.source, c)
	switch {
	case errors.Is(err, world.ErrUngenerated):
		in.Reason = "not generated"
		return in, nil
	case errors.Is(err, world.ErrOutside):
		in.Reason = "outside the world"
		return in, nil
	case err != nil:
		return webmap.Inspection{}, fmt.Errorf("engine: summary of %v: %w", c, err)
	}
	x, z := b.Local()
	res, ok := r.checker.CheckColumn(ch, x, z)
	if !ok && res.Reason == safety.NoBlockData {
		full, err := r.world.source.Load(ctx, c)
		if err != nil {
			return webmap.Inspection{}, fmt.Errorf("engine: load of %v: %w", c, err)
		}
		ch = full
		res, ok = r.checker.CheckColumn(ch, x, z)
	}
	col := ch.Column(x, z)
	in.Biome = biomeName(col.Biome)
	in.Ground = col.Ground.String()
	if res.Ground != 0 {
		in.Ground = res.Ground.String()
	}
	in.Y = int(col.Top) + 1
	if ok {
		in.Y = res.Y
	}
	in.Safe, in.Reason = ok, res.Reason.String()
	return in, nil
}
