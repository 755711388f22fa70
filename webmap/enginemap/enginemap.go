// Package enginemap shows an rtp engine on the web map: Backend implements
// webmap.Backend over an *engine.Engine, read-only, through the engine's
// read-only views (engine.World, engine.Region) and its hand-out hook
// (engine.Engine.OnHandout), which feeds the map's deliveries layer.
//
// It is a package of its own so that neither side knows the other: the
// engine imports no map, and webmap draws any Backend (its tests use a
// fake one) without linking the engine and its stores. The command that
// builds both (rtp serve) joins them:
//
//	b := enginemap.New(e)
//	defer b.Close()
//	m, err := webmap.New(b, webmap.Options{})
package enginemap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/webmap"
	"github.com/rtpengine/rtp/world"
)

// Backend is the web map's view of an engine (webmap.Backend): the
// worlds' sources (a procedural world through its terrain archive, with
// its generator's relief for coarse tiles), the Minecraft worlds' change
// counts (engine.World.Epochs, lock-free) and the watcher's count of
// changed chunks as the world epoch, each region's memory table,
// pipeline (pipeline.Pipeline.Locations) and checker, and the places the
// engine hands out from New on.
//
// Make one with New; the zero value is not usable. A Backend is safe for
// concurrent use. It reads the engine without changing it (but for the
// sweep of Cached: see pipeline.Pipeline.Locations) and stays valid as
// long as the engine; after the engine's shutdown its reads fail or
// report empty.
type Backend struct {
	e *engine.Engine
	// feeds are the regions' delivery feeds, by region name; reliefs are
	// the procedural worlds' reliefs (procgen.Relief), by world. Both are
	// fixed at New.
	feeds   map[string]*webmap.Feed
	reliefs map[string]terrain.Source
	stop    func() // ends the hand-out subscription
}

var _ webmap.Backend = (*Backend)(nil)

// New returns the map's view of e and subscribes it to e's hand-outs
// (engine.Engine.OnHandout), so that each region's deliveries are those
// handed out from now on. Its hook only records the place in the
// region's feed, which never blocks (webmap.Feed.Publish). Close ends the
// subscription; a Backend that is not closed keeps it as long as e
// lives. e must not be nil.
func New(e *engine.Engine) *Backend {
	if e == nil {
		panic("enginemap: nil engine")
	}
	b := &Backend{e: e, feeds: map[string]*webmap.Feed{}, reliefs: map[string]terrain.Source{}}
	for _, name := range e.Regions() {
		b.feeds[name] = new(webmap.Feed)
	}
	for _, name := range e.Worlds() {
		w, _ := e.World(name)
		t := w.Terrain()
		if t == nil {
			continue
		}
		if p, ok := t.Params().(procgen.Params); ok {
			if g, err := procgen.New(p); err == nil { // the archive's generator accepted p
				b.reliefs[name] = g.Relief()
			}
		}
	}
	feeds := b.feeds
	b.stop = e.OnHandout(func(loc engine.Location, at time.Time) {
		if f := feeds[loc.Region]; f != nil {
			f.Publish(webmap.Delivery{X: loc.X, Y: loc.Y, Z: loc.Z, Sink: loc.Sink, At: at})
		}
	})
	return b
}

// Close ends the subscription to the engine's hand-outs: the deliveries
// feeds keep what they hold and receive nothing more. Every other method
// still answers. Close may be called more than once.
func (b *Backend) Close() { b.stop() }

func (b *Backend) world(name string) (engine.World, error) {
	w, ok := b.e.World(name)
	if !ok {
		return engine.World{}, fmt.Errorf("enginemap: %w: world %q", webmap.ErrNotFound, name)
	}
	return w, nil
}

func (b *Backend) region(name string) (*engine.Region, error) {
	r := b.e.Region(name)
	if r == nil {
		return nil, fmt.Errorf("enginemap: %w: region %q", webmap.ErrNotFound, name)
	}
	return r, nil
}

// Worlds implements webmap.Backend. A procedural world is drawn from its
// terrain (webmap.KindProcedural, its archive's producer); every other
// world from its chunks' surface (webmap.KindMinecraft,
// webmap.SurfaceProducer).
func (b *Backend) Worlds() []webmap.World {
	names := b.e.Worlds()
	out := make([]webmap.World, 0, len(names))
	for _, name := range names {
		w, _ := b.e.World(name)
		wv := webmap.World{Name: name, Kind: webmap.KindMinecraft, Producer: webmap.SurfaceProducer}
		if t := w.Terrain(); t != nil {
			wv.Kind, wv.Producer = webmap.KindProcedural, t.Producer().String()
		}
		wv.MinY, wv.MaxY = w.Height()
		out = append(out, wv)
	}
	return out
}

// Regions implements webmap.Backend.
func (b *Backend) Regions() []webmap.Region {
	names := b.e.Regions()
	out := make([]webmap.Region, 0, len(names))
	for _, name := range names {
		r := b.e.Region(name)
		v := webmap.Region{Name: name, World: r.World().Name()}
		if s, ok := r.ShapeSpec(); ok {
			v.Shape, v.Chunks = s, shapeChunks(s)
		} else {
			v.Shape, v.Chunks = geomView(r.Shape())
		}
		if bd, ok := r.Border(); ok {
			v.Border = &webmap.Border{CenterX: bd.CenterX, CenterZ: bd.CenterZ, Size: bd.Size}
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
// watcher found (engine.World.Changes; 0 for the procedural world and
// unwatched worlds).
func (b *Backend) WorldEpoch(name string) uint64 {
	w, ok := b.e.World(name)
	if !ok {
		return 0
	}
	return w.Changes()
}

// ChunkEpoch implements webmap.Backend.
func (b *Backend) ChunkEpoch(name string, c geom.Chunk) uint32 {
	w, ok := b.e.World(name)
	if !ok {
		return 0
	}
	return w.Epochs().Of(c)
}

// Summary implements webmap.Backend.
func (b *Backend) Summary(ctx context.Context, name string, c geom.Chunk) (*world.Chunk, error) {
	w, err := b.world(name)
	if err != nil {
		return nil, err
	}
	return world.Summary(ctx, w.Source(), c)
}

// Heightfield implements webmap.Backend: the procedural world's tile
// through its archive, another world's column tops (webmap.SurfaceTile).
func (b *Backend) Heightfield(ctx context.Context, name string, req terrain.Request) (*terrain.Tile, error) {
	w, err := b.world(name)
	if err != nil {
		return nil, err
	}
	if t := w.Terrain(); t != nil {
		return t.Tile(ctx, req)
	}
	src := w.Source()
	return webmap.SurfaceTile(ctx, func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) {
		return world.Summary(ctx, src, c)
	}, req)
}

// Relief implements webmap.Backend: the relief of the procedural world's
// generator (procgen.Relief), not archived (the map keeps the tiles it
// draws from it); a world without one (a Minecraft world) answers as
// Heightfield.
func (b *Backend) Relief(ctx context.Context, name string, req terrain.Request) (*terrain.Tile, error) {
	if r := b.reliefs[name]; r != nil {
		return r.Tile(ctx, req)
	}
	return b.Heightfield(ctx, name, req)
}

// memoryRuns is a memory export's runs for lookups by index.
type memoryRuns struct {
	now               float64 // Unix seconds
	active, probation []memory.ExportRun
}

func (b *Backend) runs(r *engine.Region) memoryRuns {
	ex := r.Memory().Export()
	now := b.e.Now()
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
func (b *Backend) Memory(name string, rect webmap.ChunkRect) (webmap.MemoryView, error) {
	r, err := b.region(name)
	if err != nil {
		return webmap.MemoryView{}, err
	}
	if n := rect.Len(); n > webmap.MaxMemoryChunks {
		return webmap.MemoryView{}, fmt.Errorf("enginemap: memory of %d chunks, at most %d", n, webmap.MaxMemoryChunks)
	}
	mr := b.runs(r)
	v := webmap.MemoryView{Now: b.e.Now()}
	if len(mr.active) == 0 && len(mr.probation) == 0 {
		return v, nil
	}
	mem := r.Memory()
	for cz := rect.MinZ; cz <= rect.MaxZ; cz++ {
		for cx := rect.MinX; cx <= rect.MaxX; cx++ {
			i, err := mem.ChunkIndex(geom.Chunk{X: cx, Z: cz})
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
func (b *Backend) Cached(name string, limit int) ([]webmap.CachedLocation, bool, error) {
	r, err := b.region(name)
	if err != nil {
		return nil, false, err
	}
	locs, more := r.Pipeline().Locations(limit)
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

// Deliveries implements webmap.Backend: the region's latest places handed
// out since New.
func (b *Backend) Deliveries(name string) ([]webmap.Delivery, error) {
	f := b.feeds[name]
	if f == nil {
		return nil, fmt.Errorf("enginemap: %w: region %q", webmap.ErrNotFound, name)
	}
	return f.Recent(), nil
}

// SubscribeDeliveries implements webmap.Backend.
func (b *Backend) SubscribeDeliveries(name string) (<-chan webmap.Delivery, func(), error) {
	f := b.feeds[name]
	if f == nil {
		return nil, nil, fmt.Errorf("enginemap: %w: region %q", webmap.ErrNotFound, name)
	}
	ch, cancel := f.Subscribe()
	return ch, cancel, nil
}

// Inspect implements webmap.Backend: the region's checker on the column's
// summary, or on the loaded chunk when the rules need its blocks.
func (b *Backend) Inspect(ctx context.Context, name string, blk geom.Block) (webmap.Inspection, error) {
	r, err := b.region(name)
	if err != nil {
		return webmap.Inspection{}, err
	}
	c := blk.Chunk()
	in := webmap.Inspection{
		Block:   webmap.XZ{X: blk.X, Z: blk.Z},
		Chunk:   webmap.XZ{X: c.X, Z: c.Z},
		InShape: r.Shape().Contains(c),
	}
	if i, err := r.Memory().ChunkIndex(c); err == nil {
		if cause, _, state, left, ok := b.runs(r).state(i); ok {
			in.Memory = &webmap.MemoryState{Cause: cause, State: state, TTLLeft: left}
		}
	}
	locs, _ := r.Pipeline().Locations(webmap.MaxCached)
	for _, l := range locs {
		if l.Chunk() == c {
			in.Cached = append(in.Cached, cachedView(l))
		}
	}
	src := r.World().Source()
	ch, err := world.Summary(ctx, src, c)
	switch {
	case errors.Is(err, world.ErrUngenerated):
		in.Reason = "not generated"
		return in, nil
	case errors.Is(err, world.ErrOutside):
		in.Reason = "outside the world"
		return in, nil
	case err != nil:
		return webmap.Inspection{}, fmt.Errorf("enginemap: summary of %v: %w", c, err)
	}
	x, z := blk.Local()
	checker := r.Checker()
	res, ok := checker.CheckColumn(ch, x, z)
	if !ok && res.Reason == safety.NoBlockData {
		full, err := src.Load(ctx, c)
		if err != nil {
			return webmap.Inspection{}, fmt.Errorf("enginemap: load of %v: %w", c, err)
		}
		ch = full
		res, ok = checker.CheckColumn(ch, x, z)
	}
	col := ch.Column(x, z)
	in.Biome = col.Biome.String()
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
