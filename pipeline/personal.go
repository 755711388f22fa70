package pipeline

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rtpengine/rtp/stage"
)

// PersonalSink holds per-player buckets (ADR-043): one small stage per
// player, filled for that player only. It is one sink for budgeting and
// eligibility; its entries are pinned to a key, so it is externally leased
// and never takes part in transfers. Closing a player's bucket disposes its
// entries (closing their reservations).
//
// A PersonalSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes it (see Options).
type PersonalSink struct {
	p         *Pipeline
	name      string
	crit      Criteria
	perPlayer int
	keyed     *stage.Keyed[string, *Hot]
	sig       signal // wakes the requests waiting on any bucket (Take)
	d         demand
	c         sinkCounters

	mu sync.Mutex
	// mu protects the following fields.
	caps    map[string]int // nominal capacity per open player
	pending map[string]int // promotions in flight per player
}

var _ hotSink[*Hot] = (*PersonalSink)(nil)

func newPersonalSink(p *Pipeline, name string, perPlayer int, crit Criteria) (*PersonalSink, error) {
	ps := &PersonalSink{
		p: p, name: name, crit: crit, perPlayer: perPlayer,
		caps: make(map[string]int), pending: make(map[string]int),
	}
	keyed, err := stage.NewKeyed(name, func(player string, capacity int) (stage.Stage[*Hot], error) {
		return stage.NewQueue(name+"/"+player, capacity, stage.Hooks[*Hot]{
			OnAdd:     func(h *Hot) { p.rowAdd(h.Location) },
			OnRemove:  func(h *Hot) { p.rowRemove(h.Location) },
			OnDispose: func(h *Hot) { p.endHot(h) },
		})
	})
	if err != nil {
		return nil, err
	}
	ps.keyed = keyed
	ps.d.last = p.clock()
	return ps, nil
}

// Open opens the bucket of player with the given capacity (PerPlayer when
// capacity <= 0). Open is idempotent: an open bucket keeps its capacity.
func (ps *PersonalSink) Open(player string, capacity int) error {
	if player == "" {
		return fmt.Errorf("pipeline: personal sink %q: empty player", ps.name)
	}
	if capacity <= 0 {
		capacity = ps.perPlayer
	}
	capacity = min(capacity, stage.MaxCapacity)
	if _, err := ps.keyed.Open(player, capacity); err != nil {
		return err
	}
	ps.mu.Lock()
	if _, ok := ps.caps[player]; !ok {
		ps.caps[player] = capacity
	}
	ps.mu.Unlock()
	return nil
}

// Close closes the bucket of player, disposing its entries, and reports
// whether it was open.
func (ps *PersonalSink) Close(player string) bool {
	ps.mu.Lock()
	delete(ps.caps, player)
	ps.mu.Unlock()
	return ps.keyed.CloseKey(player)
}

// Take hands out a location from player's bucket, like Sink.Take
// (entries whose chunk changed are disposed and skipped).
func (ps *PersonalSink) Take(player string) (*Hot, bool) {
	ps.d.requests.Add(1)
	bucket, open := ps.keyed.Get(player)
	for {
		var h *Hot
		ok := false
		if open {
			h, ok = bucket.PollSilent()
		}
		if !ok {
			ps.c.misses.Add(1)
			ps.p.recordMiss(ps.name)
			return nil, false
		}
		if h.changed() {
			ps.c.changed.Add(1)
			bucket.Dispose(h)
			continue
		}
		ps.p.rowRemove(h.Location) // egress, as a Poll would
		if h.live() {
			ps.c.hits.Add(1)
			ps.p.held.release(h.Index)
			return h, true
		}
		ps.c.stale.Add(1)
		h.release(true)
		ps.p.cold.Offer(h.Location)
	}
}

// Players returns the players with an open bucket, sorted.
func (ps *PersonalSink) Players() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]string, 0, len(ps.caps))
	for k := range ps.caps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsOpen reports whether player has an open bucket. It takes no lock
// beyond the keyed stage's lookup and allocates nothing.
func (ps *PersonalSink) IsOpen(player string) bool {
	_, ok := ps.keyed.Get(player)
	return ok
}

// PlayerLen is the number of entries ready for player.
func (ps *PersonalSink) PlayerLen(player string) int {
	s, ok := ps.keyed.Get(player)
	if !ok {
		return 0
	}
	return s.Len()
}

// deficits returns, per open player, how many promotions would fill the
// bucket, counting those in flight.
func (ps *PersonalSink) deficits() []keyDeficit {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []keyDeficit
	for k, c := range ps.caps {
		s, ok := ps.keyed.Get(k)
		if !ok {
			continue
		}
		if d := c - s.Len() - ps.pending[k]; d > 0 {
			out = append(out, keyDeficit{k, d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

type keyDeficit struct {
	key string
	n   int
}

func (ps *PersonalSink) addPending(player string, d int) {
	ps.mu.Lock()
	ps.pending[player] += d
	if ps.pending[player] <= 0 {
		delete(ps.pending, player)
	}
	ps.mu.Unlock()
}

// deliver offers a promoted entry to player's bucket. It reports took
// false, leaving h with the caller (who demotes it), when the bucket is
// closed or full; otherwise the bucket took h, and stored says whether it
// kept it (a bucket closed or filled under it disposes it).
func (ps *PersonalSink) deliver(player string, h *Hot, now time.Time) (took, stored bool) {
	ps.mu.Lock()
	c, open := ps.caps[player]
	ps.mu.Unlock()
	s, ok := ps.keyed.Get(player)
	if !open || !ok || s.Len() >= c {
		return false, false
	}
	h.Arrived = now
	return true, s.OfferSilent(h)
}

// Name implements hotSink.
func (ps *PersonalSink) Name() string { return ps.name }

// coldSource implements hotSink.
func (ps *PersonalSink) coldSource() stage.Stage[Location] { return ps.p.cold }

// Accepts implements hotSink: fails closed, then the sink's criteria.
func (ps *PersonalSink) Accepts(h *Hot) bool {
	if !h.live() || h.changed() {
		return false
	}
	return ps.crit.accepts(h, ps.p.opts.Check)
}

// HasExtrinsicVerifier implements hotSink.
func (ps *PersonalSink) HasExtrinsicVerifier() bool { return ps.crit.Extrinsic }

// externallyLeased implements hotSink: always true (entries are keyed).
func (ps *PersonalSink) externallyLeased() bool { return true }

// narrowsBeyondColdSource implements hotSink.
func (ps *PersonalSink) narrowsBeyondColdSource() bool { return ps.crit.narrows() }

// chunkCostPerEntry implements hotSink: 1.
func (ps *PersonalSink) chunkCostPerEntry() int { return 1 }

// demandWeight implements hotSink.
func (ps *PersonalSink) demandWeight() int64 { return ps.d.weight() }

// Len implements hotSink: entries over all buckets.
func (ps *PersonalSink) Len() int { return ps.keyed.Len() }

// Cap implements hotSink: the capacities of the open buckets, summed.
func (ps *PersonalSink) Cap() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	for _, c := range ps.caps {
		n += c
	}
	return n
}
