package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// reasonFor maps a memory cause to the transition reason of a rejection
// for that cause.
func reasonFor(c memory.Cause) stage.Reason {
	switch c {
	case memory.CauseSafety:
		return stage.ReasonUnsafeBlock
	case memory.CauseBiome, memory.CausePrefilterBiome:
		return stage.ReasonBiomeExcluded
	case memory.CauseWorldBorder, memory.CauseVert, memory.CausePrefilterRange:
		return stage.ReasonOutOfBounds
	case memory.CauseSafetyExternal, memory.CauseUniquePlacement:
		return stage.ReasonClaimProtected
	case memory.CauseTimeout, memory.CauseNullChunk, memory.CauseUngenerated, memory.CauseUnreadable:
		return stage.ReasonReservationFailed
	}
	return stage.ReasonError
}

// verdict is what a transition body tells its caller beyond the Outcome:
// the cause to remember, the verifier blamed, and whether the location is
// still good (recycled to cold rather than dropped).
type verdict struct {
	cause   memory.Cause
	source  string
	recycle bool
	known   bool // memory already holds the place as bad: nothing to record
	foreign bool // another fleet node's chunk: dropped, nothing to record
	// noRoom: a subspace could not be grown around the location (too few
	// safe columns near it for the profile); the location is still good
	// and goes back to cold, nothing recorded.
	noRoom bool
}

// runScreening runs the screening transition (backlog -> cold) on a
// candidate already taken out of the backlog with PollSilent.
func (p *Pipeline) runScreening(ctx context.Context, c Candidate) {
	var v verdict
	tr := stage.Transition[Candidate, Location]{
		Name:    "screen",
		Promote: func(ctx context.Context, c Candidate) (stage.Outcome[Location], error) { return p.screen(ctx, c, &v) },
		Dispose: p.backlog.Dispose,
		Logger:  p.log,
	}
	out := tr.Run(ctx, c)
	p.ctr.screenRejects[min(out.Reason, stage.ReasonError)].Add(1)
	switch {
	case out.Promoted:
		if p.cold.Offer(out.Value) {
			p.ctr.screened.Add(1)
			// A sink short for want of cold places is refilled at once.
			p.kick()
		}
	case out.Reason == stage.ReasonError:
		// Run logged it and disposed the candidate.
	case out.Reason == stage.ReasonShuttingDown, v.foreign:
		p.backlog.Dispose(c)
	default:
		p.rejected(c.Index, v.cause, "")
		p.backlog.Dispose(c)
	}
}

func (p *Pipeline) screen(ctx context.Context, c Candidate, v *verdict) (stage.Outcome[Location], error) {
	turn, err := p.opts.Gate.EnterBackground(ctx)
	if err != nil {
		return stage.Rejected[Location](stage.ReasonShuttingDown, err.Error()), nil
	}
	if rank, size := p.shareOf(); !inShareOf(c.Index, rank, size) {
		// Drawn before the fleet's shares changed (or while this
		// screening waited for the gate): the chunk is another node's
		// to screen now, and screening it here too would do the work
		// twice. Checked once the turn is taken, just before the work.
		turn.Leave()
		v.foreign = true
		return stage.Rejected[Location](stage.ReasonBudgetExhausted, "another node's share"), nil
	}
	r, err := p.screenGated(ctx, turn, c.Chunk)
	switch {
	case err != nil && p.base.Err() != nil:
		return stage.Rejected[Location](stage.ReasonShuttingDown, err.Error()), nil
	case err != nil:
		return stage.Outcome[Location]{}, fmt.Errorf("pipeline: screening %v: %w", c.Chunk, err)
	case r.OK && r.Block.Chunk() != c.Chunk:
		return stage.Outcome[Location]{}, fmt.Errorf("pipeline: screening %v returned %v, outside the chunk", c.Chunk, r.Block)
	case r.OK:
		return stage.Promoted(Location{World: p.opts.World, X: r.Block.X, Y: int64(r.Y), Z: r.Block.Z, Index: c.Index}), nil
	case !r.Cause.Valid():
		return stage.Outcome[Location]{}, fmt.Errorf("pipeline: screening %v rejected with invalid cause %d", c.Chunk, r.Cause)
	}
	v.cause = r.Cause
	return stage.Rejected[Location](reasonFor(r.Cause), detail(r.Cause, r.Detail)), nil
}

// screenGated runs the Screen function in the turn of the gate screen
// entered.
func (p *Pipeline) screenGated(ctx context.Context, turn *pacer.Turn, c geom.Chunk) (Screened, error) {
	defer turn.Leave()
	return p.opts.Screen(ctx, c)
}

func detail(c memory.Cause, d string) string {
	if d == "" {
		return c.String()
	}
	return c.String() + ": " + d
}

// remember records a rejection in memory (transient causes are counted
// there, not stored).
// A panic in the table is logged and counted, not raised: it must not take
// the region's worker goroutine, and the process, down with it.
func (p *Pipeline) remember(index int64, c memory.Cause, source string) {
	defer func() {
		if r := recover(); r != nil {
			p.ctr.memoryErrors.Add(1)
			p.log.Error("pipeline: memory table panicked recording a rejection", "index", index, "cause", c, "panic", fmt.Sprint(r))
		}
	}()
	if err := p.opts.Memory.AddBad(index, c, source); err != nil {
		p.ctr.memoryErrors.Add(1)
		p.log.Warn("pipeline: recording a rejection failed", "index", index, "cause", c, "error", err)
	}
}

// promoteOne runs the promotion transition (cold -> hot) on a location
// already taken out of cold with PollSilent, and deals with a rejection:
// the place is remembered and the location dropped (its row deleted), or,
// when the failure says nothing about the place, recycled into cold
// silently. It returns the hot entry on success, which settle must then
// see marked hot durably before it is served. turn is the promotion's
// promised turn of the gate (see startSingle), entered or cancelled here.
func (p *Pipeline) promoteOne(ctx context.Context, loc Location, turn *pacer.Promise) (*Hot, bool) {
	// A promotion that ends before it needs its turn (memory holds the
	// place as bad, a panic) withdraws the promise.
	defer turn.Cancel()
	var v verdict
	tr := stage.Transition[Location, *Hot]{
		Name:    "promote",
		Promote: func(ctx context.Context, l Location) (stage.Outcome[*Hot], error) { return p.promote(ctx, l, turn, &v) },
		Dispose: p.cold.Dispose,
		Logger:  p.log,
	}
	out := tr.Run(ctx, loc)
	p.ctr.promotionRejects[min(out.Reason, stage.ReasonError)].Add(1)
	if out.Promoted {
		return out.Value, true
	}
	p.promotionFailed(loc, out.Reason, &v)
	return nil, false
}

// promotionFailed deals with a promotion of loc (a single location's or a
// subspace's) rejected with reason: the place is remembered and the
// location dropped (its row deleted), or, when the failure says nothing
// about the place, recycled into cold silently.
func (p *Pipeline) promotionFailed(loc Location, reason stage.Reason, v *verdict) {
	switch {
	case reason == stage.ReasonError:
		// Run logged it and disposed the location through cold.
	case reason == stage.ReasonShuttingDown || v.recycle || v.noRoom:
		if v.recycle {
			p.remember(loc.Index, v.cause, v.source)
		}
		p.cold.OfferSilent(loc)
	case v.known:
		p.ctr.knownBad.Add(1)
		p.cold.Dispose(loc)
	default:
		p.rejected(loc.Index, v.cause, v.source)
		p.cold.Dispose(loc)
	}
}

// settle makes the row of loc (the location promoted into h) hot on disk
// and then calls then with whether h may be served; if not, h has been
// demoted or, when another node owns its row, dropped (see onHot, which
// says where then runs). It runs outside the promotion's slot of
// Budget.MaxPromotions: the wait is for a commit, not for work, and a
// mark that rides the writer's next batch must not hold up the
// promotions behind it. urgent is the mark's urgency (its sink runs low).
func (p *Pipeline) settle(loc Location, h *Hot, urgent bool, then func(served bool)) {
	p.onHot(loc, urgent, func(r hotResult) {
		switch r {
		case hotDemote:
			p.demote(h, nil)
			then(false)
			return
		case hotForeign:
			// Another node owns the row: leave it, and the entry.
			h.release(false)
			p.held.release(loc.Index)
			p.ctr.foreign.Add(1)
			then(false)
			return
		}
		p.ctr.promotions.Add(1)
		then(true)
	})
}

// promote is the body of the promotion transition: consult memory, reserve
// the chunk, run the full check on the resident chunk, then the verifiers
// (see beginPromotion). Whatever it reserved it closes itself unless it
// returns a promotion (a panic too: the deferred close runs before
// Transition.Run recovers).
func (p *Pipeline) promote(ctx context.Context, loc Location, promised *pacer.Promise, v *verdict) (out stage.Outcome[*Hot], err error) {
	pr, rej := p.beginPromotion(ctx, loc, promised, v)
	if rej != nil {
		return stage.Rejected[*Hot](rej.reason, rej.detail), nil
	}
	defer pr.end()
	ctx = pr.ctx
	res, err := p.opts.Reserver.ReserveFor(ctx, loc.Chunk(), p.opts.ReservationLifespan)
	if err != nil {
		return stage.Rejected[*Hot](p.reserveFailed(loc, err, v)), nil
	}
	if res == nil {
		return stage.Outcome[*Hot]{}, errors.New("pipeline: Reserver returned neither a reservation nor an error")
	}
	promoted := false
	defer func() {
		if !promoted {
			_ = res.Close()
		}
	}()
	y, cause, ok := p.opts.Check(res, loc.Block())
	pr.leave()
	if !ok {
		rej, err := checkRejected(loc, cause, v)
		if err != nil {
			return out, err
		}
		return stage.Rejected[*Hot](rej.reason, rej.detail), nil
	}
	loc.Y = int64(y)
	if p.opts.Verifiers != nil {
		if r := p.opts.Verifiers.Check(ctx, loc.verifyLocation()); !r.Passed {
			rej := p.verifiersRejected(r, v)
			return stage.Rejected[*Hot](rej.reason, rej.detail), nil
		}
	}
	now := p.clock()
	h := &Hot{Location: loc, Res: res, Since: now, Arrived: now, ctr: &p.rel}
	promoted = true
	return stage.Promoted(h), nil
}

// rejection is a promotion's rejection, before the type of its outcome
// (a single place's or a subspace's) is known.
type rejection struct {
	reason stage.Reason
	detail string
}

// promotion is a promotion under way: its context, bounded by
// Options.PromotionTimeout, and its turn of the gate.
type promotion struct {
	ctx    context.Context
	cancel context.CancelFunc
	turn   *pacer.Turn
	left   bool
}

// leave gives the promotion's turn of the gate back; once is enough, more
// do nothing.
func (pr *promotion) leave() {
	if !pr.left {
		pr.left = true
		pr.turn.Leave()
	}
}

// end leaves the turn, if still held, and releases the context.
func (pr *promotion) end() {
	pr.leave()
	pr.cancel()
}

// beginPromotion starts every promotion of loc (a single place's or a
// subspace's anchor's): memory is consulted first, so that a location
// whose chunk memory learnt to be bad while it waited in cold is dropped
// before its chunk is reserved (it costs no chunk load; memory already
// knows, and nothing is recorded: a unique-placement mark around a place
// handed out since, a claim rejection of a neighbour widened by memory's
// spatial resolution, a rejection restored from probation); then the promotion's promised turn of
// the gate is entered, under a context bounded by
// Options.PromotionTimeout. The chunk's load and the checks are the
// promotion's processor work: they run in the turn, the verifiers (which
// wait on others) after it. On success the caller must end the promotion.
func (p *Pipeline) beginPromotion(ctx context.Context, loc Location, promised *pacer.Promise, v *verdict) (promotion, *rejection) {
	if cause, bad := p.opts.Memory.CauseAt(loc.Index); bad {
		v.cause, v.known = cause, true
		return promotion{}, &rejection{reasonFor(cause), "memory holds the chunk as rejected: " + cause.String()}
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.PromotionTimeout)
	turn, err := promised.Enter(ctx)
	if err != nil {
		cancel()
		reason, detail := p.reserveFailed(loc, err, v)
		return promotion{}, &rejection{reason, detail}
	}
	return promotion{ctx: ctx, cancel: cancel, turn: turn}, nil
}

// checkRejected classifies the rejection of loc by the landing check, with
// cause: remembered under cause, except that a check that failed for want
// of the chunk says nothing of the place, whose location stays good
// (recycled). An invalid cause is the checker's bug: an error.
func checkRejected(loc Location, cause memory.Cause, v *verdict) (*rejection, error) {
	if !cause.Valid() {
		return nil, fmt.Errorf("pipeline: check of %v rejected with invalid cause %d", loc.Block(), cause)
	}
	v.cause = cause
	v.recycle = cause.Tier() == memory.Transient
	return &rejection{reasonFor(cause), detail(cause, "")}, nil
}

// verifiersRejected classifies a verifiers' result that did not pass: the
// pipeline shutting down, a verifier that could not answer (nothing is
// known of the place, so it is counted under a transient cause and kept),
// or an objection, remembered as an external safety rejection.
func (p *Pipeline) verifiersRejected(r verify.Result, v *verdict) *rejection {
	switch {
	case p.base.Err() != nil:
		return &rejection{stage.ReasonShuttingDown, "verifiers interrupted"}
	case r.Err != nil:
		v.cause, v.source, v.recycle = memory.CauseTimeout, r.Source, true
		return &rejection{stage.ReasonClaimProtected, fmt.Sprintf("verifier %s could not answer: %v", r.Source, r.Err)}
	}
	v.cause, v.source = memory.CauseSafetyExternal, r.Source
	return &rejection{stage.ReasonClaimProtected, "verifier " + r.Source + " objected"}
}

// reserveFailed classifies a failed reservation: the reason and detail
// of the promotion's rejection.
func (p *Pipeline) reserveFailed(loc Location, err error, v *verdict) (stage.Reason, string) {
	switch {
	case p.base.Err() != nil || errors.Is(err, world.ErrClosed):
		return stage.ReasonShuttingDown, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		v.cause, v.recycle = memory.CauseTimeout, true
		p.ctr.reserveFailures[reserveTimeout].Add(1)
	case errors.Is(err, world.ErrUngenerated):
		v.cause = memory.CauseUngenerated
		p.ctr.reserveFailures[reserveUngenerated].Add(1)
	case errors.Is(err, world.ErrOutside):
		v.cause = memory.CauseNullChunk
		p.ctr.reserveFailures[reserveOutside].Add(1)
	case errors.Is(err, world.ErrUnreadable):
		v.cause = memory.CauseUnreadable
		p.ctr.reserveFailures[reserveUnreadable].Add(1)
		p.lastReserveErr.Store(new(err.Error()))
	default:
		v.cause = memory.CauseNullChunk
		p.ctr.reserveFailures[reserveUnreadable].Add(1)
		p.lastReserveErr.Store(new(err.Error()))
	}
	return stage.ReasonReservationFailed, fmt.Sprintf("reserving %v: %v", loc.Chunk(), err)
}

// demote is the demotion transition: h, already out of its stage (from,
// or nil for an entry that never reached one), loses its reservation and
// its location goes back to cold silently. If cold is full, cold's own
// disposal ends the location; nothing else happens.
func (p *Pipeline) demote(h *Hot, from stage.Stage[*Hot]) {
	dispose := func(h *Hot) {
		if from != nil {
			from.Dispose(h)
			return
		}
		h.release(true)
		p.cold.Dispose(h.Location)
	}
	tr := stage.Transition[*Hot, Location]{
		Name: "demote",
		Promote: func(_ context.Context, h *Hot) (stage.Outcome[Location], error) {
			h.release(true)
			return stage.Promoted(h.Location), nil
		},
		Dispose: dispose,
		Logger:  p.log,
	}
	out := tr.Run(context.Background(), h)
	if out.Promoted {
		p.ctr.demotions.Add(1)
		p.cold.OfferSilent(out.Value)
	}
}
