package pipeline

import (
	"context"
	"math"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pacer"
)

// Pulse does one bounded round of the region's background work, in this
// order:
//
//  1. demand: fold each sink's requests since the last pulse into its EWMA;
//  2. leases: expired network leases go back to the pool (or to cold);
//  3. quotas: each sink's quota becomes its demand over DemandHorizon,
//     rounded and clamped to [floor, capacity];
//  4. transfers: entries of sinks over quota move to eligible sinks under
//     quota (eligible), oldest first, never one younger than MinResidence;
//  5. trims: entries beyond a capacity that went down, older than
//     MinResidence, move to an eligible sink with room or are demoted;
//  6. refill: promotions from cold into sinks under quota (login, network,
//     personal, general, one each in turn), at most
//     Budget.PromotionsPerPulse per pulse and Budget.MaxPromotions in
//     flight, plus the login burst (between pulses, a sink that falls
//     short is refilled at once: see the package documentation,
//     Scheduling);
//  7. feed: candidates drawn from memory into the backlog, and screenings
//     started.
//
// Promotions and screenings run on the pipeline's goroutines and finish
// after Pulse returns. Pulse returns ErrClosed once the pipeline is closed
// and ctx.Err() when ctx is already done.
func (p *Pipeline) Pulse(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.pulse(); err != nil {
		return err
	}
	// Outside pulseMu: tell of the entries this pulse transferred.
	p.notifyTransfers()
	return nil
}

// SetBudget replaces the pipeline's Budget from the next pulse on; zero
// fields take their defaults, as in Options. Screenings and promotions in
// flight finish; a lower MaxScreens or MaxPromotions only starts fewer. It
// returns an error, changing nothing, for a negative field, and ErrClosed
// once the pipeline is closed.
func (p *Pipeline) SetBudget(b Budget) error {
	if err := (Options{Budget: b}).validateBudget(); err != nil {
		return err
	}
	b = Options{Budget: b}.withDefaults().Budget
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	p.underRefill(func() { p.opts.Budget = b })
	return nil
}

// Budget returns the budget in force.
func (p *Pipeline) Budget() Budget {
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	return p.opts.Budget
}

// Housekeep does the steps of a pulse that keep time, and only those:
// the demand averages decay and expired network leases end (their entries
// back in the pool, or demoted to cold when it is full). No entry is
// transferred, promoted or screened. A region whose scan is paused calls
// it in place of Pulse, so a lease taken before the pause still ends on
// time. It returns ErrClosed once the pipeline is closed and ctx.Err()
// when ctx is already done.
func (p *Pipeline) Housekeep(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.pulseMu.Lock()
	if p.closed.Load() {
		p.pulseMu.Unlock()
		return ErrClosed
	}
	p.keepTime(p.clock())
	// A paused pipeline refills nothing, between pulses either (kick),
	// and must not hold the gate's pacing off for the others.
	p.housekeeping.Store(true)
	p.setFill(pacer.Full, false)
	p.pulseMu.Unlock()
	p.notifyTransfers()
	return nil
}

// keepTime is steps 1 and 2 of a pulse, under pulseMu.
func (p *Pipeline) keepTime(now time.Time) {
	o := &p.opts
	// 1. Demand.
	for _, s := range p.singles {
		s.d.update(now, o.DemandHalfLife)
	}
	if p.network != nil {
		p.network.pool.d.update(now, o.DemandHalfLife)
	}
	if p.personal != nil {
		p.personal.d.update(now, o.DemandHalfLife)
	}
	for _, g := range p.groups {
		g.d.update(now, o.DemandHalfLife)
	}

	// 2. Leases.
	if p.network != nil {
		p.network.schedule(now)
	}
}

// fill tells whether the pipeline's sinks hold their quotas, as the gate
// paces by (see pacer.Gate): pacer.Full when every sink's entries and the
// promotions in flight into it reach its quota and cold holds the next
// refill (paced), 0 otherwise. Below that the refill is behind demand, or
// soon will be, and the gate does not pace. starved tells whether the
// sinks lack more than cold holds: the refill then waits on screening (the
// gate's surge). The group sinks are not counted: their refill is the
// least urgent work and runs paced, so a group sink that cannot fill (a
// world with little room for groups) never keeps the gate from resting.
func (p *Pipeline) fill() (f int32, starved bool) {
	need, total := 0, 0
	rate := 0.0
	of := func(s *Sink) {
		total += s.Quota()
		need += max(s.need(), 0)
		rate += s.d.perSecond()
	}
	for _, s := range p.singles {
		of(s)
	}
	if p.network != nil {
		of(p.network.pool)
	}
	cold := p.cold.Len()
	if !paced(need, cold, total, rate) {
		return 0, need > cold
	}
	return pacer.Full, false
}

// paceReserve is how much of the sinks' demand cold must hold for the
// refill to be paced (see paced).
const paceReserve = time.Second

// paced reports whether the refill of sinks that lack need entries (the
// promotions in flight counted as there), whose quotas sum to total and
// whose demand sums to rate a second, may be paced with cold holding cold
// places: when no sink lacks any and cold holds the sinks' next refill,
// the smaller of their quotas and paceReserve of their demand. Rejected:
// all of the quotas (a large cache that serves 1,000 requests a second
// from 8,192 ready places then drops pacing once cold holds fewer than
// 8,192, seconds into a steady load, and the refill, unpaced, takes the
// processors from the requests it serves), and no reserve at all (a
// server whose sinks are full and whose cold is empty would screen
// paced, a quarter as fast, until a sink falls short).
func paced(need, cold, total int, rate float64) bool {
	reserve := min(float64(total), math.Ceil(rate*paceReserve.Seconds()))
	return need == 0 && float64(cold) >= reserve
}

// setFill tells the gate how full the pipeline's sinks are (pacer.Full:
// holding nothing back) and whether the refill starves. Called under
// pulseMu.
func (p *Pipeline) setFill(f int32, starved bool) { p.opts.Gate.Report(p, f, starved) }

// pulse is the body of Pulse, under pulseMu.
func (p *Pipeline) pulse() error {
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	now := p.clock()
	o := &p.opts
	p.housekeeping.Store(false)

	// 1 and 2. Demand and leases.
	p.keepTime(now)

	// 3. Capacities and quotas.
	quota := func(s *Sink) {
		s.fitRing()
		c := s.capacity.Load()
		s.quota.Store(quotaFor(s.d.perSecond(), o.DemandHorizon, effectiveFloor(s.floor.Load(), c), c))
	}
	for _, s := range p.singles {
		quota(s)
	}
	if p.network != nil {
		quota(p.network.pool)
	}
	for _, g := range p.groups {
		c := g.capacity.Load()
		g.quota.Store(quotaFor(g.d.perSecond(), o.DemandHorizon, effectiveFloor(g.floor.Load(), c), c))
		p.dropKnownBad(g)
	}
	p.setFill(p.fill())

	// 4 and 5. Transfers and trims share one budget.
	budget := o.Budget.Transfers
	budget = p.transferSingles(now, budget)
	budget = p.transferGroups(now, budget)
	p.trim(now, budget)

	// 6. Refill.
	p.underRefill(func() { p.refill(true) })

	// 7. Feed.
	p.feed()
	return nil
}

// draw draws a candidate index from memory: uniformly (memory.Table.Rand)
// without a Distribution, through it otherwise (memory.Table.Pick, the
// ranks capped at the shape's Len in expand mode). Called under pulseMu,
// which guards the random source.
func (p *Pipeline) draw() (int64, bool) {
	share := p.share.Load()
	size, rank := share>>32, share&(1<<32-1)
	if size <= 1 {
		return p.drawAny()
	}
	for range shareTries {
		idx, ok := p.drawAny()
		if !ok || inShare(idx, size, rank) {
			return idx, ok
		}
	}
	return 0, false
}

// drawAny is draw without the fleet share.
func (p *Pipeline) drawAny() (int64, bool) {
	d := p.opts.Distribution
	if d == nil {
		return p.opts.Memory.Rand(p.rng)
	}
	return p.opts.Memory.Pick(d, p.rng.Float64(), p.expandLimit)
}

// residentEnough reports whether an entry that arrived at t may be moved.
func (p *Pipeline) residentEnough(t, now time.Time) bool {
	return now.Sub(t) >= p.opts.MinResidence
}

// need is how many entries a sink lacks to reach its quota, counting the
// promotions in flight. It reads the promotions in flight before the
// fill: a promotion delivers, then stops counting as pending, so the
// other order could miss it in both and start one too many.
func (s *Sink) need() int {
	pending := int(s.pending.Load())
	return s.Quota() - s.Len() - pending
}

// low reports whether s holds less than half its quota: the hot marks of
// its promotions are then urgent (see Persister.MarkHot), since requests
// may soon find it empty; above that they ride the writer's next batch.
func (s *Sink) low() bool {
	return 2*s.Len() < s.Quota()
}

// transferSingles moves entries from single-target sinks over quota to
// those under quota: for each sink under quota (destination) and each
// sink over quota (source) whose pair passes the rule-0 preconditions,
// up to the destination's need, the source's surplus and the remaining
// budget move. It returns the budget left.
func (p *Pipeline) transferSingles(now time.Time, budget int) int {
	for _, d := range p.singles {
		for _, s := range p.singles {
			need := d.need()
			if need <= 0 || budget <= 0 {
				break
			}
			if pairEligible[*Hot](s, d) != ineligibleUncertified {
				continue
			}
			surplus := s.Len() - s.Quota()
			if surplus <= 0 {
				continue
			}
			budget -= p.moveSingles(s, d, min(need, surplus, budget), now)
		}
	}
	return budget
}

// moveSingles transfers up to n entries from s to d, oldest first. It stops
// at the first entry younger than MinResidence; an entry the test does not
// certify goes back to s. It returns how many entries it moved.
func (p *Pipeline) moveSingles(s, d *Sink, n int, now time.Time) int {
	moved := 0
	for tries := s.Len(); moved < n && tries > 0; tries-- {
		h, ok := s.ring.PollSilent()
		if !ok {
			break
		}
		if !h.live() {
			s.c.stale.Add(1)
			s.ring.Dispose(h)
			continue
		}
		if !p.residentEnough(h.Arrived, now) {
			s.ring.OfferSilent(h)
			break
		}
		if !eligible[*Hot](s, d, h).certified() {
			s.ring.OfferSilent(h)
			continue
		}
		if d.deliver(h, now) {
			d.landed.Store(true)
		}
		s.c.transfersO.Add(1)
		d.c.transfersIn.Add(1)
		p.ctr.transfers.Add(1)
		moved++
	}
	return moved
}

// trim brings sinks whose capacity went down back under it: entries
// beyond the capacity that have been in the sink for MinResidence move to
// an eligible sink with room, or are demoted to cold.
func (p *Pipeline) trim(now time.Time, budget int) int {
	pools := p.singles
	if p.network != nil {
		pools = append(pools[:len(pools):len(pools)], p.network.pool)
	}
	for _, s := range pools {
		for over := s.Len() - s.Cap(); over > 0 && budget > 0; over-- {
			h, ok := s.ring.PollSilent()
			if !ok {
				break
			}
			if !h.live() {
				s.c.stale.Add(1)
				s.ring.Dispose(h)
				continue
			}
			if !p.residentEnough(h.Arrived, now) {
				s.ring.OfferSilent(h)
				break
			}
			budget--
			s.c.trims.Add(1)
			p.ctr.trims.Add(1)
			if d := p.trimDestination(s, h); d != nil {
				if d.deliver(h, now) {
					d.landed.Store(true)
				}
				s.c.transfersO.Add(1)
				d.c.transfersIn.Add(1)
				p.ctr.transfers.Add(1)
				continue
			}
			s.c.demotions.Add(1)
			p.demote(h, s.ring)
		}
	}
	return budget
}

// trimDestination finds a sink with room that may take h from s.
func (p *Pipeline) trimDestination(s *Sink, h *Hot) *Sink {
	for _, d := range p.singles {
		if d.room() > 0 && d.need() > 0 && eligible[*Hot](s, d, h).certified() {
			return d
		}
	}
	return nil
}

// kick refills the sinks under quota now, between pulses: it is called
// whenever a sink may have fallen short with places in cold (an entry
// taken, a place landing in cold, a promotion ending), so that the
// promotions a short sink needs start at once rather than at the next
// pulse (see the scheduling rule in the package documentation). It never
// blocks: when another goroutine is refilling, that one refills again
// once it is done. A pipeline whose last round was Housekeep (its region
// paused) starts nothing until its next Pulse.
func (p *Pipeline) kick() {
	p.kicked.Store(true)
	for p.kicked.Load() && p.refillMu.TryLock() {
		p.kicked.Store(false)
		if !p.closed.Load() && !p.housekeeping.Load() {
			p.refill(false)
		}
		p.refillMu.Unlock()
	}
}

// underRefill runs f holding refillMu, then the round of any kick that
// found refillMu held meanwhile: kick leaves its round to the holder, so
// without it a short sink would wait for the next pulse.
func (p *Pipeline) underRefill(f func()) {
	p.refillMu.Lock()
	f()
	p.refillMu.Unlock()
	if p.kicked.Load() {
		p.kick()
	}
}

// refill starts promotions from cold into sinks under quota, under
// refillMu. A pulse's round (pulse) starts at most
// Budget.PromotionsPerPulse beside the login burst; a kick's round starts
// every promotion the short sinks need. Both keep to Budget.MaxPromotions
// in flight.
func (p *Pipeline) refill(pulse bool) {
	if p.cold.Len() == 0 {
		if pulse {
			p.countDownGroupBackoff()
		}
		return
	}
	b := p.opts.Budget
	// The login burst: the whole deficit at once, beyond the caps.
	if l := p.login; l != nil && l.burst.Load() {
		need := l.need()
		n := min(need, b.LoginBurst)
		started := 0
		for ; started < n; started++ {
			if !p.startSingle(l.Sink) {
				break
			}
		}
		if started >= need {
			l.burst.Store(false)
		}
	}

	// The targets: a sink, or a player's personal queue. A kick's round
	// runs on the request that took an entry, so it allocates nothing
	// for the singles.
	type target struct {
		need int
		sink *Sink
		key  string // personal queue, when sink is nil
	}
	var buf [4]target
	ts := buf[:0]
	single := func(s *Sink) {
		if n := s.need(); n > 0 {
			ts = append(ts, target{need: n, sink: s})
		}
	}
	if p.login != nil {
		single(p.login.Sink)
	}
	if p.network != nil {
		single(p.network.pool)
	}
	if p.personal != nil {
		for _, kd := range p.personal.deficits() {
			ts = append(ts, target{need: kd.n, key: kd.key})
		}
	}
	single(p.general)

	budget := math.MaxInt
	if pulse {
		budget = b.PromotionsPerPulse
	}
	for progress := len(ts) > 0; progress; {
		progress = false
		for i := range ts {
			t := &ts[i]
			room := b.MaxPromotions - int(p.promoting.Load())
			if t.need <= 0 || budget <= 0 || room <= 0 || p.cold.Len() == 0 {
				continue
			}
			var started bool
			if t.sink != nil {
				started = p.startSingle(t.sink)
			} else {
				started = p.startPersonal(t.key)
			}
			if !started {
				continue
			}
			t.need--
			budget--
			progress = true
		}
	}
	// The group sinks come last, with what the others left.
	for i := range ts {
		if ts[i].need > 0 {
			if pulse {
				p.countDownGroupBackoff()
			}
			return
		}
	}
	if len(p.groups) > 0 {
		p.refillGroups(pulse, budget)
	}
}

// startSingle takes one location out of cold and promotes it into s on a
// goroutine of the pipeline. The promotion's turn of the gate is promised
// before the goroutine starts, so no screening takes a turn meanwhile.
func (p *Pipeline) startSingle(s *Sink) bool {
	loc, ok := p.cold.PollSilent()
	if !ok {
		return false
	}
	s.pending.Add(1)
	p.promoting.Add(1)
	turn := p.opts.Gate.Promise()
	p.spawn(func() {
		// Last: a promotion that failed, or ended while the sink is
		// still short, lets the next one start at once.
		end := func() {
			s.pending.Add(-1)
			p.kick()
		}
		h, ok := p.promoteOne(p.base, loc, turn)
		p.promoting.Add(-1)
		if !ok {
			end()
			return
		}
		p.settle(loc, h, s.low(), func(served bool) {
			if served {
				p.deliverSingle(s, h)
			}
			end()
		})
	})
	return true
}

// deliverSingle offers a promoted entry to its sink, or demotes it when the
// sink's own criteria refuse it or it has no room.
func (p *Pipeline) deliverSingle(s *Sink, h *Hot) {
	if s.crit.narrows() && !s.crit.accepts(h, p.opts.Check) {
		s.c.mismatched.Add(1)
		p.ctr.mismatched.Add(1)
		p.demote(h, nil)
		return
	}
	if s.room() <= 0 {
		p.demote(h, nil)
		return
	}
	s.c.promotions.Add(1)
	if s.deliver(h, p.clock()) {
		p.notifyPromote(s.name, &s.sig)
	}
}

func (p *Pipeline) startPersonal(key string) bool {
	ps := p.personal
	loc, ok := p.cold.PollSilent()
	if !ok {
		return false
	}
	ps.addPending(key, 1)
	p.promoting.Add(1)
	turn := p.opts.Gate.Promise()
	p.spawn(func() {
		end := func() {
			ps.addPending(key, -1)
			p.kick()
		}
		h, ok := p.promoteOne(p.base, loc, turn)
		p.promoting.Add(-1)
		if !ok {
			end()
			return
		}
		// A personal queue is a few places that its player is about to
		// ask for: its marks are always urgent.
		p.settle(loc, h, true, func(served bool) {
			if served {
				p.deliverPersonal(key, h)
			}
			end()
		})
	})
	return true
}

// deliverPersonal offers a promoted entry to the personal queue of key,
// or demotes it when the sink's criteria refuse it or the queue is full.
func (p *Pipeline) deliverPersonal(key string, h *Hot) {
	ps := p.personal
	if ps.crit.narrows() && !ps.crit.accepts(h, p.opts.Check) {
		ps.c.mismatched.Add(1)
		p.ctr.mismatched.Add(1)
		p.demote(h, nil)
		return
	}
	took, stored := ps.deliver(key, h, p.clock())
	if !took {
		p.demote(h, nil)
		return
	}
	ps.c.promotions.Add(1)
	if stored {
		p.notifyPromote(ps.name, &ps.sig)
	}
}

// feed draws candidates into the backlog and starts screenings. A draw
// whose chunk already has a location in the pipeline is skipped (see
// heldSet); up to twice the candidates wanted are drawn to make up for
// skipped ones, so a pulse stays bounded however crowded the region is,
// and fewer while most draws are skipped (see drawTries).
func (p *Pipeline) feed() {
	b := p.opts.Budget
	room := p.cold.Cap() - p.cold.Len() - p.backlog.Len() - int(p.screening.Load())
	n := min(b.Candidates, p.backlog.Cap()-p.backlog.Len(), room)
	if p.holdDraws.Load() {
		n = 0 // the shared pool fills cold first (see HoldDraws)
	}
	limit := p.drawTries(n)
	drawn, tries := 0, 0
	for ; drawn < n && tries < limit; tries++ {
		idx, ok := p.draw()
		if !ok {
			break
		}
		if !p.held.acquire(idx) {
			p.ctr.duplicates.Add(1)
			continue
		}
		drawn++
		p.backlog.Offer(Candidate{Index: idx, Chunk: geom.ChunkAt(p.opts.Shape, idx)})
	}
	p.drawn(drawn, tries)
	starts := min(b.Screens, b.MaxScreens-int(p.screening.Load()))
	for range max(starts, 0) {
		c, ok := p.backlog.PollSilent()
		if !ok {
			break
		}
		p.screening.Add(1)
		p.spawn(func() {
			defer p.screening.Add(-1)
			p.runScreening(p.base, c)
		})
	}
}

// minDrawTries is the fewest draws a pulse tries while most draws are
// skipped (when it wants that many).
const minDrawTries = 8

// maxDrawShift bounds drawShift: the tries a pulse makes fall at most to
// 1/2^maxDrawShift of twice the candidates it wants.
const maxDrawShift = 8

// drawTries is how many draws a pulse wanting n candidates may try: 2n,
// halved for each step of drawShift, and at least minDrawTries.
//
// Skipped draws are wasted work, and in a region whose good places are
// nearly all in the pipeline already (a cold stock of most of the region:
// the load-test config holds some 33,700 of its 35,000) nearly every draw
// is skipped. Trying 2n there cost each pulse a thousand memory draws and
// held-set lookups, a stretch of a few hundred microseconds on the pulse
// goroutine, unpaced, and the lookups' lock contended with the hand-outs'
// releases (requests blocked on it for up to a millisecond). The budget
// follows the yield instead: it halves after a pulse whose draws were
// mostly skipped and doubles back after one where most were kept, so a
// crowded region costs a few draws a pulse and a region with room draws
// at full budget within a few pulses of room appearing. A process that
// answers no requests draws at full budget throughout
// (Options.DrawEagerly).
func (p *Pipeline) drawTries(n int) int {
	if n <= 0 {
		return 0
	}
	return max(2*n>>p.drawShift.Load(), min(minDrawTries, 2*n))
}

// drawn adjusts drawShift after a pulse kept drawn of tries draws (never,
// with Options.DrawEagerly).
func (p *Pipeline) drawn(drawn, tries int) {
	switch s := p.drawShift.Load(); {
	case p.opts.DrawEagerly:
	case tries < minDrawTries:
		// Too few draws to judge by (or none wanted).
	case drawn*4 < tries && s < maxDrawShift:
		p.drawShift.Store(s + 1)
	case drawn*2 >= tries && s > 0:
		p.drawShift.Store(s - 1)
	}
}
