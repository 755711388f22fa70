package procworld

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/terrain"
)

// tileKey is a tile's index on the world's tile grid: its origin divided by
// the tile size.
type tileKey struct{ x, z int64 }

// tileCache keeps the most recently used tiles, bounded by entries.
// Concurrent misses for one tile share one load: the first caller loads
// with its own context while the others wait. If the load fails because
// that caller's context ended, the waiters retry (one of them becomes the
// new loader) rather than inherit an error that is not theirs; any other
// error is shared with them, since the source would only repeat it.
//
// Failed loads are not cached: the next request tries again.
//
// The zero value is not usable; see newTileCache. Safe for concurrent use.
type tileCache struct {
	load func(ctx context.Context, k tileKey) (*terrain.Tile, error)

	hits, loads, shared atomic.Int64

	mu      sync.Mutex // protects the following fields
	lru     *lru[tileKey, *terrain.Tile]
	flights map[tileKey]*tileFlight
}

// tileFlight is one load shared by every caller that misses on its key.
type tileFlight struct {
	done chan struct{} // closed once tile or err is set
	tile *terrain.Tile
	err  error
	// ctxEnded: err is the loader's own ctx error; waiters retry.
	ctxEnded bool
}

var errLoadPanicked = errors.New("procworld: tile source panicked")

func newTileCache(capacity int, load func(context.Context, tileKey) (*terrain.Tile, error)) *tileCache {
	return &tileCache{
		load:    load,
		lru:     newLRU[tileKey, *terrain.Tile](capacity),
		flights: make(map[tileKey]*tileFlight),
	}
}

// get returns the tile for k, loading it at most once among concurrent
// callers. It returns ctx.Err() when ctx ends first.
func (c *tileCache) get(ctx context.Context, k tileKey) (*terrain.Tile, error) {
	for {
		c.mu.Lock()
		if t, ok := c.lru.Get(k); ok {
			c.mu.Unlock()
			c.hits.Add(1)
			return t, nil
		}
		f, waiting := c.flights[k]
		if !waiting {
			f = &tileFlight{done: make(chan struct{})}
			c.flights[k] = f
		}
		c.mu.Unlock()

		if !waiting {
			return c.loadShared(ctx, k, f)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.ctxEnded {
			continue // the loader gave up; try again under our own ctx
		}
		if f.err != nil {
			return nil, f.err
		}
		c.shared.Add(1)
		return f.tile, nil
	}
}

// loadShared loads k for f and publishes the result. The deferred cleanup
// also runs when load panics, so waiters never hang.
func (c *tileCache) loadShared(ctx context.Context, k tileKey, f *tileFlight) (t *terrain.Tile, err error) {
	finished := false
	defer func() {
		if !finished {
			t, err = nil, errLoadPanicked
		}
		c.mu.Lock()
		delete(c.flights, k)
		if err == nil {
			c.lru.Add(k, t)
		}
		c.mu.Unlock()
		f.tile, f.err = t, err
		f.ctxEnded = err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
		close(f.done)
	}()
	c.loads.Add(1)
	t, err = c.load(ctx, k)
	finished = true
	return t, err
}

// len returns the number of tiles retained.
func (c *tileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
