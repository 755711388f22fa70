package pipeline

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stage"
)

// GroupProfile is one partition of the group sink: a profile and how many
// subspaces of it are kept ready.
type GroupProfile struct {
	Profile
	// Capacity is the number of subspaces kept ready. Default
	// DefaultGroupCapacity.
	Capacity int
	// Floor is the least quota the allocator keeps regardless of demand
	// (as SinkConfig.Floor). Default (0): the capacity, so the partition
	// is kept full. Negative: none; the quota follows demand alone, and
	// a partition above its quota lends subspaces to smaller profiles.
	Floor int
}

// GroupConfig configures the group sink (see the package documentation,
// Group placements).
type GroupConfig struct {
	// Enabled adds the group sink.
	Enabled bool
	// Name is the sink's name; each profile's partition is named
	// Name + "/" + Profile.String() ("group/8@8"). Default "group".
	Name string
	// Profiles are the partitions. Default: one, DefaultGroupSize places
	// within DefaultGroupRadius blocks, DefaultGroupCapacity subspaces;
	// zero fields of a profile take those defaults.
	Profiles []GroupProfile
	// Criteria narrow the sink: its Check replaces Options.Check for the
	// places' columns (at promotion and in rechecks).
	Criteria Criteria
	// Exclude, when set, names the columns of a chunk a subspace must not
	// use (a place handed out recently next to them: the engine's unique
	// placement). It is called once per promotion, off any lock of the
	// pipeline, and must not block.
	Exclude func(c geom.Chunk) ColumnSet
}

// ColumnSet is a set of a chunk's 256 columns: bit z*16+x is column x, z.
// The zero value is the empty set.
type ColumnSet [4]uint64

// Has reports whether column x, z (0..15 each) is in the set.
func (s *ColumnSet) Has(x, z int) bool {
	i := z*16 + x
	return s[i>>6]&(1<<(i&63)) != 0
}

// Add adds column x, z (0..15 each) to the set.
func (s *ColumnSet) Add(x, z int) {
	i := z*16 + x
	s[i>>6] |= 1 << (i & 63)
}

// groupCounters are a group sink's counters beyond sinkCounters.
type groupCounters struct {
	// groups and players count the groups served and their places.
	groups, players atomic.Uint64
	// trimmed counts the places of remainders disposed (at a take or a
	// transfer).
	trimmed atomic.Uint64
	// noRoom counts promotions whose chunk held too few safe columns near
	// the anchor for the profile.
	noRoom atomic.Uint64
	// unfit counts subspaces disposed because no k of their places fit
	// (never, for a subspace this package made).
	unfit atomic.Uint64
}

// GroupSink is one partition of the group sink: the subspaces of one
// profile (see the package documentation, Group placements). It is a
// hot sink of its own, its entries *Subspace.
//
// A GroupSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes its group sinks (see Options.Group).
type GroupSink struct {
	p       *Pipeline
	name    string
	profile Profile
	stage   stage.Stage[*Subspace]
	crit    *Criteria

	capacity atomic.Int64
	floor    atomic.Int64 // configured floor (see effectiveFloor)
	quota    atomic.Int64
	pending  atomic.Int64 // promotions in flight into this sink
	landed   atomic.Bool  // transferred into since the last OnPromote call
	// backoff is how many refill rounds to skip after promotions that
	// found no room (see noRoom), fails how many failed in a row.
	backoff atomic.Int64
	fails   atomic.Int64
	d       demand
	c       sinkCounters
	g       groupCounters
}

var _ hotSink[*Subspace] = (*GroupSink)(nil)

// newGroupSinks makes the group sink's partitions, sorted by Size then
// Radius, in a keyed stage whose partitions run the group hooks.
func newGroupSinks(p *Pipeline, gc GroupConfig) (*stage.Keyed[Profile, *Subspace], []*GroupSink, error) {
	keyed, err := stage.NewKeyed(gc.Name, func(pr Profile, capacity int) (stage.Stage[*Subspace], error) {
		return stage.NewQueue(gc.Name+"/"+pr.String(), capacity, stage.Hooks[*Subspace]{
			OnAdd:     func(s *Subspace) { p.groupRowAdd(s) },
			OnRemove:  func(s *Subspace) { p.groupRowRemove(s) },
			OnDispose: func(s *Subspace) { p.endSubspace(s) },
		})
	})
	if err != nil {
		return nil, nil, err
	}
	var sinks []*GroupSink
	for _, gp := range gc.Profiles {
		st, err := keyed.Open(gp.Profile, gp.Capacity)
		if err != nil {
			keyed.Close()
			return nil, nil, err
		}
		g := &GroupSink{p: p, name: st.Name(), profile: gp.Profile, stage: st, crit: &p.opts.Group.Criteria}
		g.capacity.Store(int64(gp.Capacity))
		g.floor.Store(int64(gp.Floor))
		g.quota.Store(int64(gp.Capacity))
		g.d.last = p.clock()
		sinks = append(sinks, g)
	}
	return keyed, sinks, nil
}

// groupRowAdd, groupRowRemove and endSubspace are the hooks of the group
// stages: a subspace's row is its anchor's; a remainder has none.
func (p *Pipeline) groupRowAdd(s *Subspace) {
	if s != nil && !s.remainder {
		p.rowAdd(s.Anchor)
	}
}

func (p *Pipeline) groupRowRemove(s *Subspace) {
	if s != nil && !s.remainder {
		p.rowRemove(s.Anchor)
	}
}

// endSubspace is the OnDispose hook of every group stage: the places'
// reservations are closed and, unless s is a remainder, its anchor has
// left the pipeline.
func (p *Pipeline) endSubspace(s *Subspace) {
	if s == nil {
		return
	}
	s.release(true)
	if !s.remainder {
		p.held.release(s.Anchor.Index)
	}
}

// Name implements hotSink: the group sink's name, "/" and the profile.
func (g *GroupSink) Name() string { return g.name }

// Profile is the sink's profile.
func (g *GroupSink) Profile() Profile { return g.profile }

// Stage returns the sink's stage (for tests and tools: offering into it
// bypasses the allocator's accounting).
func (g *GroupSink) Stage() stage.Stage[*Subspace] { return g.stage }

// coldSource implements hotSink.
func (g *GroupSink) coldSource() stage.Stage[Location] { return g.p.cold }

// Accepts implements hotSink: the resident-chunk recheck of a subspace
// for this sink. It fails closed on a nil subspace, or one with a place
// whose reservation is nil or closed or whose chunk changed, without
// reading any chunk; then it needs Size places of s that fit the sink's
// radius (choose), each passing the sink's criteria and the check on the
// chunk its own reservation holds, at its own y. It does no I/O and calls
// no verifier.
func (g *GroupSink) Accepts(s *Subspace) bool {
	if !s.live() || s.changed() {
		return false
	}
	idx := choose(s.Places, g.profile.Size, g.profile.Radius)
	if idx == nil {
		return false
	}
	for _, i := range idx {
		if !g.crit.accepts(s.Places[i], g.p.opts.Check) {
			return false
		}
	}
	return true
}

// HasExtrinsicVerifier implements hotSink.
func (g *GroupSink) HasExtrinsicVerifier() bool { return g.crit.Extrinsic }

// externallyLeased implements hotSink: false. A profile pins its
// subspaces to no holder.
func (g *GroupSink) externallyLeased() bool { return false }

// narrowsBeyondColdSource implements hotSink: true. A subspace needs more
// than its anchor (cold's guarantee): Size places within the radius.
func (g *GroupSink) narrowsBeyondColdSource() bool { return true }

// chunkCostPerEntry implements hotSink: the profile's Size, the places a
// subspace offers. Rule 0 compares it: a subspace of Size N may serve a
// destination of Size k <= N, never the reverse (subsumption).
func (g *GroupSink) chunkCostPerEntry() int { return g.profile.Size }

// demandWeight implements hotSink.
func (g *GroupSink) demandWeight() int64 { return g.d.weight() }

// Len implements hotSink: the subspaces ready.
func (g *GroupSink) Len() int { return g.stage.Len() }

// Cap implements hotSink: the subspaces the sink keeps.
func (g *GroupSink) Cap() int { return int(g.capacity.Load()) }

// Quota is the fill the allocator aims for.
func (g *GroupSink) Quota() int { return int(g.quota.Load()) }

// need is how many subspaces the sink lacks, counting promotions in flight
// (read first, as Sink.need does).
func (g *GroupSink) need() int {
	pending := int(g.pending.Load())
	return g.Quota() - g.Len() - pending
}

// Places is the number of places held by the sink's subspaces.
func (g *GroupSink) Places() int { return g.Len() * g.profile.Size }

// deliver offers a promoted or transferred subspace silently.
func (g *GroupSink) deliver(s *Subspace, now time.Time) bool {
	s.Arrived = now
	s.Profile = g.profile
	return g.stage.OfferSilent(s)
}

// take hands out k places of the oldest subspace ready: the subspace is
// trimmed to k places that fit the radius around their own centroid, its
// row removed (egress) and its guard entry released, and its remainder
// disposed through the stage, once. The places then belong to the
// caller, who closes each (Hot.Close) once its player moved. Subspaces
// whose chunk changed, that lost a reservation, or (never, for subspaces
// this package made) of which no k places fit, are disposed and skipped.
func (g *GroupSink) take(k int) ([]*Hot, bool) {
	p := g.p
	for {
		s, ok := g.stage.PollSilent()
		if !ok {
			return nil, false
		}
		switch {
		case s.changed():
			g.c.changed.Add(1)
			g.stage.Dispose(s)
			continue
		case !s.live():
			g.c.stale.Add(1)
			g.stage.Dispose(s)
			continue
		}
		kept, rem, ok := s.trim(k, g.profile.Radius)
		if !ok {
			g.g.unfit.Add(1)
			g.stage.Dispose(s)
			continue
		}
		p.rowRemove(s.Anchor) // egress, as a Poll would
		p.held.release(s.Anchor.Index)
		if rem != nil {
			g.g.trimmed.Add(uint64(len(rem.Places)))
			g.stage.Dispose(rem)
		}
		g.c.hits.Add(1)
		g.g.groups.Add(1)
		g.g.players.Add(uint64(k))
		return kept, true
	}
}

// demoteGroup is the demotion of a subspace out of its stage (from, or
// nil for one that never reached a stage): its places lose their
// reservations and its anchor goes back to cold silently (the row stays);
// if cold is full, cold's disposal ends the anchor.
func (p *Pipeline) demoteGroup(s *Subspace, from stage.Stage[*Subspace]) {
	dispose := func(s *Subspace) {
		if from != nil {
			from.Dispose(s)
			return
		}
		s.release(true)
		p.cold.Dispose(s.Anchor)
	}
	tr := stage.Transition[*Subspace, Location]{
		Name: "demote group",
		Promote: func(_ context.Context, s *Subspace) (stage.Outcome[Location], error) {
			s.release(true)
			return stage.Promoted(s.Anchor), nil
		},
		Dispose: dispose,
		Logger:  p.log,
	}
	out := tr.Run(context.Background(), s)
	if out.Promoted {
		p.ctr.demotions.Add(1)
		p.cold.OfferSilent(out.Value)
	}
}

// groupFor returns the group sink a group of k players is served from
// first: the smallest profile holding at least k places (the first by
// radius among equals), or nil when none does.
func (p *Pipeline) groupFor(k int) *GroupSink {
	for _, g := range p.groups {
		if g.profile.Size >= k {
			return g
		}
	}
	return nil
}

// Groups returns the group sink's partitions, by Size then Radius; nil
// when the group sink is not enabled.
func (p *Pipeline) Groups() []*GroupSink { return p.groups }

// MaxGroup returns the largest group the group sink serves (the largest
// profile's Size), or 0 when it is not enabled.
func (p *Pipeline) MaxGroup() int {
	if len(p.groups) == 0 {
		return 0
	}
	return p.groups[len(p.groups)-1].profile.Size
}
