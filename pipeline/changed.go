package pipeline

import (
	"slices"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stage"
)

// Changed chunks.
//
// A world whose chunks change under the cache (a game server rewriting its
// region files) makes verified places stale. The resident store tells it
// per reservation (world.Reservation.Stale, from world.ResidentOptions.Epochs):
// every hand-out path (Sink.Take, LoginSink.Take, PersonalSink.Take,
// NetworkSink.Reserve and Redeem) disposes an entry whose
// chunk changed, through its stage, and goes on to the next one, and the
// Accepts rechecks fail on one, so no transfer certifies it. DropChanged
// removes the entries of changed chunks ahead of their takes, so the
// allocator refills the sinks at once instead of at the next miss.

// DropChanged disposes every entry of the given chunks, and every hot
// entry whose reservation reports a change (Hot.Changed), from the hot
// sinks (general, login, the network pool, every personal bucket, every
// group subspace with a place in one of the chunks or on a changed one)
// and from cold,
// through each stage's disposal, so their persisted rows are deleted and
// the places are drawn and screened again later. Entries leased to a
// network token stay with their lease: Redeem replaces a changed one.
// Entries in transit (a promotion or a transfer in flight) are not seen;
// the hand-out paths catch them. It returns how many entries it disposed,
// counted in SinkStats.Changed and Stats.ChangedCold.
//
// It serializes with Pulse. Each stage is swept by taking its entries out
// and putting back the others, in order; a Take meanwhile may find the
// stage momentarily short of them. It does no I/O.
func (p *Pipeline) DropChanged(chunks []geom.Chunk) int {
	if p.closed.Load() {
		return 0
	}
	set := make(map[geom.Chunk]struct{}, len(chunks))
	for _, c := range chunks {
		set[c] = struct{}{}
	}
	p.pulseMu.Lock()
	defer p.pulseMu.Unlock()
	hit := func(h *Hot) bool {
		if h == nil {
			return false
		}
		if _, ok := set[h.Chunk()]; ok {
			return true
		}
		return h.changed()
	}
	total := 0
	sweepHot := func(s stage.Stage[*Hot], c *sinkCounters) {
		n := sweepStage(s, hit)
		c.changed.Add(uint64(n))
		total += n
	}
	for _, s := range p.singles {
		sweepHot(s.ring, &s.c)
	}
	if p.network != nil {
		sweepHot(p.network.pool.ring, &p.network.pool.c)
	}
	if ps := p.personal; ps != nil {
		for _, k := range ps.keyed.Keys() {
			if s, ok := ps.keyed.Get(k); ok {
				sweepHot(s, &ps.c)
			}
		}
	}
	for _, g := range p.groups {
		n := sweepStage(g.stage, func(s *Subspace) bool {
			return s != nil && slices.ContainsFunc(s.Places, hit)
		})
		g.c.changed.Add(uint64(n))
		total += n
	}
	if len(set) > 0 {
		n := sweepStage(p.cold, func(l Location) bool {
			_, ok := set[l.Chunk()]
			return ok
		})
		p.ctr.changedCold.Add(uint64(n))
		total += n
	}
	return total
}

// sweepStage takes the entries stored in s out silently, once round,
// disposes those drop reports (through s) and puts the others back
// silently, in their order. It returns how many it disposed. An entry put
// back into a stage filled meanwhile by a producer is disposed by it, as
// OfferSilent does.
func sweepStage[T any](s stage.Stage[T], drop func(T) bool) int {
	n := 0
	for tries := s.Len(); tries > 0; tries-- {
		v, ok := s.PollSilent()
		if !ok {
			break
		}
		if drop(v) {
			s.Dispose(v)
			n++
			continue
		}
		s.OfferSilent(v)
	}
	return n
}
