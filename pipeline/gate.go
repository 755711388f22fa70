package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate admits the refill's processor work (screenings, promotions and,
// through the persisters that hold it, the location writer's
// transactions) a few units at a time across every pipeline that shares
// it, and, while requests come, paces it.
//
// Bound. A process that answers requests while it fills its caches gives
// its pipelines a gate smaller than its processor count (GOMAXPROCS), so
// that a processor is always free to answer. Without one, a burst of
// screening (terrain generated for a cold archive, say) takes every
// processor, and Go's scheduler then looks for network events only every
// few milliseconds: requests wait tens of milliseconds behind the refill
// that is meant to serve them.
//
// Pacing. A bound alone is not enough on a small machine. The operating
// system's scheduler lets a running thread finish its time slice (on
// Linux about a millisecond) before a thread woken by a request gets the
// core, so a refill that keeps one thread busy for milliseconds at a
// time, a pulse's promotions back to back or a writer's transaction of a
// few hundred rows, delays every request that arrives meanwhile by up to
// a slice, though the refill uses a fraction of a core on average. So
// each lane of the gate (one per unit admitted at once) runs at most
// Pacing.Quantum of work in a row and then rests Pacing.Rest, holding its
// lane, so that no refill work of this gate runs on that lane meanwhile
// and its goroutine parks, its processor free to requests (see rester).
// Rest is taken at Leave and at Turn.Yield, the
// points between units and inside long ones (a transaction yields
// between statements). Pacing is on while requests come (Request, called
// on every take, marks one) and for Pacing.Linger after the last: a
// process that answers nothing, or fills its caches before the first
// player asks, refills at full speed. A rest follows the stretch of work
// it ends in proportion (Rest for each Quantum run), so a lane uses at
// most Quantum/(Quantum+Rest) of a processor, which the defaults set at a
// quarter. The refill must still keep pace with demand, and a miss costs
// a player far more than a request's wait behind the refill, so the
// rests follow the sinks: each pulse a pipeline reports the fill of its
// emptiest sink (against its quota), and the rests shrink as the
// emptiest of all the pipelines holding the gate falls from its quota to
// half of it, where pacing stops. Under steady demand the sinks settle
// where the paced refill matches it.
//
// A nil *Gate admits everything at once and never paces.
type Gate struct {
	lanes chan *lane
	pace  Pacing
	// since is the gate's clock (time since it was made); tests replace
	// it. sleep, when set (by tests), rests a lane in place of the lane's
	// own rester.
	since func() time.Duration
	sleep func(d time.Duration)
	// last is when Request was last called, in nanoseconds since epoch
	// (0: never).
	last atomic.Int64
	// fillMu guards fills, the last fill each pipeline holding the gate
	// reported, by pipeline (see report); level is their minimum
	// (fullFill when there are none), read by every rest.
	fillMu sync.Mutex
	fills  map[any]int32
	level  atomic.Int32
	rests  atomic.Uint64
	rested atomic.Int64 // nanoseconds
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
// screening, a promotion's load and check, a statement of the writer:
// most take longer than the quantum) and then rests three times as
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
}

// NewGate returns a gate admitting n at once (at least 1), paced with the
// default Pacing.
func NewGate(n int) *Gate { return NewPacedGate(n, Pacing{}) }

// NewPacedGate returns a gate admitting n at once (at least 1), paced
// with p.
func NewPacedGate(n int, p Pacing) *Gate {
	n = max(n, 1)
	epoch := time.Now()
	g := &Gate{
		lanes: make(chan *lane, n),
		pace:  p.withDefaults(),
		since: func() time.Duration { return time.Since(epoch) },
	}
	g.level.Store(fullFill)
	for range n {
		l := &lane{}
		if g.pace.Quantum > 0 {
			l.rester = newRester()
		}
		g.lanes <- l
	}
	return g
}

// Size is how many the gate admits at once; 0 for a nil gate (no bound).
func (g *Gate) Size() int {
	if g == nil {
		return 0
	}
	return cap(g.lanes)
}

// Request marks a request answered (a take): pacing is on until
// Pacing.Linger after the last one. It is cheap: one clock read and one
// atomic store.
func (g *Gate) Request() {
	if g != nil {
		g.last.Store(max(int64(g.since()), 1))
	}
}

// GateStats are a gate's counters.
type GateStats struct {
	// Rests counts the rests lanes took, Rested their total length.
	Rests  uint64
	Rested time.Duration
}

// Stats returns the gate's counters; the zero GateStats for a nil gate.
func (g *Gate) Stats() GateStats {
	if g == nil {
		return GateStats{}
	}
	return GateStats{Rests: g.rests.Load(), Rested: time.Duration(g.rested.Load())}
}

// fullFill is a sink holding its quota, in the thousandths a pipeline
// reports its fill in (see Gate.report); at half of it and below the
// lanes run unpaced.
const fullFill = 1000

// pacing reports whether lanes pace at now: a request came within Linger
// and every pipeline's sinks hold more than half their quotas.
func (g *Gate) pacing(now time.Duration) bool {
	last := g.last.Load()
	return g.pace.Quantum > 0 && last != 0 && now-time.Duration(last) < g.pace.Linger && g.level.Load() > fullFill/2
}

// restScale is the part of Rest a lane rests for each Quantum, in
// thousandths: all of it while every pipeline's sinks are full, less as
// the emptiest falls, none at half its quota.
func (g *Gate) restScale() int64 {
	return min(max(int64(g.level.Load())-fullFill/2, 0)*2, fullFill)
}

// report records f as the fill of the pipeline key and sets the gate's
// level: the pacing follows the emptiest sink of all the pipelines
// holding the gate.
func (g *Gate) report(key any, f int32) {
	if g == nil {
		return
	}
	g.fillMu.Lock()
	defer g.fillMu.Unlock()
	if g.fills == nil {
		g.fills = map[any]int32{}
	}
	g.fills[key] = f
	g.relevel()
}

// drop forgets the pipeline key (it is closed).
func (g *Gate) drop(key any) {
	if g == nil {
		return
	}
	g.fillMu.Lock()
	defer g.fillMu.Unlock()
	delete(g.fills, key)
	g.relevel()
}

// relevel sets level from fills; fillMu is held.
func (g *Gate) relevel() {
	l := int32(fullFill)
	for _, f := range g.fills {
		l = min(l, f)
	}
	g.level.Store(l)
}

// Turn is a lane of a gate, held from Enter to Leave. A nil *Turn (from a
// nil gate) does nothing.
type Turn struct {
	g *Gate
	l *lane
}

// Enter waits for a lane, or for ctx to end (its error is returned).
func (g *Gate) Enter(ctx context.Context) (*Turn, error) {
	if g == nil {
		return nil, nil
	}
	var l *lane
	select {
	case l = <-g.lanes:
	default:
		select {
		case l = <-g.lanes:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	now := g.since()
	if now-l.left >= g.pace.Rest {
		// The lane sat idle for a rest: a new stretch.
		l.start, l.allow = now, g.pace.Quantum
	}
	return &Turn{g: g, l: l}, nil
}

// Yield rests the lane when it has run its quantum in a row while
// requests come; a long unit calls it between its steps. It returns ctx's
// error once ctx has ended, so that a unit stops at its next step. A rest
// is a fraction of a millisecond, not cut short.
func (t *Turn) Yield(ctx context.Context) error {
	if t == nil {
		return ctx.Err()
	}
	t.rest()
	return ctx.Err()
}

// rest rests the lane if it has run its quantum while requests come.
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
	// The rest for each quantum of work, shorter as the sinks empty.
	perQuantum := time.Duration(int64(g.pace.Rest) * g.restScale() / fullFill)
	if perQuantum <= 0 {
		return
	}
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
	t.g.lanes <- t.l
}
