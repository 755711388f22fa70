package pipeline

import (
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// Candidate is a backlog entry: a spiral index drawn from the region's
// memory table and the chunk it maps to. It has not been screened.
type Candidate struct {
	Index int64
	Chunk geom.Chunk
}

// Location is a verified landing place: a cold entry. X and Z are the block
// column, Y the landing y (the block the player's feet occupy), World the
// world's name and Index the spiral index of its chunk in the region's
// memory table (where a rejection of the place is recorded). A Location
// holds no reservation.
type Location struct {
	World   string
	X, Y, Z int64
	Index   int64
}

// Block returns the column of l.
func (l Location) Block() geom.Block { return geom.Block{X: l.X, Z: l.Z} }

// Chunk returns the chunk of l.
func (l Location) Chunk() geom.Chunk { return l.Block().Chunk() }

// verifyLocation is l as verifiers see it.
func (l Location) verifyLocation() verify.Location {
	return verify.Location{World: l.World, X: l.X, Y: l.Y, Z: l.Z}
}

// Hot is a hot entry: a Location whose chunk is held resident by Res.
//
// While a Hot sits in a sink, the sink owns it and only the sink's
// OnDispose (or a demotion) closes Res. An entry handed out by Take or
// Redeem belongs to the caller, who calls Close once the player has moved
// (or gave up). Since is when the location became hot; Arrived is when it
// entered the sink that holds it (transfers reset it), which the allocator
// compares with Options.MinResidence.
//
// A Hot is not safe for concurrent mutation; its owner alone touches it.
// Close is safe to call more than once.
type Hot struct {
	Location
	Res     *world.Reservation
	Since   time.Time
	Arrived time.Time

	released atomic.Bool
	ctr      *releaseCounters
}

// Close releases the entry's reservation. Only the first call closes it.
func (h *Hot) Close() { h.release(false) }

// live reports whether h holds an open reservation. It never dereferences a
// nil reservation.
func (h *Hot) live() bool { return h != nil && h.Res != nil && !h.Res.Closed() }

// release closes the reservation once. stageHeld says the pipeline still
// owned the entry (disposal or demotion): its reservation must then still
// be open, and a reservation found closed is counted as a foreign close.
func (h *Hot) release(stageHeld bool) {
	if h == nil {
		return
	}
	if !h.released.CompareAndSwap(false, true) {
		if h.ctr != nil {
			h.ctr.doubleReleases.Add(1)
		}
		return
	}
	if h.ctr != nil {
		h.ctr.released.Add(1)
		if stageHeld && h.Res.Closed() {
			h.ctr.foreignClosed.Add(1)
		}
	}
	if h.Res != nil {
		_ = h.Res.Close()
	}
}

// endHot is the OnDispose hook of every hot stage: the entry's
// reservation is closed and its location has left the pipeline.
func (p *Pipeline) endHot(h *Hot) {
	h.release(true)
	if h != nil {
		p.held.release(h.Index)
	}
}

// releaseCounters count the reservation closes of one pipeline.
type releaseCounters struct {
	released       atomic.Uint64
	foreignClosed  atomic.Uint64
	doubleReleases atomic.Uint64
}
