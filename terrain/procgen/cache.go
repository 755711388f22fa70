package procgen

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
)

type cellKey struct{ x, z int64 }

// cellCache keeps the most recently used drainage cells. Concurrent misses
// for one cell share one computation: the first caller computes with its
// own context while the others wait; if that caller's context ends, the
// waiters retry (one of them becomes the new computer) rather than inherit
// an error that is not theirs.
//
// The zero value is not usable; see newCellCache. Safe for concurrent use.
type cellCache struct {
	capacity int
	compute  func(ctx context.Context, k cellKey) (*cell, error)

	hits, computes atomic.Int64 // statistics for tests and benchmarks

	mu sync.Mutex
	// mu protects the following fields.
	lru      *list.List // of *cacheEntry, most recent at the front
	entries  map[cellKey]*list.Element
	inflight map[cellKey]*cellCall
}

type cacheEntry struct {
	key  cellKey
	cell *cell
}

type cellCall struct {
	done chan struct{}
	cell *cell // set before done closes; nil when the computation failed
}

func newCellCache(capacity int, compute func(context.Context, cellKey) (*cell, error)) *cellCache {
	return &cellCache{
		capacity: capacity,
		compute:  compute,
		lru:      list.New(),
		entries:  make(map[cellKey]*list.Element),
		inflight: make(map[cellKey]*cellCall),
	}
}

// get returns the cell for k, computing it at most once among concurrent
// callers. It returns ctx.Err() when ctx ends first.
func (c *cellCache) get(ctx context.Context, k cellKey) (*cell, error) {
	for {
		c.mu.Lock()
		if e, ok := c.entries[k]; ok {
			c.lru.MoveToFront(e)
			c.mu.Unlock()
			c.hits.Add(1)
			return e.Value.(*cacheEntry).cell, nil
		}
		if call, ok := c.inflight[k]; ok {
			c.mu.Unlock()
			select {
			case <-call.done:
				if call.cell != nil {
					c.hits.Add(1)
					return call.cell, nil
				}
				continue // the computer gave up; try again
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		call := &cellCall{done: make(chan struct{})}
		c.inflight[k] = call
		c.mu.Unlock()

		return c.computeShared(ctx, k, call)
	}
}

// computeShared computes k for call and publishes the result. The deferred
// cleanup also runs if compute panics, so waiters never hang.
func (c *cellCache) computeShared(ctx context.Context, k cellKey, call *cellCall) (cl *cell, err error) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, k)
		if err == nil && cl != nil {
			call.cell = cl
			c.addLocked(k, cl)
		}
		c.mu.Unlock()
		close(call.done)
	}()
	c.computes.Add(1)
	return c.compute(ctx, k)
}

// addLocked inserts a computed cell and evicts beyond capacity.
func (c *cellCache) addLocked(k cellKey, cl *cell) {
	c.entries[k] = c.lru.PushFront(&cacheEntry{key: k, cell: cl})
	for c.lru.Len() > c.capacity {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
}

// len returns the number of cells retained.
func (c *cellCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
