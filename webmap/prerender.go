package webmap

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// Defaults of PrerenderOptions.
const (
	DefaultPrerenderTiles = 64
	DefaultPrerenderView  = 16
	DefaultPrerenderPoll  = time.Second
	DefaultPrerenderWatch = 10 * time.Millisecond
)

// PrerenderOptions configure Map.Prerender. The zero value selects every
// default.
type PrerenderOptions struct {
	// Busy reports whether the engine has anything more urgent to do:
	// requests to answer, or promotions into short sinks; while it does,
	// no tile starts, and a tile rendering is abandoned. It is called
	// before every tile and every Watch while one renders, so it must be
	// cheap and safe for concurrent use. Default nil: never busy.
	Busy func() bool
	// Poll is how long Prerender waits before looking again while Busy
	// holds or the map is serving tile requests. Default
	// DefaultPrerenderPoll (1 s).
	Poll time.Duration
	// Watch is how often Busy is asked while a tile renders: a render
	// (milliseconds to a second of processor time for a coarse tile of
	// an ungenerated world) then holds a processor at most this long
	// after the engine became busy. Default DefaultPrerenderWatch
	// (10 ms).
	Watch time.Duration
	// MaxTiles bounds the tiles rendered. Default DefaultPrerenderTiles
	// (64).
	MaxTiles int
	// ViewTiles bounds each region's finest zoom: the finest whose tiles
	// over the region's chunk box number at most ViewTiles (as many as a
	// view fitting the region shows). Default DefaultPrerenderView (16).
	ViewTiles int
}

func (o PrerenderOptions) withDefaults() PrerenderOptions {
	if o.Poll <= 0 {
		o.Poll = DefaultPrerenderPoll
	}
	if o.Watch <= 0 {
		o.Watch = DefaultPrerenderWatch
	}
	if o.MaxTiles <= 0 {
		o.MaxTiles = DefaultPrerenderTiles
	}
	if o.ViewTiles <= 0 {
		o.ViewTiles = DefaultPrerenderView
	}
	return o
}

// PrerenderPlan returns the tiles Prerender renders, in order: for every
// region, from zoom MaxZoom down, the tiles over its chunk box, down to
// the finest zoom where they number at most viewTiles; coarsest zoom
// first across the regions, each tile once, at most maxTiles in all.
// These are the tiles the page draws first when it fits a region (the
// coarse preview and the view's own tiles).
func (m *Map) PrerenderPlan(maxTiles, viewTiles int) []TileRef {
	var out []TileRef
	seen := map[TileRef]bool{}
	names := make([]string, 0, len(m.regions))
	for name := range m.regions {
		names = append(names, name)
	}
	slices.Sort(names)
	for zoom := MaxZoom; zoom >= 0; zoom-- {
		n := chunksPerTile(zoom)
		for _, name := range names {
			r := m.regions[name]
			w, ok := m.worlds[r.World]
			if !ok {
				continue
			}
			box := intersect(ChunkRect{MinX: r.Chunks[0], MinZ: r.Chunks[1], MaxX: r.Chunks[2], MaxZ: r.Chunks[3]}, w.extent)
			if box.Len() == 0 {
				continue
			}
			tx0, tx1 := floorDiv(box.MinX, n), floorDiv(box.MaxX, n)
			tz0, tz1 := floorDiv(box.MinZ, n), floorDiv(box.MaxZ, n)
			if (tx1-tx0+1)*(tz1-tz0+1) > int64(viewTiles) {
				continue
			}
			for tz := tz0; tz <= tz1; tz++ {
				for tx := tx0; tx <= tx1; tx++ {
					t := TileRef{World: w.Name, Zoom: zoom, TX: tx, TZ: tz}
					if seen[t] {
						continue
					}
					if len(out) == maxTiles {
						return out
					}
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// TileRef names one tile of a world.
type TileRef struct {
	World  string
	Zoom   int
	TX, TZ int64
}

// Prerender renders the tiles of PrerenderPlan into the tile cache, one
// at a time, in the background: before each it waits (polling every
// opts.Poll) until opts.Busy is false and no tile request is being
// served, and while a tile renders it asks Busy every opts.Watch and
// abandons the render (to try the tile again later) as soon as Busy
// holds, so it never competes with requests or promotions for longer than
// a Watch, nor delays a page's tile; the page then finds its first tiles cached. A failed tile
// is logged and skipped. It returns the number of tiles rendered (cached
// ones included) when the plan is done, or with ctx's error when ctx ends
// first (a render in progress is abandoned).
//
// Its caller owns it: run it in a goroutine with a context that ends at
// shutdown, and wait for it to return. It is safe to run alongside the
// Handler; running two at once only duplicates work.
func (m *Map) Prerender(ctx context.Context, opts PrerenderOptions) (int, error) {
	opts = opts.withDefaults()
	plan := m.PrerenderPlan(opts.MaxTiles, opts.ViewTiles)
	done := 0
	for i := 0; i < len(plan); {
		if err := m.waitIdle(ctx, opts); err != nil {
			return done, err
		}
		t := plan[i]
		preempted, err := m.prerenderTile(ctx, opts, t)
		switch {
		case ctx.Err() != nil:
			return done, ctx.Err()
		case preempted:
			m.stats.preempted.Add(1)
			continue // the same tile, once idle again
		case err != nil:
			m.log.Warn("webmap: prerender failed", "world", t.World, "zoom", t.Zoom, "tx", t.TX, "tz", t.TZ, "err", err)
		default:
			done++
			m.stats.prerendered.Add(1)
		}
		i++
	}
	return done, nil
}

// prerenderTile renders t, abandoning the render when opts.Busy comes to
// hold (preempted).
func (m *Map) prerenderTile(ctx context.Context, opts PrerenderOptions, t TileRef) (preempted bool, err error) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var busy atomic.Bool
	watching := make(chan struct{})
	if opts.Busy != nil {
		go func() {
			defer close(watching)
			tick := time.NewTicker(opts.Watch)
			defer tick.Stop()
			for {
				select {
				case <-tctx.Done():
					return
				case <-tick.C:
					if opts.Busy() {
						busy.Store(true)
						cancel()
						return
					}
				}
			}
		}()
	} else {
		close(watching)
	}
	_, err = m.Tile(tctx, t.World, t.Zoom, t.TX, t.TZ)
	cancel()
	<-watching
	return err != nil && busy.Load(), err
}

// waitIdle waits until neither opts.Busy nor a tile request holds.
func (m *Map) waitIdle(ctx context.Context, opts PrerenderOptions) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if m.serving.Load() == 0 && (opts.Busy == nil || !opts.Busy()) {
			return nil
		}
		t := time.NewTimer(opts.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
