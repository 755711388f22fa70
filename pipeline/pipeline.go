package pipeline

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stage"
)

// ErrClosed is returned by Pulse, Restore and Settle once the pipeline is
// closed.
var ErrClosed = errors.New("pipeline: closed")

// Pipeline is the location cache of one region (see the package
// documentation).
//
// Make one with New; the zero value is not usable. A Pipeline is safe for
// concurrent use: Take and the other sink operations may run on any
// goroutine at any time; Pulse, Settle, Clear and Close serialize among
// themselves. It owns the goroutines that run screenings and promotions;
// Close stops them.
type Pipeline struct {
	opts  Options
	log   *slog.Logger
	clock func() time.Time

	backlog *stage.Queue[Candidate]
	cold    *stage.Queue[Location]

	general  *Sink
	login    *LoginSink
	network  *NetworkSink
	personal *PersonalSink
	// singles are the unleased single-target sinks, in refill priority
	// order (login, general): the transfer candidates.
	singles []*Sink
	// groups are the group sink's partitions, by Size then Radius (nil
	// without a group sink), in groupKeyed; groupSig wakes the requests
	// waiting on any of them; groupSeed seeds their column draws.
	groups     []*GroupSink
	groupKeyed *stage.Keyed[Profile, *Subspace]
	groupSig   signal
	groupSeed  uint64

	base   context.Context // parent of all work; cancelled by Close
	cancel context.CancelFunc

	pulseMu sync.Mutex // serializes Pulse, Settle, Clear and Close
	// refillMu serializes the refill rounds (a pulse's and the kicks'),
	// and guards opts.Budget beside pulseMu (SetBudget holds both).
	// Lock order: pulseMu, then refillMu.
	refillMu sync.Mutex
	// kicked asks for a refill round (see kick).
	kicked atomic.Bool
	// housekeeping is set by Housekeep and cleared by Pulse: kicks then
	// start nothing (a paused region promotes nothing).
	housekeeping atomic.Bool
	// pulseMu protects the following fields.
	rng *rand.Rand

	// expandLimit caps the ranks of Options.Distribution: the shape's Len
	// in expand mode, 0 (no cap) otherwise.
	expandLimit int64
	// held is the double-delivery guard (see heldSet).
	held heldSet
	// share is this node's share of the chunks in a fleet (see SetShare):
	// the size in the high 32 bits, the rank in the low; 0 for all.
	share atomic.Uint64
	// holdDraws stops new draws while set (see HoldDraws).
	holdDraws atomic.Bool
	// drawShift scales down the draws a pulse tries while most are
	// skipped as duplicates (see drawTries).
	drawShift atomic.Int32

	workMu sync.Mutex
	// workMu protects the following fields.
	working int
	idle    chan struct{} // closed while working == 0

	// handoff passes work to an idle worker goroutine (see spawn);
	// idleWorkers counts the workers waiting on it.
	handoff     chan func()
	idleWorkers atomic.Int32

	screening atomic.Int64
	promoting atomic.Int64
	closed    atomic.Bool
	detached  atomic.Bool // persistence off: Close is unloading

	rel releaseCounters
	ctr counters
	// lastReserveErr is the text of the latest reservation that failed
	// for want of a readable chunk (see ReservationFailures).
	lastReserveErr atomic.Pointer[string]

	missMu sync.Mutex
	// missMu protects the following fields.
	misses    []MissRecord // ring of the recent misses
	missNext  int
	missTotal uint64
}

// counters are the pipeline-wide counters.
type counters struct {
	screened, promotions, transfers, demotions, trims  atomic.Uint64
	rowAdds, rowRemoves, mismatched                    atomic.Uint64
	screenRejects, promotionRejects                    [stage.ReasonError + 1]atomic.Uint64
	reserveFailures                                    [numReserveFailures]atomic.Uint64
	memoryErrors, duplicates, callbackPanics, knownBad atomic.Uint64
	refused                                            atomic.Uint64
	changedCold                                        atomic.Uint64
	adopted, foreign                                   atomic.Uint64 // fleet: see Adopt, ErrNotOwned
}

// New makes the pipeline of one region. It does no I/O: call Restore to
// bring back persisted locations, then Pulse periodically.
func New(opts Options) (*Pipeline, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	p := &Pipeline{opts: opts, log: opts.Logger.With("region", opts.Region), clock: opts.Clock}
	p.idle = make(chan struct{})
	p.handoff = make(chan func())
	close(p.idle)
	p.misses = make([]MissRecord, 0, opts.MissHistory)
	seed := opts.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.groupSeed = seed
	switch opts.Distribution.(type) {
	case geom.Expand, *geom.Expand:
		p.expandLimit = opts.Shape.Len()
	}

	var err error
	if p.backlog, err = stage.NewQueue("backlog", opts.BacklogCapacity, stage.Hooks[Candidate]{
		OnDispose: func(c Candidate) { p.held.release(c.Index) },
	}); err != nil {
		return nil, err
	}
	if p.cold, err = stage.NewQueue("cold", opts.ColdCapacity, stage.Hooks[Location]{
		OnAdd:     p.rowAdd,
		OnRemove:  p.rowRemove,
		OnDispose: func(l Location) { p.held.release(l.Index) },
	}); err != nil {
		return nil, err
	}
	g := opts.General
	if p.general, err = newSink(p, g.Name, KindGeneral, g.Capacity, g.Floor, g.Criteria); err != nil {
		return nil, err
	}
	if opts.Login.Enabled {
		l := opts.Login
		s, err := newSink(p, l.Name, KindLogin, l.PlayerCap, 0, l.Criteria)
		if err != nil {
			return nil, err
		}
		p.login = newLoginSink(s, l.PlayerCap)
		p.singles = append(p.singles, s)
	}
	p.singles = append(p.singles, p.general)
	if opts.Network.Enabled {
		nc := opts.Network
		pool, err := newSink(p, nc.Name, KindNetwork, nc.Capacity, 0, nc.Criteria)
		if err != nil {
			return nil, err
		}
		if p.network, err = newNetworkSink(pool, nc); err != nil {
			return nil, err
		}
	}
	if opts.Personal.Enabled {
		pc := opts.Personal
		if p.personal, err = newPersonalSink(p, pc.Name, pc.PerPlayer, pc.Criteria); err != nil {
			return nil, err
		}
	}
	if opts.Group.Enabled {
		if p.groupKeyed, p.groups, err = newGroupSinks(p, opts.Group); err != nil {
			return nil, err
		}
	}
	p.base, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// General returns the general sink.
func (p *Pipeline) General() *Sink { return p.general }

// Login returns the login sink, or nil when not enabled.
func (p *Pipeline) Login() *LoginSink { return p.login }

// Network returns the network sink, or nil when not enabled.
func (p *Pipeline) Network() *NetworkSink { return p.network }

// Personal returns the personal sink, or nil when not enabled.
func (p *Pipeline) Personal() *PersonalSink { return p.personal }

// DrawsEagerly reports Options.DrawEagerly.
func (p *Pipeline) DrawsEagerly() bool { return p.opts.DrawEagerly }

// Cold returns the cold stage (for tests and tools: offering into it
// directly is an ingress).
func (p *Pipeline) Cold() stage.Stage[Location] { return p.cold }

// Backlog returns the backlog stage (for tests and tools).
func (p *Pipeline) Backlog() stage.Stage[Candidate] { return p.backlog }

// rowAdd and rowRemove are the persistence callbacks of every stage.
func (p *Pipeline) rowAdd(l Location) {
	if p.detached.Load() {
		return
	}
	p.ctr.rowAdds.Add(1)
	if p.opts.Persister != nil {
		p.opts.Persister.Add(l)
	}
}

func (p *Pipeline) rowRemove(l Location) {
	if p.detached.Load() {
		return
	}
	p.ctr.rowRemoves.Add(1)
	if p.opts.Persister != nil {
		p.opts.Persister.Remove(l)
	}
}

// Restore brings the persisted locations of this region and key back as
// cold entries (silently: their rows exist). Rows that do not belong to the
// region (another world, an index outside the memory table or not mapping
// to the row's chunk) are deleted, and so is a row whose chunk already has
// a location in the pipeline (a second copy of one place, counted in
// Stats.Duplicates). It returns how many entries it restored; entries
// beyond the cold capacity are disposed, deleting their rows.
func (p *Pipeline) Restore(ctx context.Context) (int, error) {
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if p.opts.Persister == nil {
		return 0, nil
	}
	locs, err := p.opts.Persister.Load(ctx)
	if err != nil {
		return 0, fmt.Errorf("pipeline: restore: %w", err)
	}
	n := 0
	for _, l := range locs {
		if !p.belongs(l) {
			p.log.Warn("pipeline: dropping a persisted location that does not belong to the region", "location", l)
			p.rowRemove(l)
			continue
		}
		if !p.held.acquire(l.Index) {
			p.ctr.duplicates.Add(1)
			p.rowRemove(l)
			continue
		}
		if p.cold.OfferSilent(l) {
			n++
		}
	}
	return n, nil
}

// belongs reports whether a persisted location is one this region could
// have produced.
func (p *Pipeline) belongs(l Location) bool {
	if l.World != p.opts.World || l.Index < 0 || l.Index >= p.opts.Memory.Len() {
		return false
	}
	return geom.ChunkAt(p.opts.Shape, l.Index) == l.Chunk()
}

// startWork registers a goroutine of the pipeline.
func (p *Pipeline) startWork() {
	p.workMu.Lock()
	if p.working == 0 {
		p.idle = make(chan struct{})
	}
	p.working++
	p.workMu.Unlock()
}

func (p *Pipeline) endWork() {
	p.workMu.Lock()
	p.working--
	if p.working == 0 {
		close(p.idle)
	}
	p.workMu.Unlock()
}

// waitIdle waits until no goroutine of the pipeline runs, or ctx ends.
func (p *Pipeline) waitIdle(ctx context.Context) error {
	p.workMu.Lock()
	ch := p.idle
	p.workMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxIdleWorkers bounds the worker goroutines that wait for work once
// theirs is done (see spawn): enough for the promotions and screenings
// of a steady refill, few enough that a burst (a start filling every
// sink) leaves no crowd of them behind.
const maxIdleWorkers = 64

// spawn runs f on a goroutine of the pipeline: a worker that finished
// its work and waits for more, or a new one when none waits. Reusing
// workers keeps their grown stacks: at 1,000 promotions a second, a new
// goroutine for each spent more time growing its stack (a chunk load and
// a landing check are deep) than starting.
func (p *Pipeline) spawn(f func()) {
	p.startWork()
	select {
	case p.handoff <- f:
	default:
		go p.worker(f)
	}
}

// worker runs f, then the work spawn hands it, until the pipeline closes
// or more than maxIdleWorkers would wait.
func (p *Pipeline) worker(f func()) {
	for {
		p.run(f)
		if p.idleWorkers.Add(1) > maxIdleWorkers {
			p.idleWorkers.Add(-1)
			return
		}
		select {
		case f = <-p.handoff:
			p.idleWorkers.Add(-1)
		case <-p.base.Done():
			p.idleWorkers.Add(-1)
			return
		}
	}
}

// run runs f as work of the pipeline (see startWork).
func (p *Pipeline) run(f func()) {
	defer p.endWork()
	f()
}

// Settle waits until the screenings and promotions started so far have
// finished (no new ones start meanwhile), or ctx ends.
func (p *Pipeline) Settle(ctx context.Context) error {
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	return p.waitIdle(ctx)
}

// Clear empties every stage terminally: hot entries are disposed (their
// reservations closed), leases ended, cold and backlog emptied, and the
// rows of all of them deleted. The stages stay open. Work in flight
// finishes normally and may deliver afterwards.
func (p *Pipeline) Clear() {
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	if p.network != nil {
		p.network.closeLeases()
	}
	clearStage(p.general.ring)
	for _, s := range p.singles {
		if s != p.general {
			clearStage(s.ring)
		}
	}
	if p.network != nil {
		clearStage(p.network.pool.ring)
	}
	if p.personal != nil {
		for _, k := range p.personal.keyed.Keys() {
			if s, ok := p.personal.keyed.Get(k); ok {
				clearStage(s)
			}
		}
	}
	for _, g := range p.groups {
		clearStage(g.stage)
	}
	clearStage(p.cold)
	clearStage(p.backlog)
}

// clearStage disposes every entry of s.
func clearStage[T any](s stage.Stage[T]) {
	for {
		v, ok := s.PollSilent()
		if !ok {
			return
		}
		s.Dispose(v)
	}
}

// Close shuts the pipeline down: it stops the work in flight (waiting for
// it until ctx ends), then closes every stage, which closes every
// reservation the sinks hold and recycles nothing. Shutdown is not a
// terminal removal: the rows of the locations are kept (persistence is
// detached first), and Restore brings them back as cold entries on the next
// start. Close then flushes the Persister. It is idempotent; later calls
// return nil.
func (p *Pipeline) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	p.opts.Gate.Forget(p)
	p.cancel()
	// A kick's round under way finishes starting its promotions (they see
	// the context ended) before the wait; later kicks see closed.
	p.refillMu.Lock()
	p.kicked.Store(false)
	p.refillMu.Unlock()
	waitErr := p.waitIdle(ctx)
	p.detached.Store(true)
	if p.network != nil {
		p.network.closeLeases()
		p.network.pool.ring.Close()
	}
	if p.personal != nil {
		p.personal.keyed.Close()
	}
	if p.groupKeyed != nil {
		p.groupKeyed.Close()
	}
	for _, s := range p.singles {
		s.ring.Close()
	}
	p.cold.Close()
	p.backlog.Close()
	var flushErr error
	if p.opts.Persister != nil {
		flushErr = p.opts.Persister.Flush(ctx)
	}
	if waitErr != nil {
		waitErr = fmt.Errorf("pipeline: close: work still running: %w", waitErr)
	}
	if flushErr != nil {
		flushErr = fmt.Errorf("pipeline: close: flush: %w", flushErr)
	}
	return errors.Join(waitErr, flushErr)
}
