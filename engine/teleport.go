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
	// RetryAfter, when positive, is when the call can succeed at the
	// latest (ReasonTooManyOpen: when the oldest handout in the way ends
	// its lifespan).
	RetryAfter time.Duration
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
	//	"general"   the general sink
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
	// Wait, when positive, bounds how long a miss waits for a location,
	// beside ctx; the teleport then fails with ReasonNoLocation. Unlike a
	// deadline on ctx it costs nothing when a location is ready. Default
	// 0: ctx alone bounds the wait.
	Wait time.Duration
	// Done, when closed, ends a waiting teleport with ReasonShutdown, as
	// the engine's Close does: a caller's own shutdown (the HTTP server's
	// drain). Default nil.
	Done <-chan struct{}
	// Client names who asked (the HTTP server passes the remote address):
	// its open handouts are bounded by HandoutLimits.PerClient. Default
	// "": not counted.
	Client string
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
// in the sink it waits on, until ctx ends or Request.Wait has passed
// (ReasonNoLocation), or the engine shuts down or Request.Done closes
// (ReasonShutdown); a region whose scan is paused fails at once with
// ReasonPaused instead of waiting, and an exhausted one (no safe place
// left, see ExhaustionStats) with ReasonExhausted. Every failure is an
// *Error. The caller calls Complete with the location's ID once the
// player has moved, or Cancel if the player gave up.
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
		return Location{}, e.out.refuse(r, req.Sink, e.out.nextExpiry(e.opts.Clock()))
	}
	if req.Token != "" {
		return e.redeem(r, req.Token, req.Player, start)
	}
	if full, retry := e.out.clientFull(req.Player, req.Client, e.opts.Clock()); full {
		return Location{}, e.out.refuse(r, req.Sink, retry)
	}
	preq := pipeline.Request{Player: req.Player, Sink: req.Sink, Paused: &r.paused, Exhausted: &r.exhaust.flag, Stop: e.stopping, Done: req.Done, Wait: req.Wait}
	if r.unique.Load() > 0 {
		preq.Admit = (*uniqueAdmit)(r)
	}
	h, sink, err := r.pipe.Take(ctx, preq)
	if err != nil {
		return Location{}, takeError(r, req, sink, err)
	}
	return e.handOut(r, h, sink, req.Player, req.Client, start)
}

// takeError is the *Error of a failed pipeline.Take of req in r; sink is
// the name Take reported.
func takeError(r *Region, req Request, sink string, err error) error {
	if req.Token != "" {
		if errors.Is(err, pipeline.ErrNoSink) {
			return &Error{Region: r.name, Sink: SinkNetwork, Reason: ReasonNoSink}
		}
		return networkError(r.name, err)
	}
	e := &Error{Region: r.name, Sink: sink}
	switch {
	case errors.Is(err, pipeline.ErrNoSink):
		e.Reason = ReasonNoSink
	case errors.Is(err, pipeline.ErrNoQueue):
		e.Reason, e.Err = ReasonNoSink, fmt.Errorf("player %q has no open queue", req.Player)
	case errors.Is(err, pipeline.ErrTokenRequired):
		e.Reason, e.Err = ReasonInvalid, errors.New("the network sink serves by token: pass Token")
	case errors.Is(err, pipeline.ErrUnknownSink):
		e.Reason = ReasonUnknownSink
	case errors.Is(err, pipeline.ErrPaused):
		e.Reason = ReasonPaused
	case errors.Is(err, pipeline.ErrExhausted):
		e.Reason, e.Err = ReasonExhausted, r.exhaustedError()
	case errors.Is(err, pipeline.ErrClosed):
		e.Reason = ReasonShutdown
	default:
		e.Reason, e.Err = ReasonNoLocation, err
	}
	return e
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

// uniqueAdmit is a Region as the pipeline.Admitter of unique placement
// (a conversion of the region's pointer: it allocates nothing).
type uniqueAdmit Region

// Admit implements pipeline.Admitter: r.admit.
func (u *uniqueAdmit) Admit(h *pipeline.Hot) bool { return (*Region)(u).admit(h) }

// admit is the pipeline.Request.Admit of unique placement: it decides
// whether the entry h, just taken from a sink, may be handed out, and if
// so records its spot: its chunk must not be marked in memory, and no
// place closer than the radius may have been handed out since it was
// cached. An entry it refuses is counted in UniqueStats.Dropped (the
// pipeline closes it).
func (r *Region) admit(h *pipeline.Hot) bool {
	radius := r.unique.Load()
	if radius <= 0 {
		return true
	}
	now := r.e.opts.Clock()
	if r.mem.IsBad(h.Index) || !r.placed.claim(h.Block(), radius, now, r.markSince(now)) {
		r.ctr.dropped.Add(1)
		return false
	}
	return true
}

// markSince returns the time before which placement marks have expired.
func (r *Region) markSince(now time.Time) time.Time {
	return now.Add(-r.e.ttl(memory.CauseUniquePlacement, ""))
}

// handOut registers h as handed out to player and returns its location.
// It fails with ReasonTooManyOpen (h goes back to cold) or ReasonShutdown
// (h is closed); see addHandout.
func (e *Engine) handOut(r *Region, h *pipeline.Hot, sink, player, client string, start time.Time) (Location, error) {
	return e.handOutAs(r, h, sink, player, client, false, start)
}

// handOutAs is handOut; force hands h out past HandoutLimits.Total (a
// redeemed token's location: the token is used up).
func (e *Engine) handOutAs(r *Region, h *pipeline.Hot, sink, player, client string, force bool, start time.Time) (Location, error) {
	id, reason, retry := e.addHandout(r, h, player, client, force)
	switch reason {
	case "":
	case ReasonTooManyOpen:
		e.giveBack(handout{h: h, r: r})
		return Location{}, e.out.refuse(r, sink, retry)
	default:
		h.Close()
		return Location{}, &Error{Region: r.name, Sink: sink, Reason: reason}
	}
	loc := Location{
		ID: id, Region: r.name, World: h.World, X: h.X, Y: h.Y, Z: h.Z,
		StandY: r.standY(h), Biome: biomeOf(h), Sink: sink,
	}
	if c := r.served[sink]; c != nil {
		c.Add(1)
	}
	if marksChunks(r.unique.Load()) {
		r.queueMark(h.Block())
	}
	loc.Waited = time.Since(start)
	r.latency.Record(loc.Waited)
	e.handedOut(loc)
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
