package procworld

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/internal/lru"
)

// tileKey is a tile's index on the world's tile grid: its origin divided by
// the tile size.
type tileKey struct{ x, z int64 }

// tileCache keeps the most recently used tiles, bounded by entries.
// Concurrent misses for one tile share one load under the internal/flight
// policy: the load goes on while any caller still waits for it, a caller
// whose context ends returns ctx.Err() alone, a source error reaches every
// waiter, and a panicking source is logged and becomes an error wrapping
// flight.ErrPanicked for every waiter.
//
// Failed loads are not cached: the next request tries again.
//
// The zero value is not usable; see newTileCache. Safe for concurrent use.
type tileCache struct {
	load     func(ctx context.Context, k tileKey) (*grid, error)
	capacity int
	flights  flight.Group[tileKey, *grid]

	hits, loads, shared atomic.Int64

	mu  sync.Mutex // protects the following field
	lru lru.Map[tileKey, *grid]
}

func newTileCache(capacity int, load func(context.Context, tileKey) (*grid, error)) *tileCache {
	return &tileCache{load: load, capacity: max(capacity, 1)}
}

// get returns the tile for k, loading it at most once among concurrent
// callers. It returns ctx.Err() when ctx ends first.
func (c *tileCache) get(ctx context.Context, k tileKey) (*grid, error) {
	c.mu.Lock()
	t, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
		return t, nil
	}
	t, joined, err := c.flights.Do(ctx, k, func(ctx context.Context) (*grid, error) {
		c.loads.Add(1)
		t, err := c.load(ctx, k)
		if err == nil {
			c.mu.Lock()
			c.lru.Put(k, t)
			for c.lru.Len() > c.capacity {
				c.lru.RemoveOldest()
			}
			c.mu.Unlock()
		}
		return t, err
	})
	if err != nil {
		return nil, err
	}
	if joined {
		c.shared.Add(1)
	}
	return t, nil
}

// len returns the number of tiles retained.
func (c *tileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
