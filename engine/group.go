package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pipeline"
)

// ReasonGroupTooLarge: a group teleport named more players than the
// region's group sink places at once (GroupSpec.MaxSize).
const ReasonGroupTooLarge = "group-too-large"

// SinkGroup names the group sink; its partitions are named SinkGroup,
// "/" and their profile ("group/8@8").
const SinkGroup = "group"

// MaxGroupPlayers bounds the players of one group teleport, whatever the
// region's configuration (pipeline.MaxGroupSize).
const MaxGroupPlayers = pipeline.MaxGroupSize

// GroupRequest is a group teleport request: one place per player, all
// within the region's group radius of their centre.
type GroupRequest struct {
	// Players name the players, each as Request.Player does, no name
	// twice: 1 to the region's GroupSpec.MaxSize of them. Required.
	Players []string
	// Wait, Done and Client are Request's: the bound of the wait on a
	// miss, a channel that ends it, who asked (every place counts
	// against HandoutLimits.PerClient).
	Wait   time.Duration
	Done   <-chan struct{}
	Client string
}

// GroupPlace is the place of one player of a group teleport: its player
// and its location, which is handed out, completed and cancelled (by its
// ID) as a single teleport's.
type GroupPlace struct {
	Player string `json:"player"`
	Location
}

// GroupTeleport places a group: it hands out one safe location per
// player of req, in the order given, all distinct and within the region's
// group radius of their centroid (GroupSpec.Radius), from the region's
// group sink (the places of one cached subspace, trimmed to the group;
// see package pipeline, Group placements). Each place is a handout of
// its own: the caller completes (Complete) or cancels (Cancel) each by
// its ID, or it expires, as a single teleport; a player's new handout
// replaces their old one (HandoutLimits.PerPlayer). On a miss it waits
// as Teleport does.
//
// It fails with ReasonInvalid for no players, a name Teleport would
// refuse, or a name given twice; ReasonNoSink when the region has no
// group sink; ReasonGroupTooLarge for more players than its profile
// holds; ReasonTooManyOpen when the handouts would pass
// HandoutLimits.Total or PerClient; and as Teleport does otherwise. Every
// failure is an *Error, and nothing is handed out.
func (e *Engine) GroupTeleport(ctx context.Context, region string, req GroupRequest) ([]GroupPlace, error) {
	start := time.Now()
	r := e.regions[region]
	if r == nil {
		return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonUnknownRegion}
	}
	if e.stopped() {
		return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonShutdown}
	}
	if err := checkPlayers(req.Players); err != nil {
		return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonInvalid, Err: err}
	}
	k := len(req.Players)
	switch most := r.pipe.MaxGroup(); {
	case most == 0:
		return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonNoSink}
	case k > most:
		return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonGroupTooLarge,
			Err: fmt.Errorf("%d players; the region places groups of at most %d", k, most)}
	}
	now := e.opts.Clock()
	if e.out.groupFull(req.Players) {
		return nil, e.out.refuse(r, SinkGroup, e.out.nextExpiry(now))
	}
	if full, retry := e.out.groupClientFull(req.Players, req.Client, now); full {
		return nil, e.out.refuse(r, SinkGroup, retry)
	}
	preq := pipeline.GroupRequest{Size: k, Paused: &r.paused, Exhausted: &r.exhaust.flag, Stop: e.stopping, Done: req.Done, Wait: req.Wait}
	if r.unique.Load() > 0 {
		preq.Admit = (*groupAdmit)(r)
	}
	hs, sink, err := r.pipe.TakeGroup(ctx, preq)
	if err != nil {
		if errors.Is(err, pipeline.ErrNoSink) || errors.Is(err, pipeline.ErrGroupSize) {
			// The region's sink went away or changed between the check
			// and the take: say so as the check would have.
			return nil, &Error{Region: region, Sink: SinkGroup, Reason: ReasonNoSink, Err: err}
		}
		return nil, takeError(r, Request{Player: req.Players[0]}, sink, err)
	}
	return e.handOutGroup(r, hs, sink, req, start)
}

// handOutGroup registers the places hs of a group as handed out to the
// players of req, in order. If one cannot be (ReasonTooManyOpen, or
// ReasonShutdown), none is: those registered are taken back, and every
// place given back to cold (or closed, at shutdown).
func (e *Engine) handOutGroup(r *Region, hs []*pipeline.Hot, sink string, req GroupRequest, start time.Time) ([]GroupPlace, error) {
	out := make([]GroupPlace, 0, len(hs))
	for i, h := range hs {
		id, reason, retry := e.addHandout(r, h, req.Players[i], req.Client, false)
		if reason == "" {
			out = append(out, GroupPlace{Player: req.Players[i], Location: Location{
				ID: id, Region: r.name, World: h.World, X: h.X, Y: h.Y, Z: h.Z,
				StandY: r.standY(h), Biome: biomeOf(h), Sink: sink,
			}})
			continue
		}
		for _, p := range out {
			if ho, ok := e.removeHandout(p.ID); ok {
				e.endUnserved(ho, reason)
			}
		}
		for _, h := range hs[i:] {
			e.endUnserved(handout{h: h, r: r}, reason)
		}
		if reason == ReasonTooManyOpen {
			return nil, e.out.refuse(r, sink, retry)
		}
		return nil, &Error{Region: r.name, Sink: sink, Reason: reason}
	}
	waited := time.Since(start)
	for i := range out {
		out[i].Waited = waited
		e.handedOut(out[i].Location)
		if marksChunks(r.unique.Load()) {
			r.queueMark(hs[i].Block())
		}
	}
	if c := r.served[sink]; c != nil {
		c.Add(uint64(len(out)))
	}
	r.latency.Record(waited)
	return out, nil
}

// endUnserved ends a place of a group that was not handed out after all:
// given back to cold, its spot released, unless the engine is shutting
// down (reason ReasonShutdown), when it is only closed.
func (e *Engine) endUnserved(ho handout, reason string) {
	if reason == ReasonShutdown {
		ho.h.Close()
		return
	}
	e.giveBack(ho)
}

// checkPlayers reports what is wrong with the players of a group, or nil:
// none, more than MaxGroupPlayers, a name checkPlayer refuses, or a name
// given twice.
func checkPlayers(players []string) error {
	switch {
	case len(players) == 0:
		return errors.New("no players")
	case len(players) > MaxGroupPlayers:
		return fmt.Errorf("%d players, more than %d", len(players), MaxGroupPlayers)
	}
	seen := make(map[string]bool, len(players))
	for i, p := range players {
		if err := checkPlayer(p); err != nil {
			return fmt.Errorf("player %d: %w", i+1, err)
		}
		if seen[p] {
			return fmt.Errorf("player %q named twice", p)
		}
		seen[p] = true
	}
	return nil
}

// groupAdmit is a Region as the pipeline.GroupAdmitter of unique
// placement.
type groupAdmit Region

// AdmitGroup implements pipeline.GroupAdmitter: r.admitGroup.
func (g *groupAdmit) AdmitGroup(hs []*pipeline.Hot) bool { return (*Region)(g).admitGroup(hs) }

// admitGroup is the unique-placement admission of a group's places, all
// or none: their chunk must not be marked in memory, and no place closer
// than the radius to any of them may have been handed out since they
// were cached (the places of the group may be closer to one another).
// Check and record are one step. Refused places are counted in
// UniqueStats.Dropped (the pipeline closes them).
func (r *Region) admitGroup(hs []*pipeline.Hot) bool {
	radius := r.unique.Load()
	if radius <= 0 || len(hs) == 0 {
		return true
	}
	now := r.e.opts.Clock()
	bs := make([]geom.Block, len(hs))
	for i, h := range hs {
		bs[i] = h.Block()
	}
	if r.mem.IsBad(hs[0].Index) || !r.placed.claimAll(bs, radius, now, r.markSince(now)) {
		r.ctr.dropped.Add(uint64(len(hs)))
		return false
	}
	return true
}

// groupExclude is the group sink's GroupConfig.Exclude: the columns of c
// unique placement keeps free (closer than the radius to a spot handed
// out while its mark lasts).
func (r *Region) groupExclude(c geom.Chunk) pipeline.ColumnSet {
	radius := r.unique.Load()
	if radius <= 0 {
		return pipeline.ColumnSet{}
	}
	return pipeline.ColumnSet(r.placed.excluded(c, radius, r.markSince(r.e.opts.Clock())))
}
