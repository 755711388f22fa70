package pacer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate admits the refill's processor work (screenings, promotions and,
// through the persisters that hold it, the location writer's
// transactions) a few units at a time across every pipeline that shares
// it, puts the work that fills a short sink first, and, while requests
// come and every sink holds its quota, paces the rest.
//
// Bound. A process that answers requests while it fills its caches gives
// its pipelines a gate smaller than its processor count (GOMAXPROCS), so
// that a processor is always free to answer. Without one, a burst of
// screening (terrain generated for a cold archive, say) takes every
// processor, and Go's scheduler then looks for network events only every
// few milliseconds: requests wait tens of milliseconds behind the refill
// that is meant to serve them. A gate of n has n lanes for any work and
// n more that only urgent work may take (see Precedence), so background
// work never holds more than n processors, except while it is starved
// (see Surge). Urgent and background work share the n lanes.
//
// Surge. While a pipeline holding the gate has a sink below its quota
// and too few places in cold to make up for it (see Report), the refill
// waits on screening, and the requests it would serve wait on the refill
// or miss: a processor kept free for them serves nobody. So the gate
// then admits n more background units, on n surge lanes, until the
// pipelines report the deficit covered.
//
// Precedence. The gate knows two kinds of work. Urgent work is what a
// delivery waits on: a promotion's load and check (promised with Promise
// when the promotion starts, entered with Promise.Enter) and the
// writer's transactions, which carry the durable hot marks a promoted
// entry waits for (Enter). Background work is screening (EnterBackground):
// it fills cold, which no request waits on while cold holds places. A
// background unit is admitted only while no urgent unit waits for a lane
// and none is promised, and a lane given back goes to the longest waiting
// urgent unit first: a promotion waits at most for the units running
// when it came to end, never for the screenings queued before it. (Lanes
// of its own would spare it that wait, but then the refill would hold
// twice n processors, and the requests it serves would wait on it: at
// 1,000 teleports a second, promotions and screenings on separate lanes
// put rtp serve's p99 many times the null server's.) This is the
// pipeline's scheduling rule (see package pipeline): a sink below its
// quota with places in cold is served first.
//
// Pacing. A bound alone is not enough on a small machine. The operating
// system's scheduler lets a running thread finish its time slice (on
// Linux about a millisecond) before a thread woken by a request gets the
// core, so a refill that keeps one thread busy for milliseconds at a
// time, a writer's transaction of a few hundred rows say, delays every
// request that arrives meanwhile by up to a slice, though the refill uses
// a fraction of a core on average. So each lane of the gate (one per unit
// admitted at once) runs at most Pacing.Quantum of work in a row and then
// rests Pacing.Rest, holding its lane, so that no refill work of this
// gate runs on that lane meanwhile and its goroutine parks, its processor
// free to requests (see rester). Rest is taken at Leave and at
// Turn.Yield, the points between units and inside long ones (a
// transaction yields between statements). A rest follows the stretch of
// work it ends in proportion (Rest for each Quantum run), so a lane uses
// at most Quantum/(Quantum+Rest) of a processor, which the defaults set
// at a quarter.
//
// Pacing applies only while it costs no delivery: while requests come
// (Request, called on every take, marks one, and pacing lasts
// Pacing.Linger after the last) and every pipeline holding the gate
// reports its sinks at their quotas, counting the promotions in flight
// (see Report). A process that answers nothing, or fills its caches
// before the first player asks, refills at full speed, and so does one
// whose sinks fall short: then nothing is paced, promotions included.
//
// A Gate is safe for concurrent use. Its zero value is not usable (use
// New); a nil *Gate admits everything at once and never paces.
type Gate struct {
	pace Pacing
	// since is the gate's clock (time since it was made); tests replace
	// it. sleep, when set (by tests), rests a lane in place of the lane's
	// own rester.
	since func() time.Duration
	sleep func(d time.Duration)
	// last is when Request was last called, in nanoseconds since epoch
	// (0: never).
	last atomic.Int64

	// mu guards the lanes and the waiters.
	mu sync.Mutex
	// size is n: the lanes any work may take (general) and the lanes
	// background work may take while starved (surge), each n.
	size    int
	general []*lane // free lanes any work may take
	surge   []*lane // free lanes background work may take while starved
	// waitUrgent and waitBack are the units waiting for a lane, oldest
	// first.
	waitUrgent []*waiter
	waitBack   []*waiter
	// promised counts the urgent units promised (Promise) and not yet
	// entered or cancelled: background work waits for them too.
	promised int
	// heldBack counts the lanes held by background units.
	heldBack int

	// fillMu guards fills, the last fill each client holding the gate
	// reported, by client (see Report); level is their minimum (Full
	// when there are none), read by every rest; starved is whether any
	// reported starving (read under mu).
	fillMu  sync.Mutex
	fills   map[any]fillReport
	level   atomic.Int32
	starved atomic.Bool
	rests   atomic.Uint64
	rested  atomic.Int64 // nanoseconds
}

// fillReport is what a client last reported (see Gate.Report).
type fillReport struct {
	fill    int32
	starved bool
}

// waiter is a unit waiting for a lane.
type waiter struct {
	ch     chan *lane // receives the lane (buffered: the giver never blocks)
	urgent bool
}

// Pacing sets how a Gate paces its lanes while requests come (see Gate).
// A zero field takes its default; a negative Quantum turns pacing off.
type Pacing struct {
	// Quantum is the most work a lane runs in a row before it rests.
	// Default DefaultQuantum.
	Quantum time.Duration
	// Rest is how long a lane rests once it has run its quantum. Default
	// DefaultRest.
	Rest time.Duration
	// Linger is how long pacing stays on after the last request. Default
	// DefaultLinger.
	Linger time.Duration
}

// Defaults for Pacing: while requests come, a lane runs one unit (a
// screening, a statement of the writer: most take longer than the
// quantum) and then rests three times as
// long, so a request waits at most a fraction of a millisecond behind
// the refill. Measured on two cores at 1,000 teleports a second,
// stretches of 50 us did better than 100, 200 and 400 us ones, and once
// rests parked rather than slept, 25 us better than 50 (serve's p99 over
// the null server's, median of six alternated rounds: 1.27 against 1.5;
// 15 us was no better and cost more rests). A lane's quarter of a
// processor still refills several thousand places a second (the
// load-test sink stayed full), and a short sink turns pacing off.
const (
	DefaultQuantum = 25 * time.Microsecond
	DefaultRest    = 75 * time.Microsecond
	DefaultLinger  = time.Second
)

func (p Pacing) withDefaults() Pacing {
	if p.Quantum == 0 {
		p.Quantum = DefaultQuantum
	}
	if p.Rest <= 0 {
		p.Rest = DefaultRest
	}
	if p.Linger <= 0 {
		p.Linger = DefaultLinger
	}
	return p
}

// lane is one unit of admission: the stretch of work it has run since it
// last rested or sat idle for a Rest.
type lane struct {
	start time.Duration // since epoch: the current stretch began
	left  time.Duration // since epoch: the lane was last given back
	// allow is how long the current stretch may run before its rest:
	// Quantum, plus the work a rest that ran long earned (see rest).
	allow time.Duration
	// rester takes the lane's rests; nil rests with time.Sleep.
	rester *rester
	// surge: the lane is one of the n background work may take while
	// starved.
	surge bool
}

// New returns a gate admitting n at once (at least 1), paced with the
// default Pacing.
func New(n int) *Gate { return NewWithPacing(n, Pacing{}) }

// NewWithPacing returns a gate admitting n units of work at once (at
// least 1), and n more of background work while starved, paced with p.
func NewWithPacing(n int, p Pacing) *Gate {
	n = max(n, 1)
	epoch := time.Now()
	g := &Gate{
		pace:  p.withDefaults(),
		since: func() time.Duration { return time.Since(epoch) },
		size:  n,
	}
	g.level.Store(Full)
	for i := range 2 * n {
		l := &lane{surge: i >= n}
		if g.pace.Quantum > 0 {
			l.rester = newRester()
		}
		g.freeLocked(l)
	}
	return g
}

// Size is how many units of work the gate admits at once (starved
// background work may take as many again); 0 for a nil gate (no bound).
func (g *Gate) Size() int {
	if g == nil {
		return 0
	}
	return g.size
}

// Request marks a request answered (a take): pacing is on until
// Pacing.Linger after the last one. It is cheap: one clock read and one
// atomic store.
func (g *Gate) Request() {
	if g != nil {
		g.last.Store(max(int64(g.since()), 1))
	}
}

// Quiet reports whether no request came within d (Request), or none ever
// did: work that must never compete with requests (a map rendering ahead)
// waits for it. A nil gate tracks no requests and is always quiet.
func (g *Gate) Quiet(d time.Duration) bool {
	if g == nil {
		return true
	}
	last := g.last.Load()
	return last == 0 || g.since()-time.Duration(last) >= d
}

// Stats are a gate's counters.
type Stats struct {
	// Rests counts the rests lanes took, Rested their total length.
	Rests  uint64
	Rested time.Duration
}

// Stats returns the gate's counters; the zero Stats for a nil gate.
func (g *Gate) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	return Stats{Rests: g.rests.Load(), Rested: time.Duration(g.rested.Load())}
}

// Full is the fill of a client whose work is all on hand (a pipeline
// whose sinks hold their quotas), on the scale of thousandths a client
// reports its fill in (see Report). While any client holding the gate
// reports less, the lanes run unpaced.
const Full = 1000

// pacing reports whether lanes pace at now: a request came within Linger
// and every client holding the gate reports itself Full.
func (g *Gate) pacing(now time.Duration) bool {
	last := g.last.Load()
	return g.pace.Quantum > 0 && last != 0 && now-time.Duration(last) < g.pace.Linger && g.level.Load() >= Full
}

// Report records fill (thousandths: Full when the client holds what it
// needs) as the fill of the client key, a pipeline say, and whether it
// starves (it lacks more than its screened stock can make up for), and
// sets the gate's level: the pacing follows the emptiest of all the
// clients holding the gate, and the surge lanes open while any starves.
// A client reports again whenever its fill changes, and calls Forget
// once it is closed. Report on a nil gate does nothing.
func (g *Gate) Report(key any, fill int32, starved bool) {
	if g == nil {
		return
	}
	g.fillMu.Lock()
	defer g.fillMu.Unlock()
	if g.fills == nil {
		g.fills = map[any]fillReport{}
	}
	g.fills[key] = fillReport{fill, starved}
	g.relevel()
}

// Forget drops the reports of the client key (it is closed): the gate
// paces as if it had never reported. Forget on a nil gate does nothing.
func (g *Gate) Forget(key any) {
	if g == nil {
		return
	}
	g.fillMu.Lock()
	defer g.fillMu.Unlock()
	delete(g.fills, key)
	g.relevel()
}

// relevel sets level and starved from fills; fillMu is held. Surge lanes
// that open go to the background units waiting.
func (g *Gate) relevel() {
	l := int32(Full)
	starved := false
	for _, r := range g.fills {
		l = min(l, r.fill)
		starved = starved || r.starved
	}
	g.level.Store(l)
	if g.starved.Swap(starved) != starved && starved {
		g.mu.Lock()
		g.dispatchLocked()
		g.mu.Unlock()
	}
}

// Turn is a lane of a gate, held from Enter to Leave. A nil *Turn (from a
// nil gate) does nothing.
type Turn struct {
	g *Gate
	l *lane
	// back: a background unit's turn.
	back bool
}

// Enter waits for a lane for a unit of urgent work (a writer's
// transaction that may carry the hot marks promoted entries wait for), or
// for ctx to end (its error is returned). It is admitted before every
// background unit waiting.
func (g *Gate) Enter(ctx context.Context) (*Turn, error) {
	if g == nil {
		return nil, nil
	}
	return g.enter(ctx, true, false)
}

// EnterBackground waits for a lane for a unit of background work (a
// screening), or for ctx to end (its error is returned). It is admitted
// only while no urgent unit waits and none is promised, and only on one
// of the gate's Size lanes for any work.
func (g *Gate) EnterBackground(ctx context.Context) (*Turn, error) {
	if g == nil {
		return nil, nil
	}
	return g.enter(ctx, false, false)
}

// Promise announces an urgent unit that will enter soon (a promotion,
// when it starts): from now until its Enter or Cancel, no background unit
// is admitted. A nil gate returns a nil *Promise, whose methods do nothing
// (its Enter returns a nil Turn).
func (g *Gate) Promise() *Promise {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	g.promised++
	g.mu.Unlock()
	return &Promise{g: g}
}

// Promise is an urgent unit announced to a gate (Gate.Promise): the
// first call of Enter or Cancel ends the promise. A promise must be
// ended, or background work waits for ever. It is not safe for
// concurrent use.
type Promise struct {
	g    *Gate
	used bool
}

// Enter waits for a lane for the promised unit, as Gate.Enter, or for
// ctx to end. Entered again after the promise ended, it is an
// unpromised urgent unit.
func (p *Promise) Enter(ctx context.Context) (*Turn, error) {
	if p == nil {
		return nil, nil
	}
	promised := !p.used
	p.used = true
	return p.g.enter(ctx, true, promised)
}

// Cancel withdraws the promise (the unit will not enter: its promotion
// ended before it needed a turn). After Enter, or a first Cancel, it does
// nothing.
func (p *Promise) Cancel() {
	if p == nil || p.used {
		return
	}
	p.used = true
	g := p.g
	g.mu.Lock()
	g.promised--
	g.dispatchLocked()
	g.mu.Unlock()
}

// enter admits a unit: at once when a lane it may take is free and, for
// background work, nothing urgent waits or is promised; otherwise it
// queues and waits. A promised unit (promise) gives up its promise in the
// same step, so no background unit slips in between.
func (g *Gate) enter(ctx context.Context, urgent, promise bool) (*Turn, error) {
	g.mu.Lock()
	if promise {
		g.promised--
	}
	l := g.freeLaneLocked(urgent)
	var w *waiter
	if l == nil {
		w = &waiter{ch: make(chan *lane, 1), urgent: urgent}
		if urgent {
			g.waitUrgent = append(g.waitUrgent, w)
		} else {
			g.waitBack = append(g.waitBack, w)
		}
	}
	if promise {
		// The promise is gone: background units may now go if nothing
		// else urgent is about.
		g.dispatchLocked()
	}
	g.mu.Unlock()
	if l == nil {
		select {
		case l = <-w.ch:
		case <-ctx.Done():
			g.mu.Lock()
			if g.dropWaiterLocked(w) {
				g.mu.Unlock()
				return nil, ctx.Err()
			}
			g.mu.Unlock()
			// A lane was handed over meanwhile: give it back.
			l = <-w.ch
			g.giveBack(l, !urgent)
			return nil, ctx.Err()
		}
	}
	now := g.since()
	if now-l.left >= g.pace.Rest {
		// The lane sat idle for a rest: a new stretch.
		l.start, l.allow = now, g.pace.Quantum
	}
	return &Turn{g: g, l: l, back: !urgent}, nil
}

// freeLaneLocked takes a free lane for a unit arriving now, or returns
// nil: an urgent unit takes a general lane unless others wait before it; a background unit takes a general lane only when
// no unit waits before it and nothing urgent waits or is promised.
func (g *Gate) freeLaneLocked(urgent bool) *lane {
	if urgent {
		if len(g.waitUrgent) > 0 {
			return nil
		}
		if n := len(g.general); n > 0 {
			l := g.general[n-1]
			g.general = g.general[:n-1]
			return l
		}
		return nil
	}
	if len(g.waitBack) > 0 || !g.backgroundMayGoLocked() {
		return nil
	}
	l := g.backLaneLocked()
	if l != nil {
		g.heldBack++
	}
	return l
}

// backLaneLocked takes a free lane background work may take: a general
// one, else a surge one while starved; nil when none is free.
func (g *Gate) backLaneLocked() *lane {
	if n := len(g.general); n > 0 {
		l := g.general[n-1]
		g.general = g.general[:n-1]
		return l
	}
	if n := len(g.surge); n > 0 && g.starved.Load() {
		l := g.surge[n-1]
		g.surge = g.surge[:n-1]
		return l
	}
	return nil
}

// backgroundMayGoLocked reports whether background work may be admitted:
// nothing urgent waits or is promised.
func (g *Gate) backgroundMayGoLocked() bool {
	return len(g.waitUrgent) == 0 && g.promised == 0
}

// dropWaiterLocked removes w from its queue; false if it is no longer
// queued (a lane was handed to it).
func (g *Gate) dropWaiterLocked(w *waiter) bool {
	q := &g.waitBack
	if w.urgent {
		q = &g.waitUrgent
	}
	for i, x := range *q {
		if x == w {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// giveBack returns l to the gate: to the oldest urgent waiter, else (a
// general lane, nothing urgent about) to the oldest background waiter,
// else to its free list. back says whether a background unit held it.
func (g *Gate) giveBack(l *lane, back bool) {
	g.mu.Lock()
	if back {
		g.heldBack--
	}
	g.freeLocked(l)
	g.dispatchLocked()
	g.mu.Unlock()
}

// freeLocked puts l on its free list.
func (g *Gate) freeLocked(l *lane) {
	switch {
	case l.surge:
		g.surge = append(g.surge, l)
	default:
		g.general = append(g.general, l)
	}
}

// dispatchLocked hands free lanes to waiting units: urgent ones first (on
// a general lane), then background ones (on general lanes,
// and surge lanes while starved) while nothing urgent waits or is
// promised.
func (g *Gate) dispatchLocked() {
	for len(g.waitUrgent) > 0 {
		var l *lane
		if n := len(g.general); n > 0 {
			l, g.general = g.general[n-1], g.general[:n-1]
		} else {
			break
		}
		w := g.waitUrgent[0]
		g.waitUrgent = g.waitUrgent[1:]
		w.ch <- l
	}
	for len(g.waitBack) > 0 && g.backgroundMayGoLocked() {
		l := g.backLaneLocked()
		if l == nil {
			return
		}
		w := g.waitBack[0]
		g.waitBack = g.waitBack[1:]
		g.heldBack++
		w.ch <- l
	}
}

// Yield rests the lane when it has run its quantum in a row while pacing
// is on; a long unit calls it between its steps. It returns ctx's error
// once ctx has ended, so that a unit stops at its next step. A rest is a
// fraction of a millisecond, not cut short.
func (t *Turn) Yield(ctx context.Context) error {
	if t == nil {
		return ctx.Err()
	}
	t.rest()
	return ctx.Err()
}

// rest rests the lane if it has run its quantum while pacing is on.
//
// The rest is in proportion to the stretch it follows (Rest for each
// Quantum run), so a unit that ran past the quantum, one long chunk load,
// rests longer and the lane's share of a processor stays
// Quantum/(Quantum+Rest). A rest that lasts longer than asked (the
// thread woke late: a busy machine) earns the next stretch the work that
// share allows for the excess, up to one more Quantum: without it, late
// wake-ups would cut the refill's share below what keeps pace with
// demand, and the cap keeps the stretches short.
func (t *Turn) rest() {
	g, l := t.g, t.l
	now := g.since()
	ran := now - l.start
	if ran < max(l.allow, g.pace.Quantum) || !g.pacing(now) {
		return
	}
	perQuantum := g.pace.Rest
	owed := time.Duration(int64(ran) * int64(perQuantum) / int64(g.pace.Quantum))
	if g.sleep != nil {
		g.sleep(owed)
	} else {
		l.rester.rest(owed)
	}
	end := g.since()
	g.rests.Add(1)
	g.rested.Add(int64(end - now))
	over := end - now - owed
	credit := time.Duration(int64(max(over, 0)) * int64(g.pace.Quantum) / int64(perQuantum))
	l.start, l.allow = end, g.pace.Quantum+min(credit, g.pace.Quantum)
}

// Leave rests the lane if it has run its quantum (as Yield) and gives it
// back. A Turn must not be used after Leave.
func (t *Turn) Leave() {
	if t == nil {
		return
	}
	t.rest()
	t.l.left = t.g.since()
	t.g.giveBack(t.l, t.back)
}

// State is what a gate holds at one moment (see Gate.State).
type State struct {
	// Held is the number of lanes held by units of work, Background the
	// number of those held by background units.
	Held, Background int
	// WaitingUrgent and WaitingBackground are the units waiting for a
	// lane, Promised the urgent units promised and not yet entered or
	// cancelled.
	WaitingUrgent, WaitingBackground, Promised int
	// Level is the lowest fill the clients holding the gate reported
	// (Full when none did), Starved whether any reported starving.
	Level   int32
	Starved bool
}

// Idle reports whether s holds no lane, waiter or promise.
func (s State) Idle() bool {
	return s.Held+s.WaitingUrgent+s.WaitingBackground+s.Promised == 0
}

// State returns what the gate holds now (for tests and metrics); the zero
// State for a nil gate.
func (g *Gate) State() State {
	if g == nil {
		return State{}
	}
	g.mu.Lock()
	st := State{
		Held:              2*g.size - len(g.general) - len(g.surge),
		Background:        g.heldBack,
		WaitingUrgent:     len(g.waitUrgent),
		WaitingBackground: len(g.waitBack),
		Promised:          g.promised,
	}
	g.mu.Unlock()
	st.Level, st.Starved = g.level.Load(), g.starved.Load()
	return st
}
