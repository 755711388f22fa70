package pipeline

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/stage"
)

// ErrGroupSize is returned by GroupSink.Take for a request of no player or
// of more players than the sink's subspaces hold.
var ErrGroupSize = errors.New("pipeline: group request size out of range")

// GroupSink caches group placements by superset (leafrtp group addon
// ADR-002): every entry is a Subspace of the sink's Size hot locations,
// the largest group the profile serves, and a request for k <= Size
// players is served from one subspace, whose Size-k unused members are
// disposed (exactly once, through the sink's OnDispose). Its chunk cost per
// entry is Size, so by rule 0 a group sink can pass subspaces to a sink of
// smaller or equal size, never to a larger one.
//
// A GroupSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes it (see Options).
type GroupSink struct {
	p    *Pipeline
	name string
	size int
	ring *stage.Ring[*Subspace]
	crit Criteria

	capacity atomic.Int64 // subspaces
	floor    atomic.Int64
	quota    atomic.Int64
	pending  atomic.Int64
	landed   atomic.Bool // transferred into since the last OnPromote call
	d        demand
	c        sinkCounters
}

var _ hotSink[*Subspace] = (*GroupSink)(nil)

func newGroupSink(p *Pipeline, name string, size, capacity, floor int, crit Criteria) (*GroupSink, error) {
	g := &GroupSink{p: p, name: name, size: size, crit: crit}
	ring, err := stage.NewRing(name, capacity, stage.Hooks[*Subspace]{
		OnAdd: func(s *Subspace) {
			for _, m := range s.Members {
				p.rowAdd(m.Location)
			}
		},
		OnRemove: func(s *Subspace) {
			for _, m := range s.Members {
				p.rowRemove(m.Location)
			}
		},
		OnDispose: func(s *Subspace) {
			for _, m := range s.Members {
				p.endHot(m)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	g.ring = ring
	g.capacity.Store(int64(capacity))
	g.floor.Store(int64(floor))
	g.quota.Store(int64(capacity))
	g.d.last = p.clock()
	return g, nil
}

// Size is the number of members of each subspace: the largest group served.
func (g *GroupSink) Size() int { return g.size }

// Stage returns the sink's stage (for tests and tools).
func (g *GroupSink) Stage() stage.Stage[*Subspace] { return g.ring }

// Take serves a group of k players, 1 <= k <= Size, from one subspace: it
// returns k hot locations, which belong to the caller (close each with
// Hot.Close), and disposes the other members. It fails with ErrGroupSize
// for k out of range, and ErrMiss when no subspace is ready.
func (g *GroupSink) Take(k int) ([]*Hot, error) {
	if k < 1 || k > g.size {
		return nil, fmt.Errorf("%w: %d players, subspaces of %d", ErrGroupSize, k, g.size)
	}
	g.d.requests.Add(1)
	for {
		s, ok := g.ring.PollSilent()
		if !ok {
			g.c.misses.Add(1)
			g.p.recordMiss(g.name)
			return nil, ErrMiss
		}
		if g.anyChanged(s) {
			g.c.changed.Add(1)
			g.ring.Dispose(s)
			continue
		}
		if !g.allLive(s) || len(s.Members) < k {
			g.c.stale.Add(1)
			g.ring.Dispose(s)
			continue
		}
		taken, rest := g.split(s, k)
		for _, m := range taken.Members {
			g.p.rowRemove(m.Location) // egress, as a Poll would
			g.p.held.release(m.Index)
		}
		if rest != nil {
			g.c.trims.Add(1)
			g.ring.Dispose(rest)
		}
		g.c.hits.Add(1)
		return taken.Members, nil
	}
}

// split cuts s into its first k members and the rest (nil when none).
func (g *GroupSink) split(s *Subspace, k int) (taken, rest *Subspace) {
	if len(s.Members) == k {
		return s, nil
	}
	taken = &Subspace{Members: s.Members[:k:k], Since: s.Since, Arrived: s.Arrived}
	rest = &Subspace{Members: append([]*Hot(nil), s.Members[k:]...), Since: s.Since, Arrived: s.Arrived}
	return taken, rest
}

// anyChanged reports whether a member's chunk changed since it was
// checked: the subspace is then disposed whole (its members were placed
// together).
func (g *GroupSink) anyChanged(s *Subspace) bool {
	if s == nil {
		return false
	}
	for _, m := range s.Members {
		if m.changed() {
			return true
		}
	}
	return false
}

func (g *GroupSink) allLive(s *Subspace) bool {
	if s == nil || len(s.Members) == 0 {
		return false
	}
	for _, m := range s.Members {
		if !m.live() {
			return false
		}
	}
	return true
}

// Name implements hotSink.
func (g *GroupSink) Name() string { return g.name }

// coldSource implements hotSink.
func (g *GroupSink) coldSource() stage.Stage[Location] { return g.p.cold }

// Accepts implements hotSink: the subspace must hold at least Size members,
// every one with a live reservation (it fails closed otherwise, reading no
// chunk) and passing the sink's criteria on its resident chunk.
func (g *GroupSink) Accepts(s *Subspace) bool {
	if s == nil || len(s.Members) < g.size {
		return false
	}
	for _, m := range s.Members {
		if !m.live() || m.changed() {
			return false
		}
	}
	for _, m := range s.Members {
		if !g.crit.accepts(m, g.p.opts.Check) {
			return false
		}
	}
	return true
}

// HasExtrinsicVerifier implements hotSink.
func (g *GroupSink) HasExtrinsicVerifier() bool { return g.crit.Extrinsic }

// externallyLeased implements hotSink: false.
func (g *GroupSink) externallyLeased() bool { return false }

// narrowsBeyondColdSource implements hotSink.
func (g *GroupSink) narrowsBeyondColdSource() bool { return g.crit.narrows() }

// chunkCostPerEntry implements hotSink: Size.
func (g *GroupSink) chunkCostPerEntry() int { return g.size }

// demandWeight implements hotSink.
func (g *GroupSink) demandWeight() int64 { return g.d.weight() }

// Len implements hotSink: subspaces ready.
func (g *GroupSink) Len() int { return g.ring.Len() }

// Cap implements hotSink: capacity in subspaces.
func (g *GroupSink) Cap() int { return int(g.capacity.Load()) }

// Quota is the number of subspaces the allocator aims for.
func (g *GroupSink) Quota() int { return int(g.quota.Load()) }

// SetCapacity changes the capacity in subspaces, as Sink.SetCapacity.
func (g *GroupSink) SetCapacity(n int) {
	g.capacity.Store(int64(min(max(n, 0), stage.MaxCapacity)))
}

func (g *GroupSink) room() int { return g.Cap() - g.Len() }

func (g *GroupSink) deliver(s *Subspace, now time.Time) bool {
	s.Arrived = now
	return g.ring.OfferSilent(s)
}

func (g *GroupSink) fitRing() {
	want := max(g.Cap(), g.Len())
	have := g.ring.Cap()
	if want > have || want < have/2 {
		g.ring.Resize(want)
	}
}
