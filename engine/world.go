package engine

import (
	"slices"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/procworld"
)

// Read-only views.
//
// The accessors below let a tool beside the engine (the web map,
// package webmap/enginemap) read the worlds and regions without changing
// them: what each world is drawn from, its change counts, each region's
// configured shape and border. The region's memory, pipeline and checker
// are read through Region.Memory, Region.Pipeline and Region.Checker.

// World is a read-only view of one of an Engine's worlds. Get one with
// Engine.World or Region.World; the zero value is not usable. A World is
// safe for concurrent use and stays valid as long as its Engine; after
// the engine's shutdown its reads fail or report nothing new.
type World struct {
	w *worldState
}

// Worlds returns the names of e's worlds, sorted.
func (e *Engine) Worlds() []string {
	names := make([]string, 0, len(e.worlds))
	for name := range e.worlds {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// World returns the world named name, or false when e has none of that
// name.
func (e *Engine) World(name string) (World, bool) {
	w := e.worlds[name]
	if w == nil {
		return World{}, false
	}
	return World{w: w}, true
}

// Now returns the time on e's clock (Options.Clock): the time memory
// expiries and hand-out hooks are measured on.
func (e *Engine) Now() time.Time { return e.opts.Clock() }

// Name returns the world's name (its key in Spec.Worlds).
func (w World) Name() string { return w.w.name }

// Source returns the chunk source the engine reads the world through: a
// procedural world's terrain archive, a Minecraft world's region files
// (holding the chunks a game server reported changed until they are
// saved: see Engine.ChunksChanged), an embedder's own source. Reads
// through it are not reserved and do not load the resident store.
func (w World) Source() world.Source { return w.w.source }

// Terrain returns the heightfield terrain of a procedural world, through
// its terrain archive (terrain.Source: Producer, Params, Tile), or nil for
// a Minecraft world or an embedder's.
func (w World) Terrain() terrain.Source {
	if w.w.archive == nil {
		return nil
	}
	return w.w.archive
}

// Height returns the world's build height, minY <= y < maxY: the
// procedural world's (procworld.MinY, procworld.MaxY); a Minecraft
// overworld's of 1.18 (data version 2860) and later, -64..320; an older
// overworld's and the other dimensions', 0..256; and -64..320 for an
// embedder's world.
func (w World) Height() (minY, maxY int) {
	if w.w.archive != nil {
		return procworld.MinY, procworld.MaxY
	}
	if s, ok := w.w.closer.(*anvil.World); ok {
		if s.Dimension() != anvil.Overworld {
			return 0, 256
		}
		if v := s.Level().DataVersion; v > 0 && v < 2860 {
			return 0, 256
		}
	}
	return -64, 320
}

// Epochs returns the change counts of the world's chunks (world.Epochs:
// lock-free reads), or nil for a world whose changes are not followed (the
// procedural world, an embedder's, a Minecraft world with
// Options.WatchPeriod < 0). A nil *world.Epochs reports 0 for every chunk.
func (w World) Epochs() *world.Epochs {
	if w.w.watch == nil {
		return nil
	}
	return w.w.watch.epochs
}

// Changes returns the number of chunk changes the watcher found in the
// world's region files so far (WatchStats.ChangedChunks), 0 for a world
// whose changes are not followed. It grows whenever the watcher finds
// terrain changed, after the changed chunks' epochs were bumped: a reader
// that sees the new count sees their new Epochs. A lock-free read.
func (w World) Changes() uint64 {
	if w.w.watch == nil {
		return 0
	}
	return w.w.watch.chunks.Load()
}

// World returns the region's world.
func (r *Region) World() World { return World{w: r.world} }

// ShapeSpec returns the region's area in blocks as configured
// (RegionSpec.Shape, defaults filled in), or false when the region was
// given as a geom.Shape (RegionSpec.Geom): Shape then returns it.
func (r *Region) ShapeSpec() (geom.ShapeSpec, bool) {
	if r.spec.Geom != nil {
		return geom.ShapeSpec{}, false
	}
	return r.spec.Shape, true
}

// Border returns the region's world border (safety.Rules.Border), or false
// when it has none.
func (r *Region) Border() (safety.Border, bool) {
	if b := r.spec.Safety.Border; b != nil {
		return *b, true
	}
	return safety.Border{}, false
}
