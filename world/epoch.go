package world

import (
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/geom"
)

// Epochs design notes.
//
// Reads (Of) are on the teleport path, once per hot entry handed out;
// writes (Bump) come from a change watcher, a few times a second at most,
// each naming up to a region's worth of chunks. So reads must take no lock
// and not allocate, and writes may copy.
//
// The counters live in epochShards copy-on-write maps, each behind an
// atomic.Pointer: Of hashes the chunk to its shard and does one map lookup
// on an immutable map; Bump, under one writer mutex, copies each shard it
// touches once per call (not once per chunk) and publishes the copies. A
// shard holds only chunks ever bumped, so a write costs a copy of
// 1/epochShards of them. A single map would make every Bump copy every chunk
// ever changed; a table of atomic counters indexed by a hash would be
// cheaper still but would report unrelated chunks as changed on collisions.

// epochShards is the number of copy-on-write shards of an Epochs.
const epochShards = 64

// Epochs is a per-chunk change counter: Of(c) is the number of times c was
// bumped, 0 for a chunk never bumped. A copy of a chunk's data taken while
// Of(c) was e is stale once Of(c) != e.
//
// The zero value is an empty, usable Epochs; it must not be copied after
// first use. An Epochs is safe for concurrent use: Of takes no lock and does
// not allocate; Bump serialises with other Bumps.
type Epochs struct {
	mu     sync.Mutex // serialises Bump
	shards [epochShards]atomic.Pointer[map[geom.Chunk]uint32]
}

// NewEpochs returns an empty Epochs (the same as the zero value).
func NewEpochs() *Epochs { return new(Epochs) }

// epochShard returns the shard of c: a mix of both coordinates, so that the
// chunks of one region spread over every shard.
func epochShard(c geom.Chunk) int {
	h := uint64(c.X)*0x9e3779b97f4a7c15 ^ uint64(c.Z)*0xc2b2ae3d27d4eb4f
	return int((h ^ h>>29) % epochShards)
}

// Of returns the change count of c. A nil Epochs reports 0 for every chunk.
func (e *Epochs) Of(c geom.Chunk) uint32 {
	if e == nil {
		return 0
	}
	m := e.shards[epochShard(c)].Load()
	if m == nil {
		return 0
	}
	return (*m)[c]
}

// Bump adds one to the change count of every chunk given (a chunk named
// twice is bumped twice). Readers see each shard's new counts at once; a
// reader may see the chunks of one call bumped in different shards at
// slightly different instants.
func (e *Epochs) Bump(chunks ...geom.Chunk) {
	if len(chunks) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var fresh [epochShards]map[geom.Chunk]uint32
	for _, c := range chunks {
		i := epochShard(c)
		m := fresh[i]
		if m == nil {
			var old map[geom.Chunk]uint32
			if p := e.shards[i].Load(); p != nil {
				old = *p
			}
			m = make(map[geom.Chunk]uint32, len(old)+1)
			for k, v := range old {
				m[k] = v
			}
			fresh[i] = m
		}
		m[c]++
	}
	for i, m := range fresh {
		if m != nil {
			e.shards[i].Store(&m)
		}
	}
}

// Len returns the number of distinct chunks ever bumped.
func (e *Epochs) Len() int {
	if e == nil {
		return 0
	}
	n := 0
	for i := range e.shards {
		if m := e.shards[i].Load(); m != nil {
			n += len(*m)
		}
	}
	return n
}
