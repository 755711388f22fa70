package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rtpengine/rtp/pipeline"
)

// Reasons a teleport fails, in Error.Reason.
const (
	// ReasonUnknownRegion: no region of that name is configured.
	ReasonUnknownRegion = "unknown-region"
	// ReasonUnknownSink: the region has no hot sink of that name.
	ReasonUnknownSink = "unknown-sink"
	// ReasonNoLocation: no location became ready before the request's
	// context ended.
	ReasonNoLocation = "no-location"
	// ReasonShutdown: the engine is shutting down.
	ReasonShutdown = "shutdown"
	// ReasonUnknownID: Complete was given an ID not handed out, or one
	// already completed.
	ReasonUnknownID = "unknown-id"
)

// Error is the error of a failed teleport or completion: the region, the
// reason (one of the Reason constants) and, when there is one, the
// underlying error (the context's, for ReasonNoLocation).
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
	// Player names the player (for logs; personal sinks are not wired in
	// this first cut).
	Player string
	// Sink names the hot sink to take from. Default "": the general sink.
	Sink string
	// Token is a network token: the teleport redeems its lease.
	Token string
}

// Location is a landing place handed to a player: the block column X, Z,
// the landing y (the block the player's feet occupy) in World. Its chunk
// stays reserved until Complete(ID).
type Location struct {
	ID     uint64 `json:"id"`
	Region string `json:"region"`
	World  string `json:"world"`
	X      int64  `json:"x"`
	Y      int64  `json:"y"`
	Z      int64  `json:"z"`
	// Biome is the biome of the landing column.
	Biome string `json:"biome"`
	// Sink names the sink that served the location.
	Sink string `json:"sink"`
	// Waited is how long the request waited for it.
	Waited time.Duration `json:"waited"`
}

// Teleport hands out a safe, verified location of region. On a miss it
// waits for the region's next pulse and tries again, until ctx ends
// (ReasonNoLocation) or the engine shuts down (ReasonShutdown). Every
// failure is an *Error. The caller calls Complete with the location's ID
// once the player has moved (or gave up).
func (e *Engine) Teleport(ctx context.Context, region string, req Request) (Location, error) {
	r := e.regions[region]
	if r == nil {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonUnknownRegion}
	}
	s := r.sink(req.Sink)
	if s == nil {
		return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonUnknownSink}
	}
	for first := true; ; first = false {
		select {
		case <-e.stopping:
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonShutdown}
		default:
		}
		// Wait on the pulse signal taken before the poll, so a pulse that
		// ends between the miss and the wait is not lost.
		next := r.waitPulse()
		// A retry takes only from a sink that holds something, so that a
		// waiting request counts once in the sink's demand and misses.
		if h, ok := e.take(s, first); ok {
			id := e.nextID.Add(1)
			e.outMu.Lock()
			select {
			case <-e.stopping:
				e.outMu.Unlock()
				h.Close()
				return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonShutdown}
			default:
			}
			e.out[id] = h
			e.outMu.Unlock()
			return Location{ID: id, Region: region, World: h.World, X: h.X, Y: h.Y, Z: h.Z}, nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonNoLocation, Err: context.Cause(ctx)}
		case <-e.stopping:
			return Location{}, &Error{Region: region, Sink: req.Sink, Reason: ReasonShutdown}
		}
	}
}

// take takes from s: always on a request's first try, and on a retry only
// when s is not empty.
func (e *Engine) take(s *pipeline.Sink, first bool) (*pipeline.Hot, bool) {
	if !first && s.Len() == 0 {
		return nil, false
	}
	return s.Take()
}

// Complete closes the reservation of a location handed out by Teleport.
// An ID not handed out, or completed already, is an *Error of
// ReasonUnknownID.
func (e *Engine) Complete(id uint64) error {
	e.outMu.Lock()
	h, ok := e.out[id]
	delete(e.out, id)
	e.outMu.Unlock()
	if !ok {
		return &Error{Reason: ReasonUnknownID, Err: fmt.Errorf("id %d", id)}
	}
	h.Close()
	return nil
}
