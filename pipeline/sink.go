package pipeline

import (
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/world"
)

// hotSink is the hot sink contract: what the allocator and the
// transfer-eligibility test need to know about a sink whose entries are T
// (*Hot for every sink of this package).
//
// Implementations in this package are safe for concurrent use.
type hotSink[T any] interface {
	// Name is the sink's name, unique in its pipeline.
	Name() string
	// coldSource is the cold stage the sink is filled from; its identity
	// establishes common provenance (rule 1). Nil means none.
	coldSource() stage.Stage[Location]
	// Accepts is the resident-chunk recheck: would this sink accept the
	// entry? It performs no chunk I/O and calls no verifier, and it fails
	// closed on an entry whose reservation is nil or closed.
	Accepts(entry T) bool
	// HasExtrinsicVerifier reports whether the sink's acceptance depends on
	// an out-of-process check, which Accepts cannot run.
	HasExtrinsicVerifier() bool
	// externallyLeased reports whether entries are pinned to a token or a
	// key (network, personal): such a sink never takes part in transfers.
	externallyLeased() bool
	// narrowsBeyondColdSource reports whether the sink applies criteria its
	// cold source does not guarantee.
	narrowsBeyondColdSource() bool
	// chunkCostPerEntry is the footprint of one entry, the targets it
	// offers: 1 for a single-target sink, the profile's Size for a group
	// sink. Rule 0 compares it (subsumption).
	chunkCostPerEntry() int
	// demandWeight is the sink's demand, an EWMA of requests per second
	// updated on each pulse, in thousandths (1000 = one request a second).
	demandWeight() int64
	// Len is the number of entries ready; Cap the sink's capacity.
	Len() int
	Cap() int
}

// eligibility is the verdict of the transfer-eligibility test.
type eligibility uint8

// The verdicts, in the order the rules are applied.
const (
	// ineligibleSameSink: source and destination are one sink.
	ineligibleSameSink eligibility = iota
	// ineligibleLeased: rule 0, a sink is externally leased.
	ineligibleLeased
	// ineligibleFootprint: rule 0, the source's footprint is smaller than
	// the destination's.
	ineligibleFootprint
	// ineligibleUncertified: rules 0 hold but neither rule 1 nor rule 2
	// certifies the entry; it is left in place.
	ineligibleUncertified
	// certifiedProvenance: rule 1, same cold source and a destination
	// that narrows nothing.
	certifiedProvenance
	// certifiedRecheck: rule 2, the destination's Accepts passed and it has
	// no extrinsic verifier.
	certifiedRecheck
)

var eligibilityNames = [...]string{
	ineligibleSameSink:    "same sink",
	ineligibleLeased:      "externally leased",
	ineligibleFootprint:   "footprint too small",
	ineligibleUncertified: "uncertified",
	certifiedProvenance:   "certified by provenance",
	certifiedRecheck:      "certified by recheck",
}

func (e eligibility) String() string {
	if int(e) < len(eligibilityNames) {
		return eligibilityNames[e]
	}
	return "Eligibility(" + strconv.Itoa(int(e)) + ")"
}

// certified reports whether the entry may be transferred.
func (e eligibility) certified() bool {
	return e == certifiedProvenance || e == certifiedRecheck
}

// pairEligible applies rule 0, the preconditions on the sink pair: distinct
// sinks, neither externally leased, and a.chunkCostPerEntry() >=
// b.chunkCostPerEntry() (subsumption: it authorizes the size comparison
// only). It returns ineligibleUncertified when the preconditions hold (the
// entry still needs rule 1 or 2), or the rule that failed.
func pairEligible[T any](a, b hotSink[T]) eligibility {
	switch {
	case any(a) == any(b):
		return ineligibleSameSink
	case a.externallyLeased() || b.externallyLeased():
		return ineligibleLeased
	case a.chunkCostPerEntry() < b.chunkCostPerEntry():
		return ineligibleFootprint
	}
	return ineligibleUncertified
}

// eligible is the transfer-eligibility test (see the package documentation) of entry, held by a,
// for destination b: rule 0 (pairEligible), then rule 1 (a.coldSource() ==
// b.coldSource(), not nil, and !b.narrowsBeyondColdSource()), then rule 2
// (!b.HasExtrinsicVerifier() && b.Accepts(entry)). Only a certified verdict
// allows the transfer; anything else leaves the entry where it is.
func eligible[T any](a, b hotSink[T], entry T) eligibility {
	if e := pairEligible(a, b); e != ineligibleUncertified {
		return e
	}
	if ca := a.coldSource(); ca != nil && ca == b.coldSource() && !b.narrowsBeyondColdSource() {
		return certifiedProvenance
	}
	if !b.HasExtrinsicVerifier() && b.Accepts(entry) {
		return certifiedRecheck
	}
	return ineligibleUncertified
}

// CheckFunc is the full safety check of a landing column on the chunk res
// holds resident: block, headroom, vertical bounds and biome rules. It
// returns the landing y, or the cause of the rejection. It must do no I/O
// (it reads res.Chunk()) and fail closed on a nil or closed reservation.
// (*safety.Checker).Accepts, adapted, is one.
type CheckFunc func(res *world.Reservation, b geom.Block) (y int, cause memory.Cause, ok bool)

// Criteria are what a sink requires of its entries beyond the region's own
// checks.
type Criteria struct {
	// World, when set, restricts the sink to locations of that world.
	World string
	// Contains, when set, restricts the sink to locations it reports
	// inside: shape or distance containment and vertical bounds, by
	// arithmetic on the coordinate only.
	Contains func(Location) bool
	// Check, when set, replaces Options.Check for this sink: a promotion
	// into it and every recheck use it.
	Check CheckFunc
	// Narrows declares criteria beyond the cold source's that this package
	// cannot see (for example a stricter Check). Setting World, Contains or
	// Check implies it.
	Narrows bool
	// Extrinsic declares that acceptance also depends on an out-of-process
	// check: the sink then receives transfers only by provenance (rule 1).
	Extrinsic bool
}

func (c *Criteria) narrows() bool {
	return c.Narrows || c.World != "" || c.Contains != nil || c.Check != nil
}

// accepts is the recheck of a live entry: world, containment, then the
// block and biome rules on the resident chunk, whose landing y must be the
// entry's.
func (c *Criteria) accepts(h *Hot, check CheckFunc) bool {
	if c.World != "" && h.World != c.World {
		return false
	}
	if c.Contains != nil && !c.Contains(h.Location) {
		return false
	}
	if c.Check != nil {
		check = c.Check
	}
	y, _, ok := check(h.Res, h.Block())
	return ok && int64(y) == h.Y
}

// Kind is the access method a sink serves.
type Kind uint8

// The sink kinds.
const (
	KindGeneral Kind = iota
	KindLogin
	KindNetwork
	KindPersonal
	KindGroup
)

var kindNames = [...]string{"general", "login", "network", "personal", "group"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// demand is an EWMA of requests per second, updated on each pulse.
type demand struct {
	requests atomic.Uint64 // since the last update
	rate     atomic.Uint64 // float64 bits
	last     time.Time     // guarded by Pipeline.pulseMu
}

// update folds the requests since the last update into the average, with
// a weight that halves every halfLife.
func (d *demand) update(now time.Time, halfLife time.Duration) {
	dt := now.Sub(d.last)
	if dt <= 0 {
		return
	}
	n := d.requests.Swap(0)
	inst := float64(n) / dt.Seconds()
	alpha := 1 - math.Exp2(-dt.Seconds()/halfLife.Seconds())
	old := math.Float64frombits(d.rate.Load())
	d.rate.Store(math.Float64bits(old + alpha*(inst-old)))
	d.last = now
}

func (d *demand) perSecond() float64 { return math.Float64frombits(d.rate.Load()) }

func (d *demand) weight() int64 { return int64(math.Round(d.perSecond() * 1000)) }

// quotaFor is the quota of a sink: its demand over the horizon, rounded to
// the nearest entry (so a decayed average reaches zero), clamped to [floor,
// capacity].
func quotaFor(rate float64, horizon time.Duration, floor, capacity int64) int64 {
	want := int64(math.Round(rate * horizon.Seconds()))
	return min(max(want, floor), capacity)
}

// sinkCounters are the counters of one sink.
type sinkCounters struct {
	hits, misses, stale     atomic.Uint64
	changed                 atomic.Uint64
	promotions, mismatched  atomic.Uint64
	transfersIn, transfersO atomic.Uint64
	demotions, trims        atomic.Uint64
}

// Sink is an unleased single-target hot sink (general, or the pool under a
// login or network sink): a lock-free stage.Ring of *Hot.
//
// A Sink is safe for concurrent use. The zero value is not usable: a
// Pipeline makes its sinks.
type Sink struct {
	p    *Pipeline
	name string
	kind Kind
	ring *stage.Ring[*Hot]
	crit Criteria

	capacity atomic.Int64 // nominal; the ring may be larger (a power of two)
	floor    atomic.Int64 // configured floor; <= 0 means capacity, < 0 none
	quota    atomic.Int64
	pending  atomic.Int64 // promotions in flight into this sink
	landed   atomic.Bool  // transferred into since the last OnPromote call
	sig      signal       // wakes the requests waiting on the sink (Take)
	d        demand
	c        sinkCounters
}

var _ hotSink[*Hot] = (*Sink)(nil)

func newSink(p *Pipeline, name string, kind Kind, capacity, floor int, crit Criteria) (*Sink, error) {
	s := &Sink{p: p, name: name, kind: kind, crit: crit}
	ring, err := stage.NewRing(name, capacity, stage.Hooks[*Hot]{
		OnAdd:     func(h *Hot) { p.rowAdd(h.Location) },
		OnRemove:  func(h *Hot) { p.rowRemove(h.Location) },
		OnDispose: func(h *Hot) { p.endHot(h) },
	})
	if err != nil {
		return nil, err
	}
	s.ring = ring
	s.capacity.Store(int64(capacity))
	s.floor.Store(int64(floor))
	s.quota.Store(int64(capacity))
	s.d.last = p.clock()
	return s, nil
}

// Name implements hotSink.
func (s *Sink) Name() string { return s.name }

// Kind is the access method the sink serves.
func (s *Sink) Kind() Kind { return s.kind }

// Stage returns the sink's stage. Offering into it directly bypasses the
// allocator's accounting; it is meant for tests and tools.
func (s *Sink) Stage() stage.Stage[*Hot] { return s.ring }

// coldSource implements hotSink.
func (s *Sink) coldSource() stage.Stage[Location] { return s.p.cold }

// Accepts implements hotSink: it fails closed on a nil entry or a nil or
// closed reservation, without reading any chunk, then checks the sink's
// criteria and the safety check on the resident chunk.
func (s *Sink) Accepts(h *Hot) bool {
	if !h.live() || h.changed() {
		return false
	}
	return s.crit.accepts(h, s.p.opts.Check)
}

// HasExtrinsicVerifier implements hotSink.
func (s *Sink) HasExtrinsicVerifier() bool { return s.crit.Extrinsic }

// externallyLeased implements hotSink: true for the network pool.
func (s *Sink) externallyLeased() bool { return s.kind == KindNetwork }

// narrowsBeyondColdSource implements hotSink.
func (s *Sink) narrowsBeyondColdSource() bool { return s.crit.narrows() }

// chunkCostPerEntry implements hotSink: 1.
func (s *Sink) chunkCostPerEntry() int { return 1 }

// demandWeight implements hotSink.
func (s *Sink) demandWeight() int64 { return s.d.weight() }

// Len implements hotSink.
func (s *Sink) Len() int { return s.ring.Len() }

// Cap implements hotSink: the nominal capacity (the ring may hold a few
// more, rounded up to a power of two, as slack for concurrent producers).
func (s *Sink) Cap() int { return int(s.capacity.Load()) }

// Quota is the fill the allocator aims for, set on each pulse.
func (s *Sink) Quota() int { return int(s.quota.Load()) }

// SetCapacity changes the sink's capacity (a reloaded activeChunkCap). A
// larger capacity is filled by promotions; a smaller one never evicts at
// once: entries above it leave by use, by transfer, or, once they have been
// in the sink for Options.MinResidence, by demotion to cold.
func (s *Sink) SetCapacity(n int) {
	s.capacity.Store(int64(min(max(n, 0), stage.MaxCapacity)))
}

// Take hands out the oldest ready entry, which then belongs to the caller
// (who closes it with Hot.Close once done). Its row is removed. On a miss
// it records the fill of every sink. An entry whose chunk changed since it
// was checked (Hot.Changed) is disposed through the sink, counted in
// SinkStats.Changed, and Take goes on to the next one. Take does not
// allocate.
func (s *Sink) Take() (*Hot, bool) {
	s.d.requests.Add(1)
	for {
		h, ok := pollDelivered(s.ring)
		if !ok {
			s.c.misses.Add(1)
			s.p.recordMiss(s.name)
			return nil, false
		}
		if h.changed() {
			s.c.changed.Add(1)
			s.ring.Dispose(h)
			continue
		}
		s.p.rowRemove(h.Location) // egress, as a Poll would
		if h.live() {
			s.c.hits.Add(1)
			s.p.held.release(h.Index)
			return h, true
		}
		s.dropStale(h)
	}
}

// pollDelivered takes the oldest entry of r, as PollSilent does, but does
// not take a position a producer has claimed and is still writing for an
// empty ring. The ring's producers claim a position and then write its
// slot, and a poll that meets the slot half written reports the ring empty
// even when later slots are full (see stage.Ring). A request woken by a
// delivery (Options.OnPromote) would then miss the entry it was woken for
// whenever two deliveries ran at once, so pollDelivered tries again,
// yielding the processor between tries, while the ring still counts
// claimed positions: the writer never blocks between claim and write, but
// it may be preempted there. It gives up after maxPollWait, so that a
// writer descheduled for longer cannot hold a request.
func pollDelivered(r *stage.Ring[*Hot]) (*Hot, bool) {
	var deadline time.Time
	for {
		h, ok := r.PollSilent()
		if ok || r.Len() == 0 {
			return h, ok
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(maxPollWait)
		} else if now.After(deadline) {
			return h, false
		}
		runtime.Gosched()
	}
}

// maxPollWait bounds how long pollDelivered waits for a half-written
// slot.
const maxPollWait = 2 * time.Millisecond

// changed reports whether the chunk of h changed at its source since the
// reservation's copy was loaded (world.Reservation.Stale): the place was
// checked against data that is no longer the world's. It is false for an
// entry without a reservation, and never dereferences a nil one.
func (h *Hot) changed() bool { return h != nil && h.Res.Stale() }

// Changed reports whether the chunk of h changed at its source since it
// was checked: the place may no longer be safe. Every hand-out of the
// pipeline skips such entries; a caller holding one may check again.
func (h *Hot) Changed() bool { return h.changed() }

// dropStale ends an entry taken out (its row is gone) whose
// reservation was closed under it: the location is still verified, so it
// goes back to cold as an ingress.
func (s *Sink) dropStale(h *Hot) {
	s.c.stale.Add(1)
	h.release(true)
	s.p.cold.Offer(h.Location)
}

// drain demotes every entry of the sink to cold (silent poll, close the
// reservation, offer the location to cold) and returns how many it
// demoted.
func (s *Sink) drain() int {
	n := 0
	for {
		h, ok := s.ring.PollSilent()
		if !ok {
			return n
		}
		s.p.demote(h, s.ring)
		s.c.demotions.Add(1)
		n++
	}
}

// room reports how many more entries the sink can take before reaching its
// nominal capacity.
func (s *Sink) room() int { return s.Cap() - s.Len() }

// deliver offers a freshly promoted or transferred entry silently.
func (s *Sink) deliver(h *Hot, now time.Time) bool {
	h.Arrived = now
	return s.ring.OfferSilent(h)
}

// fitRing grows the ring to the nominal capacity, or shrinks it to what it
// needs when that frees at least half of it. It never drops below the
// entries stored, so it disposes nothing unless a producer races it.
func (s *Sink) fitRing() {
	want := max(s.Cap(), s.Len())
	have := s.ring.Cap()
	if want > have || (want < have/2) {
		s.ring.Resize(want)
	}
}

// effectiveFloor resolves the configured floor against a capacity.
func effectiveFloor(floor, capacity int64) int64 {
	switch {
	case floor == 0:
		return capacity
	case floor < 0:
		return 0
	}
	return min(floor, capacity)
}
