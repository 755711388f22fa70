package pipeline

import (
	"github.com/rtpengine/rtp/stage"
	"time"
)

// SinkFill is a sink's fill and capacity at one instant.
type SinkFill struct {
	Name     string `json:"name"`
	Fill     int    `json:"fill"`
	Capacity int    `json:"capacity"`
}

// MissRecord is one miss: a request that found its sink empty, with the
// fill of every sink at that instant (the joint state that decides whether
// pooling would have served it).
type MissRecord struct {
	Time  time.Time  `json:"time"`
	Sink  string     `json:"sink"`
	Fills []SinkFill `json:"fills"`
}

// SinkStats describe one sink.
type SinkStats struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	Fill     int     `json:"fill"`
	Capacity int     `json:"capacity"`
	Quota    int     `json:"quota"`
	Leased   int     `json:"leased,omitempty"` // network: entries held by tokens
	Demand   float64 `json:"demand"`           // requests per second (EWMA)
	Pending  int     `json:"pending"`          // promotions in flight
	Hits     uint64  `json:"hits"`
	Misses   uint64  `json:"misses"`
	Stale    uint64  `json:"stale"` // entries found with a closed reservation
	// Changed counts entries disposed because their chunk changed at the
	// source since they were checked (found at a take, or by
	// Pipeline.DropChanged).
	Changed      uint64 `json:"changed"`
	Promotions   uint64 `json:"promotions"`
	Mismatched   uint64 `json:"mismatched"` // promoted but refused by the sink's criteria
	TransfersIn  uint64 `json:"transfersIn"`
	TransfersOut uint64 `json:"transfersOut"`
	Demotions    uint64 `json:"demotions"`
	Trims        uint64 `json:"trims"`
	// Group describes a group sink's partition (Kind "group"); nil for
	// the other sinks. Fill, Capacity and Quota of a group sink count
	// subspaces.
	Group *GroupStats `json:"group,omitempty"`
}

// GroupStats describe one partition of the group sink.
type GroupStats struct {
	// Size and Radius are the partition's profile: subspaces of Size
	// places within Radius blocks of their centroid.
	Size   int `json:"size"`
	Radius int `json:"radius"`
	// Places is the number of places its subspaces hold.
	Places int `json:"places"`
	// Groups counts the groups served from it, Players their places.
	Groups  uint64 `json:"groups"`
	Players uint64 `json:"players"`
	// Trimmed counts the places of the remainders disposed when a
	// subspace was trimmed to a smaller group (at a take or a transfer).
	Trimmed uint64 `json:"trimmed"`
	// NoRoom counts the promotions whose chunk held too few safe columns
	// near the anchor for the profile (the location went back to cold).
	NoRoom uint64 `json:"noRoom"`
	// Unfit counts subspaces disposed because no group of the size asked
	// fit the radius (a subspace this package made always fits).
	Unfit uint64 `json:"unfit"`
	// Backoff is how many refill rounds the partition still skips after
	// promotions that found no room.
	Backoff int `json:"backoff"`
}

// ReservationStats count the closes of reservations held by the pipeline.
type ReservationStats struct {
	// Released is the number of reservations the pipeline or a taker
	// released through a hot entry.
	Released uint64 `json:"released"`
	// ForeignClosed counts reservations already closed when the pipeline
	// released them while it still held them: closed by the store's
	// watchdog (ReservationLifespan) or its shutdown, or by a bug.
	ForeignClosed uint64 `json:"foreignClosed"`
	// DoubleReleases counts second releases of one entry; a correct
	// pipeline never does one.
	DoubleReleases uint64 `json:"doubleReleases"`
}

// Stats is a snapshot of a pipeline's state and counters.
type Stats struct {
	Backlog SinkFill    `json:"backlog"`
	Cold    SinkFill    `json:"cold"`
	Sinks   []SinkStats `json:"sinks"`

	Screening  int    `json:"screening"` // screenings in flight
	Promoting  int    `json:"promoting"` // promotions in flight
	Screened   uint64 `json:"screened"`  // candidates that reached cold
	Promotions uint64 `json:"promotions"`
	Transfers  uint64 `json:"transfers"`
	Demotions  uint64 `json:"demotions"`
	Trims      uint64 `json:"trims"`
	Mismatched uint64 `json:"mismatched"`
	// ScreenRejections and PromotionRejections count rejections by reason
	// name (stage.Reason.String()).
	ScreenRejections    map[string]uint64 `json:"screenRejections"`
	PromotionRejections map[string]uint64 `json:"promotionRejections"`
	// ReservationFailures says why promotions could not reserve their
	// chunk (the RESERVATION_FAILED promotion rejections), by kind:
	// "timeout" (the load took longer than the promotion timeout),
	// "ungenerated" (the chunk is no longer finished on disk),
	// "outside" (outside the world) and "unreadable" (damaged or
	// unreadable chunk data, or another I/O error; see
	// LastReservationError).
	ReservationFailures map[string]uint64 `json:"reservationFailures"`
	// LastReservationError is the latest "unreadable" failure's text
	// (the file and chunk that failed, and why), or "".
	LastReservationError string `json:"lastReservationError,omitempty"`
	// LoginExhaustion counts login-reserve misses.
	LoginExhaustion uint64 `json:"loginExhaustion"`
	// Misses counts every miss; RecentMisses holds the last ones, oldest
	// first.
	Misses       uint64       `json:"misses"`
	RecentMisses []MissRecord `json:"recentMisses"`
	// RowAdds and RowRemoves count the persistence callbacks fired.
	RowAdds      uint64           `json:"rowAdds"`
	RowRemoves   uint64           `json:"rowRemoves"`
	Reservations ReservationStats `json:"reservations"`
	MemoryErrors uint64           `json:"memoryErrors"`
	// Held is the number of chunks (spiral indices) with a location in the
	// pipeline now, from the draw of the candidate to its hand-out.
	Held int `json:"held"`
	// Duplicates counts draws, and restored rows, skipped because their
	// chunk already had a location in the pipeline: the double-delivery
	// guard at work.
	Duplicates uint64 `json:"duplicates"`
	// Adopted counts locations taken from a fleet's shared pool (rows
	// another node returned) into cold; Foreign counts entries dropped at
	// promotion because another node owned their row.
	Adopted uint64 `json:"adopted"`
	Foreign uint64 `json:"foreign"`
	// KnownBad counts cold locations dropped at promotion before any
	// reservation because memory had meanwhile marked their chunk bad
	// (they are also counted in PromotionRejections).
	KnownBad uint64 `json:"knownBad"`
	// ChangedCold counts cold locations DropChanged disposed; Changed is
	// that plus every sink's SinkStats.Changed: the places dropped because
	// their chunk changed at the source.
	ChangedCold uint64 `json:"changedCold"`
	Changed     uint64 `json:"changed"`
	// CallbackPanics counts panics of Options.OnPromote.
	CallbackPanics uint64 `json:"callbackPanics"`
	// Refused counts the entries Take closed because the request's Admit
	// refused them.
	Refused uint64 `json:"refused"`
}

// fills returns the fill and capacity of every sink, in a fixed order:
// login, general, network, personal, the group sink's partitions.
func (p *Pipeline) fills() []SinkFill {
	out := make([]SinkFill, 0, len(p.singles)+2)
	for _, s := range p.singles {
		out = append(out, SinkFill{s.name, s.Len(), s.Cap()})
	}
	if p.network != nil {
		out = append(out, SinkFill{p.network.Name(), p.network.Len(), p.network.Cap()})
	}
	if p.personal != nil {
		out = append(out, SinkFill{p.personal.name, p.personal.Len(), p.personal.Cap()})
	}
	for _, g := range p.groups {
		out = append(out, SinkFill{g.name, g.Len(), g.Cap()})
	}
	return out
}

// recordMiss records a miss of sink with the fill of every sink now.
func (p *Pipeline) recordMiss(sink string) {
	r := MissRecord{Time: p.clock(), Sink: sink, Fills: p.fills()}
	p.missMu.Lock()
	defer p.missMu.Unlock()
	p.missTotal++
	if cap(p.misses) == 0 {
		return
	}
	if len(p.misses) < cap(p.misses) {
		p.misses = append(p.misses, r)
		return
	}
	p.misses[p.missNext] = r
	p.missNext = (p.missNext + 1) % len(p.misses)
}

func sinkStats(name string, k Kind, fill, capacity, quota int, d *demand, pending int, c *sinkCounters) SinkStats {
	return SinkStats{
		Name: name, Kind: k.String(), Fill: fill, Capacity: capacity, Quota: quota,
		Demand: d.perSecond(), Pending: pending,
		Hits: c.hits.Load(), Misses: c.misses.Load(), Stale: c.stale.Load(), Changed: c.changed.Load(),
		Promotions: c.promotions.Load(), Mismatched: c.mismatched.Load(),
		TransfersIn: c.transfersIn.Load(), TransfersOut: c.transfersO.Load(),
		Demotions: c.demotions.Load(), Trims: c.trims.Load(),
	}
}

// Stats returns a snapshot of the pipeline's statistics. Counters are read
// one by one, so under concurrent use the snapshot is not atomic.
func (p *Pipeline) Stats() Stats {
	st := Stats{
		Backlog:             SinkFill{"backlog", p.backlog.Len(), p.backlog.Cap()},
		Cold:                SinkFill{"cold", p.cold.Len(), p.cold.Cap()},
		Screening:           int(p.screening.Load()),
		Promoting:           int(p.promoting.Load()),
		Screened:            p.ctr.screened.Load(),
		Promotions:          p.ctr.promotions.Load(),
		Transfers:           p.ctr.transfers.Load(),
		Demotions:           p.ctr.demotions.Load(),
		Trims:               p.ctr.trims.Load(),
		Mismatched:          p.ctr.mismatched.Load(),
		ScreenRejections:    map[string]uint64{},
		PromotionRejections: map[string]uint64{},
		ReservationFailures: map[string]uint64{},
		RowAdds:             p.ctr.rowAdds.Load(),
		RowRemoves:          p.ctr.rowRemoves.Load(),
		MemoryErrors:        p.ctr.memoryErrors.Load(),
		Held:                p.held.len(),
		Duplicates:          p.ctr.duplicates.Load(),
		Adopted:             p.ctr.adopted.Load(),
		Foreign:             p.ctr.foreign.Load(),
		KnownBad:            p.ctr.knownBad.Load(),
		ChangedCold:         p.ctr.changedCold.Load(),
		CallbackPanics:      p.ctr.callbackPanics.Load(),
		Refused:             p.ctr.refused.Load(),
		Reservations: ReservationStats{
			Released:       p.rel.released.Load(),
			ForeignClosed:  p.rel.foreignClosed.Load(),
			DoubleReleases: p.rel.doubleReleases.Load(),
		},
	}
	for k, name := range reserveFailureNames {
		if n := p.ctr.reserveFailures[k].Load(); n > 0 {
			st.ReservationFailures[name] = n
		}
	}
	if s := p.lastReserveErr.Load(); s != nil {
		st.LastReservationError = *s
	}
	for _, r := range stage.Reasons() {
		if n := p.ctr.screenRejects[r].Load(); n > 0 {
			st.ScreenRejections[r.String()] = n
		}
		if n := p.ctr.promotionRejects[r].Load(); n > 0 {
			st.PromotionRejections[r.String()] = n
		}
	}
	for _, s := range p.singles {
		st.Sinks = append(st.Sinks, sinkStats(s.name, s.kind, s.Len(), s.Cap(), s.Quota(), &s.d, int(s.pending.Load()), &s.c))
	}
	if n := p.network; n != nil {
		ss := sinkStats(n.Name(), KindNetwork, n.Len(), n.Cap(), n.pool.Quota(), &n.pool.d, int(n.pool.pending.Load()), &n.pool.c)
		ss.Leased = n.Leased()
		st.Sinks = append(st.Sinks, ss)
	}
	if ps := p.personal; ps != nil {
		st.Sinks = append(st.Sinks, sinkStats(ps.name, KindPersonal, ps.Len(), ps.Cap(), ps.Cap(), &ps.d, 0, &ps.c))
	}
	for _, g := range p.groups {
		ss := sinkStats(g.name, KindGroup, g.Len(), g.Cap(), g.Quota(), &g.d, int(g.pending.Load()), &g.c)
		ss.Group = &GroupStats{
			Size: g.profile.Size, Radius: g.profile.Radius, Places: g.Places(),
			Groups: g.g.groups.Load(), Players: g.g.players.Load(), Trimmed: g.g.trimmed.Load(),
			NoRoom: g.g.noRoom.Load(), Unfit: g.g.unfit.Load(), Backoff: int(g.backoff.Load()),
		}
		st.Sinks = append(st.Sinks, ss)
	}
	st.Changed = st.ChangedCold
	for _, s := range st.Sinks {
		st.Changed += s.Changed
	}
	if p.login != nil {
		st.LoginExhaustion = p.login.Exhaustion()
	}
	p.missMu.Lock()
	st.Misses = p.missTotal
	st.RecentMisses = make([]MissRecord, 0, len(p.misses))
	st.RecentMisses = append(st.RecentMisses, p.misses[p.missNext:]...)
	st.RecentMisses = append(st.RecentMisses, p.misses[:p.missNext]...)
	p.missMu.Unlock()
	return st
}
