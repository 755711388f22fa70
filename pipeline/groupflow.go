package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// maxGroupBackoff bounds the refill rounds a group sink skips after
// promotions that found no room: a world where few chunks hold a group
// (islands, caves) costs at most one chunk load per this many pulses and
// profile.
const maxGroupBackoff = 256

// startGroup takes one location out of cold and grows a subspace of g's
// profile around it on a goroutine of the pipeline (see startSingle).
func (p *Pipeline) startGroup(g *GroupSink) bool {
	loc, ok := p.cold.PollSilent()
	if !ok {
		return false
	}
	g.pending.Add(1)
	p.promoting.Add(1)
	turn := p.opts.Gate.Promise()
	p.spawn(func() {
		defer p.kick()
		defer g.pending.Add(-1)
		s, ok := p.promoteGroupOne(p.base, g, loc, turn)
		p.promoting.Add(-1)
		if !ok || !p.settleGroup(p.base, s) {
			return
		}
		p.deliverGroup(g, s)
	})
	return true
}

// promoteGroupOne runs the group promotion transition (cold -> group
// sink) on a location already taken out of cold, and deals with a
// rejection as promoteOne does; a location around which no subspace fits
// goes back to cold and backs g's refill off.
func (p *Pipeline) promoteGroupOne(ctx context.Context, g *GroupSink, loc Location, turn *pacer.Promise) (*Subspace, bool) {
	defer turn.Cancel()
	var v verdict
	tr := stage.Transition[Location, *Subspace]{
		Name: "promote group",
		Promote: func(ctx context.Context, l Location) (stage.Outcome[*Subspace], error) {
			return p.promoteGroup(ctx, g, l, turn, &v)
		},
		Dispose: p.cold.Dispose,
		Logger:  p.log,
	}
	out := tr.Run(ctx, loc)
	p.ctr.promotionRejects[min(out.Reason, stage.ReasonError)].Add(1)
	if out.Promoted {
		g.fails.Store(0)
		return out.Value, true
	}
	if v.noRoom {
		g.g.noRoom.Add(1)
		n := g.fails.Add(1)
		g.backoff.Store(min(int64(1)<<min(n, 16), maxGroupBackoff))
	}
	p.promotionFailed(loc, out.Reason, &v)
	return nil, false
}

// column is a candidate place of a subspace: a column and its landing y.
type column struct {
	b geom.Block
	y int
}

// promoteGroup is the body of the group promotion: consult memory,
// reserve the anchor's chunk, check the anchor's column and the columns
// near it on the resident chunk, ask the verifiers, then give each place
// its own reservation. Whatever it reserved it closes itself unless it
// returns a promotion.
func (p *Pipeline) promoteGroup(ctx context.Context, g *GroupSink, loc Location, promised *pacer.Promise, v *verdict) (out stage.Outcome[*Subspace], err error) {
	pr, rej := p.beginPromotion(ctx, loc, promised, v)
	if rej != nil {
		return stage.Rejected[*Subspace](rej.reason, rej.detail), nil
	}
	defer pr.end()
	ctx = pr.ctx
	var opened []*world.Reservation
	promoted := false
	defer func() {
		if !promoted {
			for _, r := range opened {
				_ = r.Close()
			}
		}
	}()
	reserve := func() (*world.Reservation, error) {
		res, err := p.opts.Reserver.ReserveFor(ctx, loc.Chunk(), p.opts.ReservationLifespan)
		if err == nil && res == nil {
			err = fmt.Errorf("pipeline: Reserver returned neither a reservation nor an error")
		}
		if err == nil {
			opened = append(opened, res)
		}
		return res, err
	}
	res0, err := reserve()
	if err != nil {
		return stage.Rejected[*Subspace](p.reserveFailed(loc, err, v)), nil
	}
	check := p.opts.Check
	if g.crit.Check != nil {
		check = g.crit.Check
	}
	// The anchor first: cold vouched for it, and a rejection of it is
	// the location's, remembered as a single promotion remembers it.
	y, cause, ok := check(res0, loc.Block())
	if !ok {
		pr.leave()
		rej, err := checkRejected(loc, cause, v)
		if err != nil {
			return out, err
		}
		return stage.Rejected[*Subspace](rej.reason, rej.detail), nil
	}
	loc.Y = int64(y)
	var exclude ColumnSet
	if f := p.opts.Group.Exclude; f != nil {
		exclude = f(loc.Chunk())
	}
	size := g.profile.Size
	safe := make([]column, 0, size)
	for _, b := range p.groupColumns(g.profile, loc, &exclude) {
		if b == loc.Block() {
			safe = append(safe, column{b, y})
			continue
		}
		if cy, _, ok := check(res0, b); ok {
			safe = append(safe, column{b, cy})
		}
	}
	pr.leave()
	if len(safe) < size {
		v.noRoom = true
		return stage.Rejected[*Subspace](stage.ReasonUnsafeBlock, fmt.Sprintf("%d safe columns near %v, profile %v needs %d", len(safe), loc.Block(), g.profile, size)), nil
	}
	chosen := make([]column, 0, size)
	for _, c := range safe {
		if len(chosen) == size {
			break
		}
		if p.opts.Verifiers != nil {
			r := p.opts.Verifiers.Check(ctx, verify.Location{World: loc.World, X: c.b.X, Y: int64(c.y), Z: c.b.Z})
			if !r.Passed {
				if p.base.Err() == nil && r.Err == nil && c.b != loc.Block() {
					continue // another column of the chunk: skipped, not remembered
				}
				rej := p.verifiersRejected(r, v)
				return stage.Rejected[*Subspace](rej.reason, rej.detail), nil
			}
		}
		chosen = append(chosen, c)
	}
	if len(chosen) < size {
		v.noRoom = true
		return stage.Rejected[*Subspace](stage.ReasonClaimProtected, fmt.Sprintf("%d columns near %v passed the verifiers, profile %v needs %d", len(chosen), loc.Block(), g.profile, size)), nil
	}
	now := p.clock()
	s := &Subspace{Anchor: loc, Profile: g.profile, Since: now, Arrived: now, Places: make([]*Hot, 0, size)}
	for i, c := range chosen {
		res := res0
		if i > 0 {
			if res, err = reserve(); err != nil {
				return stage.Rejected[*Subspace](p.reserveFailed(loc, err, v)), nil
			}
			if res.Chunk() != res0.Chunk() {
				// The chunk was loaded again meanwhile (it changed at its
				// source): the places were checked on the old copy.
				v.cause, v.recycle = memory.CauseTimeout, true
				return stage.Rejected[*Subspace](stage.ReasonReservationFailed, fmt.Sprintf("%v changed while its subspace was made", loc.Chunk())), nil
			}
		}
		s.Places = append(s.Places, &Hot{
			Location: Location{World: loc.World, X: c.b.X, Y: int64(c.y), Z: c.b.Z, Index: loc.Index},
			Res:      res, Since: now, Arrived: now, ctr: &p.rel,
		})
	}
	promoted = true
	return stage.Promoted(s), nil
}

// groupColumns returns the columns of loc's chunk a subspace of profile
// pr may use, in a random order (seeded by the location, so a location
// always yields the same order), loc's own column first when it is one:
// those within pr.Radius/2 of a centre column (loc's column, moved
// inwards so that the disk lies in the chunk when it can), less those of
// exclude.
func (p *Pipeline) groupColumns(pr Profile, loc Location, exclude *ColumnSet) []geom.Block {
	lx, lz := loc.Block().Local()
	m := min(pr.Radius/2, 7)
	cx, cz := min(max(lx, m), 15-m), min(max(lz, m), 15-m)
	origin := loc.Chunk().Origin()
	offs := diskOffsets(pr.Radius)
	out := make([]geom.Block, 0, len(offs))
	anchor := -1
	for _, o := range offs {
		x, z := cx+o[0], cz+o[1]
		if x < 0 || x > 15 || z < 0 || z > 15 || exclude.Has(x, z) {
			continue
		}
		if x == lx && z == lz {
			anchor = len(out)
		}
		out = append(out, geom.Block{X: origin.X + int64(x), Z: origin.Z + int64(z)})
	}
	rng := rand.New(rand.NewPCG(p.groupSeed^uint64(loc.X), uint64(loc.Z)^uint64(loc.Index)<<20))
	rng.Shuffle(len(out), func(i, j int) {
		out[i], out[j] = out[j], out[i]
		switch anchor {
		case i:
			anchor = j
		case j:
			anchor = i
		}
	})
	if anchor > 0 {
		out[0], out[anchor] = out[anchor], out[0]
	}
	return out
}

// settleGroup waits until the anchor's row is hot on disk (awaitHot), as
// settle does for a single entry; it reports whether s may be served. A
// group's marks ride the writer's next batch: a group sink holds a few
// subspaces and its refill is the pipeline's least urgent work.
func (p *Pipeline) settleGroup(ctx context.Context, s *Subspace) bool {
	switch p.awaitHot(ctx, s.Anchor, false) {
	case hotDemote:
		p.demoteGroup(s, nil)
		return false
	case hotForeign:
		s.release(false)
		p.held.release(s.Anchor.Index)
		p.ctr.foreign.Add(1)
		return false
	}
	p.ctr.promotions.Add(1)
	return true
}

// deliverGroup offers a promoted subspace to g, or demotes it when g's
// criteria refuse it or g has no room.
func (p *Pipeline) deliverGroup(g *GroupSink, s *Subspace) {
	if g.crit.narrows() && !g.Accepts(s) {
		g.c.mismatched.Add(1)
		p.ctr.mismatched.Add(1)
		p.demoteGroup(s, nil)
		return
	}
	if g.Len() >= g.Cap() {
		p.demoteGroup(s, nil)
		return
	}
	g.c.promotions.Add(1)
	if g.deliver(s, p.clock()) {
		p.notifyPromote(g.name, &p.groupSig)
	}
}

// refillGroups starts promotions into the group sinks under quota, with
// what the single-target sinks left: it runs after their round, and
// starts nothing while one of them still lacks an entry (the lowest
// priority of the scheduling rule). budget is what is left of the round's
// promotions. A pulse's round also counts down each sink's backoff.
func (p *Pipeline) refillGroups(pulse bool, budget int) {
	b := p.opts.Budget
	if pulse {
		p.countDownGroupBackoff()
	}
	for _, g := range p.groups {
		if g.backoff.Load() > 0 {
			continue
		}
		for n := g.need(); n > 0; n-- {
			room := b.MaxPromotions - int(p.promoting.Load())
			if budget <= 0 || room <= 0 || p.cold.Len() == 0 {
				return
			}
			if !p.startGroup(g) {
				return
			}
			budget--
		}
	}
}

// dropKnownBad disposes the subspaces of g whose chunk memory has marked
// bad since they were cached (a unique-placement mark around a place
// handed out, a claim): no group request could be given them, and,
// unlike a single sink's entries, which requests take and drop in a
// stream, a group sink's few subspaces would otherwise sit there, held,
// keeping the region from ever being found exhausted. Called on each
// pulse; the work is bounded by the sink's capacity.
func (p *Pipeline) dropKnownBad(g *GroupSink) {
	n := sweepStage(g.stage, func(s *Subspace) bool {
		_, bad := p.opts.Memory.CauseAt(s.Anchor.Index)
		return bad
	})
	p.ctr.knownBad.Add(uint64(n))
}

// countDownGroupBackoff counts one refill round off every group sink's
// backoff: each pulse's round calls it once.
func (p *Pipeline) countDownGroupBackoff() {
	for _, g := range p.groups {
		if g.backoff.Load() > 0 {
			g.backoff.Add(-1)
		}
	}
}

// transferGroups moves subspaces from group sinks over quota to group
// sinks under quota whose pair passes rule 0 (subsumption: the source's
// Size at least the destination's), each certified by the destination's
// Accepts, trimmed to the destination's Size, the remainder disposed
// through the source's stage. It returns the budget left.
func (p *Pipeline) transferGroups(now time.Time, budget int) int {
	for _, d := range p.groups {
		for _, s := range p.groups {
			need := d.need()
			if need <= 0 || budget <= 0 {
				break
			}
			if pairEligible[*Subspace](s, d) != ineligibleUncertified {
				continue
			}
			surplus := s.Len() - s.Quota()
			if surplus <= 0 {
				continue
			}
			budget -= p.moveGroups(s, d, min(need, surplus, budget), now)
		}
	}
	return budget
}

// moveGroups transfers up to n subspaces from s to d, oldest first (see
// moveSingles), each trimmed to d's Size by transferGroup. It returns how
// many it moved.
func (p *Pipeline) moveGroups(s, d *GroupSink, n int, now time.Time) int {
	moved := 0
	for tries := s.Len(); moved < n && tries > 0; tries-- {
		sub, ok := s.stage.PollSilent()
		if !ok {
			break
		}
		if !sub.live() {
			s.c.stale.Add(1)
			s.stage.Dispose(sub)
			continue
		}
		if !p.residentEnough(sub.Arrived, now) {
			s.stage.OfferSilent(sub)
			break
		}
		if !p.transferGroup(s, d, sub, now) {
			s.stage.OfferSilent(sub)
			continue
		}
		moved++
	}
	return moved
}

// transferGroup is the transfer transition of one subspace, taken out of
// s, into d: the transfer-eligibility test (rule 0 is subsumption; the
// subspace itself must be certified, by d's Accepts), then the trim to
// d's Size (places that fit d's radius), the trimmed subspace delivered
// to d carrying the row and the guard entry, and the remainder disposed
// through s's stage, once. It reports false, changing nothing, when the
// test does not certify sub.
func (p *Pipeline) transferGroup(s, d *GroupSink, sub *Subspace, now time.Time) bool {
	if !eligible[*Subspace](s, d, sub).certified() {
		return false
	}
	kept, rem, ok := sub.trim(d.profile.Size, d.profile.Radius)
	if !ok {
		return false
	}
	moved := &Subspace{Anchor: sub.Anchor, Places: kept, Since: sub.Since}
	if d.deliver(moved, now) {
		d.landed.Store(true)
	}
	if rem != nil {
		s.g.trimmed.Add(uint64(len(rem.Places)))
		s.stage.Dispose(rem)
	}
	s.c.transfersO.Add(1)
	d.c.transfersIn.Add(1)
	p.ctr.transfers.Add(1)
	return true
}

// GroupAdmitter decides whether the places just taken for a group may be
// handed out (GroupRequest.Admit): all or none. It must not block.
type GroupAdmitter interface {
	// AdmitGroup reports whether places may be handed out; it may
	// record that they were (claimed spots).
	AdmitGroup(places []*Hot) bool
}

// GroupRequest is one request for a group's places (see
// Pipeline.TakeGroup).
type GroupRequest struct {
	// Size is the number of places, one per player: 1 to MaxGroup().
	Size int
	// Admit, when set, decides whether the places taken may be handed
	// out; places it refuses are closed (counted in Stats.Refused) and
	// the next subspace is tried. Default nil: all are admitted.
	Admit GroupAdmitter
	// Paused, Exhausted, Stop, Done and Wait bound the wait on a miss as
	// in Request.
	Paused    *atomic.Bool
	Exhausted *atomic.Bool
	Stop      <-chan struct{}
	Done      <-chan struct{}
	Wait      time.Duration
}

// TakeGroup serves one group request: it takes a subspace of the
// smallest profile holding at least req.Size places (or, when that
// partition is empty, of a larger one that has a subspace ready: superset
// caching), trims it to req.Size places that fit the profile's radius
// around their own centroid, disposes the remainder through the sink's
// stage, and returns the places with the name of the sink that served
// them. On a miss it waits, as Take does, for the next subspace to land
// in any partition that could serve it. The places then belong to the
// caller, who closes each (Hot.Close) once its player has moved, or gives
// it back.
//
// It fails with ErrNoSink when the group sink is not enabled and with
// ErrGroupSize when req.Size is below 1 or above MaxGroup(); the other
// errors are Take's. It is safe for concurrent use.
func (p *Pipeline) TakeGroup(ctx context.Context, req GroupRequest) ([]*Hot, string, error) {
	if p.closed.Load() {
		return nil, "", ErrClosed
	}
	if len(p.groups) == 0 {
		return nil, KindGroup.String(), ErrNoSink
	}
	best := p.groupFor(req.Size)
	if req.Size < 1 || best == nil {
		return nil, p.opts.Group.Name, ErrGroupSize
	}
	p.opts.Gate.Request()
	best.d.requests.Add(1)
	src := groupSource{p: p, k: req.Size, best: best}
	w := waiting{paused: req.Paused, exhausted: req.Exhausted, stop: req.Stop, done: req.Done, wait: req.Wait}
	defer w.stopTimer()
	for first := true; ; first = false {
		if first || src.ready() {
			if hs, g, ok := p.takeGroupAdmitted(&src, req.Admit); ok {
				// The sink is one subspace short: its replacement starts
				// now, after the single-target sinks' needs.
				p.kick()
				return hs, g.name, nil
			}
			if first {
				best.c.misses.Add(1)
				p.recordMiss(best.name)
			}
		}
		next := p.groupSig.wait()
		if src.ready() {
			continue
		}
		if err := p.await(ctx, next, &w); err != nil {
			return nil, best.name, err
		}
	}
}

// groupSource is where a group request takes from: every group sink
// whose profile holds at least k places, the best fit first.
type groupSource struct {
	p    *Pipeline
	k    int
	best *GroupSink
}

func (s *groupSource) ready() bool {
	for _, g := range s.p.groups {
		if g.profile.Size >= s.k && g.Len() > 0 {
			return true
		}
	}
	return false
}

func (s *groupSource) take() ([]*Hot, *GroupSink, bool) {
	if hs, ok := s.best.take(s.k); ok {
		return hs, s.best, true
	}
	for _, g := range s.p.groups {
		if g == s.best || g.profile.Size < s.k {
			continue
		}
		if hs, ok := g.take(s.k); ok {
			return hs, g, true
		}
	}
	return nil, nil, false
}

// takeGroupAdmitted takes places from src until admit admits them or src
// is empty.
func (p *Pipeline) takeGroupAdmitted(src *groupSource, admit GroupAdmitter) ([]*Hot, *GroupSink, bool) {
	for {
		hs, g, ok := src.take()
		if !ok {
			return nil, nil, false
		}
		if admit == nil || admit.AdmitGroup(hs) {
			return hs, g, true
		}
		for _, h := range hs {
			h.Close()
		}
		p.ctr.refused.Add(uint64(len(hs)))
	}
}
