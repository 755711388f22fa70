package engine

import (
	"iter"
	"math/bits"
	"sync"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// maxColumnRadius is the largest unique-placement radius, in blocks, that
// is kept column by column. Past it the region keeps only the exact spots
// handed out column by column, and spaces places by whole chunks (every
// chunk whose centre lies within the radius is marked in memory), since a
// check would otherwise visit thousands of chunks.
const maxColumnRadius = 64

// placements remembers the exact columns a region handed out, so that no
// spot is handed out twice and, for radii up to maxColumnRadius, none
// closer than the radius to another while the mark lasts.
//
// Design: one 256-bit set per chunk that holds a handed-out column, with
// the time of its latest hand-out. A chunk's set is forgotten as a whole
// once its latest hand-out is older than the mark's lifetime (so an early
// mark lives somewhat longer than its TTL, never shorter). The memory is
// bounded by the region's chunks (40 bytes each at most) whatever the
// number of hand-outs; a per-place list with its own expiry would grow
// with the hand-outs instead (a thousand a second, kept for days).
// Rejected: marking each handed-out chunk in the spatial memory, which
// is what large radii still do: a chunk holds 256 columns, so a small
// region would run dry after as many hand-outs as it has chunks.
//
// The zero value is not usable: use newPlacements. Safe for concurrent
// use: one mutex, held for a few map lookups per call.
type placements struct {
	// onClaim, when set, journals every spot claimed, outside the lock
	// (set before the region runs, read-only afterwards).
	onClaim func(b geom.Block, at time.Time)

	mu sync.Mutex // protects the following fields
	m  map[geom.Chunk]*placedChunk
}

type placedChunk struct {
	cols [4]uint64 // bit z*16+x: that column was handed out
	last time.Time // the latest hand-out into the chunk
}

func newPlacements() *placements {
	return &placements{m: map[geom.Chunk]*placedChunk{}}
}

func (pc *placedChunk) has(i int) bool { return pc.cols[i>>6]&(1<<(i&63)) != 0 }

// spots yields the indices z*16+x of the columns handed out, in order.
func (pc *placedChunk) spots() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w, word := range pc.cols {
			for word != 0 {
				if !yield(w<<6 | bits.TrailingZeros64(word)) {
					return
				}
				word &= word - 1
			}
		}
	}
}

// columnIndex returns the index of block b's column in its chunk.
func columnIndex(b geom.Block) int {
	x, z := b.Local()
	return z*world.ChunkSize + x
}

// span returns the range of chunks whose columns can lie closer than
// radius to a column of chunk c (or to column b when c is b's chunk).
func span(lo, hi geom.Block, radius int64) (geom.Chunk, geom.Chunk) {
	d := radius - 1
	if radius > maxColumnRadius {
		d = 0
	}
	return geom.Block{X: lo.X - d, Z: lo.Z - d}.Chunk(), geom.Block{X: hi.X + d, Z: hi.Z + d}.Chunk()
}

// nearLocked reports whether a column closer than radius to b was handed
// out (b itself included), looking only at marks newer than since. p.mu
// is held.
func (p *placements) nearLocked(b geom.Block, radius int64, since time.Time) bool {
	if radius > maxColumnRadius {
		pc := p.m[b.Chunk()]
		return pc != nil && !pc.last.Before(since) && pc.has(columnIndex(b))
	}
	lo, hi := span(b, b, radius)
	r2 := radius * radius
	for cz := lo.Z; cz <= hi.Z; cz++ {
		for cx := lo.X; cx <= hi.X; cx++ {
			c := geom.Chunk{X: cx, Z: cz}
			pc := p.m[c]
			if pc == nil || pc.last.Before(since) {
				continue
			}
			o := c.Origin()
			for i := range pc.spots() {
				dx := o.X + int64(i%world.ChunkSize) - b.X
				dz := o.Z + int64(i/world.ChunkSize) - b.Z
				if dx*dx+dz*dz < r2 {
					return true
				}
			}
		}
	}
	return false
}

// claim records b as handed out unless a column closer than radius to it
// was handed out since the given time: it reports whether b was free.
// Check and record are one step, so two requests never both get places
// closer than the radius.
func (p *placements) claim(b geom.Block, radius int64, now, since time.Time) bool {
	p.mu.Lock()
	if p.nearLocked(b, radius, since) {
		p.mu.Unlock()
		return false
	}
	p.setLocked(b, now, since)
	p.mu.Unlock()
	if p.onClaim != nil {
		p.onClaim(b, now)
	}
	return true
}

// claimAll records every block of bs as handed out unless a column closer
// than radius to one of them was handed out since the given time (the
// blocks of bs are not measured against one another): it reports whether
// all were free. Check and record are one step, as in claim.
func (p *placements) claimAll(bs []geom.Block, radius int64, now, since time.Time) bool {
	p.mu.Lock()
	for _, b := range bs {
		if p.nearLocked(b, radius, since) {
			p.mu.Unlock()
			return false
		}
	}
	for _, b := range bs {
		p.setLocked(b, now, since)
	}
	p.mu.Unlock()
	if p.onClaim != nil {
		for _, b := range bs {
			p.onClaim(b, now)
		}
	}
	return true
}

// setLocked records b as handed out at the given time. p.mu is held.
func (p *placements) setLocked(b geom.Block, at, since time.Time) {
	c := b.Chunk()
	pc := p.m[c]
	if pc == nil || pc.last.Before(since) {
		pc = &placedChunk{}
		p.m[c] = pc
	}
	i := columnIndex(b)
	pc.cols[i>>6] |= 1 << (i & 63)
	if at.After(pc.last) {
		pc.last = at
	}
}

// restore records b as handed out at the given time, as a journal of the
// spots replays it at start: whatever was handed out near it, and without
// onClaim. A spot older than since is ignored.
func (p *placements) restore(b geom.Block, at, since time.Time) {
	if at.Before(since) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(b, at, since)
}

// release forgets that b was handed out (its teleport was cancelled).
func (p *placements) release(b geom.Block) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.m[b.Chunk()]
	if pc == nil {
		return
	}
	i := columnIndex(b)
	pc.cols[i>>6] &^= 1 << (i & 63)
	if pc.cols == [4]uint64{} {
		delete(p.m, b.Chunk())
	}
}

// excluded returns the columns of chunk c closer than radius to a column
// handed out since the given time, as a set of bits z*16+x: what a screen
// of c must skip.
func (p *placements) excluded(c geom.Chunk, radius int64, since time.Time) [4]uint64 {
	var out [4]uint64
	o := c.Origin()
	last := geom.Block{X: o.X + world.ChunkSize - 1, Z: o.Z + world.ChunkSize - 1}
	lo, hi := span(o, last, radius)
	r := radius
	if radius > maxColumnRadius {
		r = 1 // the exact spots only
	}
	r2 := r * r
	p.mu.Lock()
	defer p.mu.Unlock()
	for cz := lo.Z; cz <= hi.Z; cz++ {
		for cx := lo.X; cx <= hi.X; cx++ {
			n := geom.Chunk{X: cx, Z: cz}
			pc := p.m[n]
			if pc == nil || pc.last.Before(since) {
				continue
			}
			no := n.Origin()
			for i := range pc.spots() {
				// The handed-out column, in c's local coordinates.
				px := no.X + int64(i%world.ChunkSize) - o.X
				pz := no.Z + int64(i/world.ChunkSize) - o.Z
				for z := max(pz-r+1, 0); z <= min(pz+r-1, world.ChunkSize-1); z++ {
					for x := max(px-r+1, 0); x <= min(px+r-1, world.ChunkSize-1); x++ {
						if dx, dz := x-px, z-pz; dx*dx+dz*dz < r2 {
							j := z*world.ChunkSize + x
							out[j>>6] |= 1 << (j & 63)
						}
					}
				}
			}
		}
	}
	return out
}

// sweep forgets the chunks whose latest hand-out is older than since. It
// returns how many chunks still hold marks.
func (p *placements) sweep(since time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, pc := range p.m {
		if pc.last.Before(since) {
			delete(p.m, c)
		}
	}
	return len(p.m)
}

// len returns the number of chunks holding marks.
func (p *placements) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
