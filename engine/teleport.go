package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/world"
)

// Reasons a teleport fails, in Error.Reason.
const (
	// ReasonUnknownRegion: no region of that name is configured.
	ReasonUnknownRegion = "unknown-region"
	// ReasonUnknownSink: the region has no hot sink of that name.
	ReasonUnknownSink = "unknown-sink"
	// ReasonNoLocation: no location became ready before the request's
	// context ended (or, for Reserve, none was ready).
	ReasonNoLocation = "no-location"
	// ReasonShutdown: the engine is shutting down.
	ReasonShutdown = "shutdown"
	// ReasonUnknownID: Complete or Cancel was given an ID not handed out,
	// or one already closed (completed, cancelled, or past its lifespan).
	//
	// IDs are random (see MaxID), so an ID from before a restart, or one
	// made up, names no open handout of this run: Complete or Cancel of
	// it is this error and never closes another player's handout.
	ReasonUnknownID = "unknown-id"
)

// Names of the sinks a region's configuration gives them.
const (
	SinkGeneral  = "general"
	SinkLogin    = "login"
	SinkNetwork  = "network"
	SinkPersonal = "personal"
)

// Error is the error of a failed call: the region, the sink, the reason
// (one of the Reason constants) and, when there is one, the underlying
// error (the context's, for ReasonNoLocation).
type Error struct {
	Region string
	Sink   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	s := "engine"
	if e.Region != "" {
		s += fmt.Sprintf(": region %q", e.Region)
	}
	if e.Sink != "" {
		s += fmt.Sprintf(" sink %q", e.Sink)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Request is a teleport request.
type Request struct {
	// Player names the player: required, valid UTF-8, at most
	// MaxPlayerLen characters (runes, as the HTTP server counts them).
	// The player holds at most HandoutLimits.PerPlayer open handouts: a
	// new request replaces the old one (see HandoutLimits).
	Player string
	// Sink chooses where the location comes from:
	//
	//	""          the player's personal queue when it holds a location,
	//	            else the general sink (waiting on it)
	//	"general"   the general sink; an extra sink by its name
	//	"login"     the login reserve; when it is empty, the general sink
	//	            (waiting on it)
	//	"personal"  the player's personal queue only, waiting on it (the
	//	            queue must be open: OpenQueue)
	//
	// A network location is taken with Token, not Sink. Default "".
	Sink string
	// Token is a network token: the teleport redeems its lease, without
	// waiting (Sink is ignored).
	Token string
}

// Location is a landing place handed to a player: the block column X, Z,
// the landing y (the block the player's feet occupy) in World. Its chunk
// stays reserved until Complete(ID), Cancel(ID) or the end of its lifespan
// (Options.HandoutLifespan).
type Location struct {
	ID     uint64 `json:"id"`
	Region string `json:"region"`
	World  string `json:"world"`
	X      int64  `json:"x"`
	Y      int64  `json:"y"`
	Z      int64  `json:"z"`
	// StandY is the height the player's feet rest at: Y above a full
	// block, lower above a lower top face (Y-0.5 above a bottom slab; see
	// safety.Checker.StandY). Teleporting to Y is safe too: the player
	// then drops less than a block.
	StandY float64 `json:"standY"`
	// Biome is the biome of the landing column ("minecraft:plains"), read
	// from the reserved chunk; "" when it could not be read.
	Biome string `json:"biome"`
	// Sink names the sink that served the location.
	Sink string `json:"sink"`
	// Waited is how long the request took, from the call to the answer.
	Waited time.Duration `json:"waited"`
}

// Teleport hands out a safe, verified location of region (see Request for
// the sink it comes from). On a miss it waits for the next entry that lands
// in the sink it waits on, until ctx ends (ReasonNoLocation) or the engine
// shuts down (ReasonShutdown); a region whose scan is paused fails at once
// with ReasonPaused instead of waiting. Every failure is an *Error. The
// caller calls Complete with the location's ID once the player has moved,
// or Cancel if the player gave up.
//
// A hit takes no lock but one shard of the handout table (and the
// sink's lock-free ring), and allocates nothing beyond the amortized growth
// of that table and of the location table's write queue (see
// BenchmarkTeleportHot).
func (e *Engine) Teleport(ctx context.Context, region string, req Request) (Location, error) {
	start := time.Now()
	r := e.regions[region]
	if r == nil {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonUnknownRegion}
	}
	if e.stopped() {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonShutdown}
	}
	if err := checkPlayer(req.Player); err != nil {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonInvalid, Err: err}
	}
	if e.out.full(req.Player) {
		return Location{}, e.out.refuse(r, req.Sink)
	}
	if req.Token != "" {
		return e.redeem(r, req.Token, req.Player, start)
	}
	switch req.Sink {
	case "":
		if ps := r.pipe.Personal(); ps != nil && ps.PlayerLen(req.Player) > 0 {
			src := r.personalSource(req.Player)
			if h, ok := e.take(r, &src); ok {
				return e.handOut(r, h, src.name, req.Player, start)
			}
		}
		return e.serve(ctx, r, r.sinkSource(r.pipe.General()), req.Player, start)
	case SinkLogin, r.names.login:
		l := r.pipe.Login()
		if l == nil {
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonNoSink}
		}
		for {
			h, ok := l.Take()
			if !ok {
				break
			}
			if r.admit(h) {
				return e.handOut(r, h, l.Name(), req.Player, start)
			}
			r.drop(h)
		}
		return e.serve(ctx, r, r.sinkSource(r.pipe.General()), req.Player, start)
	case SinkPersonal, r.names.personal:
		ps := r.pipe.Personal()
		if ps == nil {
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonNoSink}
		}
		if !r.queueOpen(req.Player) {
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonNoSink,
				Err: fmt.Errorf("player %q has no open queue", req.Player)}
		}
		return e.serve(ctx, r, r.personalSource(req.Player), req.Player, start)
	case SinkNetwork, r.names.network:
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonInvalid,
			Err: errors.New("the network sink serves by token: pass Token")}
	}
	s := r.sink(req.Sink)
	if s == nil {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonUnknownSink}
	}
	return e.serve(ctx, r, r.sinkSource(s), req.Player, start)
}

// checkPlayer reports what is wrong with a player name, or nil.
func checkPlayer(p string) error {
	switch {
	case p == "":
		return errors.New("empty player name")
	case !utf8.ValidString(p):
		return errors.New("player name is not valid UTF-8")
	case len(p) > MaxPlayerLen && utf8.RuneCountInString(p) > MaxPlayerLen:
		return fmt.Errorf("player name of %d characters, longer than %d", utf8.RuneCountInString(p), MaxPlayerLen)
	}
	return nil
}

// source is where a teleport takes from and waits on: an unleased sink,
// or one player's personal queue.
type source struct {
	name     string
	sink     *pipeline.Sink
	personal *pipeline.PersonalSink
	player   string
	sig      *signal
}

func (r *Region) sinkSource(s *pipeline.Sink) source {
	return source{name: s.Name(), sink: s, sig: r.signals[s.Name()]}
}

func (r *Region) personalSource(player string) source {
	ps := r.pipe.Personal()
	return source{name: ps.Name(), personal: ps, player: player, sig: r.signals[ps.Name()]}
}

func (s *source) take() (*pipeline.Hot, bool) {
	if s.personal != nil {
		return s.personal.Take(s.player)
	}
	return s.sink.Take()
}

func (s *source) ready() bool {
	if s.personal != nil {
		return s.personal.PlayerLen(s.player) > 0
	}
	return s.sink.Len() > 0
}

// queueOpen reports whether player has an open personal queue.
func (r *Region) queueOpen(player string) bool {
	ps := r.pipe.Personal()
	return ps != nil && ps.IsOpen(player)
}

// serve takes from src, waiting for entries to land in it until ctx
// ends. A retry takes only when src holds something, so that a waiting
// request counts once in the sink's demand and misses.
func (e *Engine) serve(ctx context.Context, r *Region, src source, player string, start time.Time) (Location, error) {
	for first := true; ; first = false {
		if first || src.ready() {
			if h, ok := e.take(r, &src); ok {
				return e.handOut(r, h, src.name, player, start)
			}
		}
		// Take the signal before looking again, so that an entry landing
		// (or a pause) between the look and the wait is not lost.
		next := src.sig.wait()
		if src.ready() {
			continue
		}
		if r.paused.Load() {
			return Location{}, &Error{Region: r.name, Sink: src.name, Reason: ReasonPaused}
		}
		select {
		case <-next:
		case <-ctx.Done():
			return Location{}, &Error{Region: r.name, Sink: src.name, Reason: ReasonNoLocation, Err: context.Cause(ctx)}
		case <-e.stopping:
			return Location{}, &Error{Region: r.name, Sink: src.name, Reason: ReasonShutdown}
		}
	}
}

// take takes an entry from src. With unique placement on, entries that
// admit refuses (inside an area marked since they were cached, or too
// close to a place handed out since) are closed and skipped.
func (e *Engine) take(r *Region, src *source) (*pipeline.Hot, bool) {
	for {
		h, ok := src.take()
		if !ok {
			return nil, false
		}
		if !r.admit(h) {
			r.drop(h)
			continue
		}
		return h, true
	}
}

// admit decides whether the entry h, just taken from a sink, may be
// handed out under unique placement, and if so records its spot: its
// chunk must not be marked in memory, and no place closer than the
// radius may have been handed out since it was cached. Without unique
// placement it admits everything.
func (r *Region) admit(h *pipeline.Hot) bool {
	radius := r.unique.Load()
	if radius <= 0 {
		return true
	}
	if r.mem.IsBad(h.Index) {
		return false
	}
	now := r.e.opts.Clock()
	return r.placed.claim(h.Block(), radius, now, r.markSince(now))
}

// markSince returns the time before which placement marks have expired.
func (r *Region) markSince(now time.Time) time.Time {
	return now.Add(-r.e.ttl(memory.CauseUniquePlacement, ""))
}

// drop closes an entry taken from a sink that admit refused.
func (r *Region) drop(h *pipeline.Hot) {
	h.Close()
	r.ctr.dropped.Add(1)
}

// handOut registers h as handed out to player and returns its location.
// It fails with ReasonTooManyOpen (h goes back to cold) or ReasonShutdown
// (h is closed); see addHandout.
func (e *Engine) handOut(r *Region, h *pipeline.Hot, sink, player string, start time.Time) (Location, error) {
	return e.handOutAs(r, h, sink, player, false, start)
}

// handOutAs is handOut; force hands h out past HandoutLimits.Total (a
// redeemed token's location: the token is used up).
func (e *Engine) handOutAs(r *Region, h *pipeline.Hot, sink, player string, force bool, start time.Time) (Location, error) {
	id, reason := e.addHandout(r, h, player, force)
	switch reason {
	case "":
	case ReasonTooManyOpen:
		e.giveBack(handout{h: h, r: r})
		return Location{}, e.out.refuse(r, sink)
	default:
		h.Close()
		return Location{}, &Error{Region: r.name, Sink: sink, Reason: reason}
	}
	loc := Location{
		ID: id, Region: r.name, World: h.World, X: h.X, Y: h.Y, Z: h.Z,
		StandY: r.standY(h), Biome: biomeOf(h), Sink: sink,
	}
	e.mapFeed(r, loc)
	if c := r.served[sink]; c != nil {
		c.Add(1)
	}
	if marksChunks(r.unique.Load()) {
		r.queueMark(h.Block())
	}
	loc.Waited = time.Since(start)
	r.latency.Record(loc.Waited)
	return loc, nil
}

// standY returns the height h's player stands at, read from its reserved
// chunk, or h.Y when the reservation is closed.
func (r *Region) standY(h *pipeline.Hot) float64 {
	ch := h.Res.Chunk()
	if ch == nil {
		return float64(h.Y)
	}
	x, z := h.Block().Local()
	return r.checker.StandY(ch, x, int(h.Y), z)
}

// biomeOf returns the biome name of h's landing column, read from its
// reserved chunk, or "" when the reservation is closed.
func biomeOf(h *pipeline.Hot) string {
	ch := h.Res.Chunk()
	if ch == nil {
		return ""
	}
	x, z := h.Block().Local()
	return biomeName(ch.Column(x, z).Biome)
}

// maxCachedBiome bounds the biome IDs biomeName caches (IDs are dense:
// a world has a few hundred biomes at most).
const maxCachedBiome = 4096

// biomeNames caches world.Biomes' names by ID, copy-on-write, so that the
// teleport path reads a biome name without the interner's lock.
var biomeNames atomic.Pointer[[]string]

// biomeName returns the name of id, as id.String() does.
func biomeName(id world.BiomeID) string {
	if p := biomeNames.Load(); p != nil && int(id) < len(*p) && (*p)[id] != "" {
		return (*p)[id]
	}
	name := id.String()
	if name == "" || id >= maxCachedBiome {
		return name
	}
	for {
		old := biomeNames.Load()
		var names []string
		if old != nil {
			names = slices.Clone(*old)
		}
		if int(id) >= len(names) {
			names = append(names, make([]string, int(id)+1-len(names))...)
		}
		names[id] = name
		if biomeNames.CompareAndSwap(old, &names) {
			return name
		}
	}
}

// Complete closes the reservation of a location handed out by Teleport or
// Redeem: the player has arrived. An ID not handed out, or closed already,
// is an *Error of ReasonUnknownID.
func (e *Engine) Complete(id uint64) error {
	ho, ok := e.removeHandout(id)
	if !ok {
		return &Error{Reason: ReasonUnknownID, Err: fmt.Errorf("id %d", id)}
	}
	ho.h.Close()
	ho.r.ctr.completed.Add(1)
	return nil
}

// Cancel closes the reservation of a location handed out by Teleport or
// Redeem whose player gave up, and gives the location, still valid, back
// to its region's cold stage, from where it is promoted again. With
// unique placement on, its spot is released: it may be handed out again.
// An ID not handed out, or closed already, is an *Error of
// ReasonUnknownID.
func (e *Engine) Cancel(id uint64) error {
	ho, ok := e.removeHandout(id)
	if !ok {
		return &Error{Reason: ReasonUnknownID, Err: fmt.Errorf("id %d", id)}
	}
	ho.r.ctr.cancelled.Add(1)
	e.giveBack(ho)
	return nil
}
