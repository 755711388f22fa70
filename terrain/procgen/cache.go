package procgen

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/internal/lru"
)

type cellKey struct{ x, z int64 }

// cellCache keeps the most recently used drainage cells. Concurrent misses
// for one cell share one computation under the internal/flight policy: it
// goes on while any caller still waits for it, a caller whose context ends
// returns ctx.Err() alone, and a panicking computation is logged and
// becomes an error for every waiter. Failures are not cached.
//
// The zero value is not usable; see newCellCache. Safe for concurrent use.
type cellCache struct {
	capacity int
	compute  func(ctx context.Context, k cellKey) (*cell, error)
	flights  flight.Group[cellKey, *cell]

	hits, computes atomic.Int64 // statistics for tests and benchmarks

	mu sync.Mutex
	// mu protects the following field.
	lru lru.Map[cellKey, *cell]
}

func newCellCache(capacity int, compute func(context.Context, cellKey) (*cell, error)) *cellCache {
	return &cellCache{capacity: capacity, compute: compute}
}

// get returns the cell for k, computing it at most once among concurrent
// callers. It returns ctx.Err() when ctx ends first.
func (c *cellCache) get(ctx context.Context, k cellKey) (*cell, error) {
	c.mu.Lock()
	cl, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
		return cl, nil
	}
	cl, joined, err := c.flights.Do(ctx, k, func(ctx context.Context) (*cell, error) {
		c.computes.Add(1)
		cl, err := c.compute(ctx, k)
		if err == nil && cl != nil {
			c.mu.Lock()
			c.lru.Put(k, cl)
			for c.lru.Len() > c.capacity {
				c.lru.RemoveOldest()
			}
			c.mu.Unlock()
		}
		return cl, err
	})
	if err == nil && joined {
		c.hits.Add(1)
	}
	return cl, err
}

// len returns the number of cells retained.
func (c *cellCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
