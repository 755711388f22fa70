package claims

import (
	"math/bits"
	"slices"
)

// baseShift is log2 of the cell edge of level 0, in blocks (one chunk).
const baseShift = 4

// levelStep is log2 of the ratio of cell edges between one level and the
// next. A step of 2 (edges 16, 64, 256, ...) keeps the levels a lookup
// visits few (claims of 8 to 2,048 blocks use at most five) while a cell
// holds claims no smaller than a quarter of its edge.
const levelStep = 2

// numLevels covers cell edges from 2^4 to 2^64 blocks. The top levels'
// two cells per axis (x>>s is -1 or 0) hold the whole int64 line, so every
// claim fits.
const numLevels = (64-baseShift)/levelStep + 1

// shift returns log2 of the cell edge of level k.
func shift(k int) uint { return uint(baseShift + levelStep*k) }

// cell names a cell of one level: the block coordinates shifted right by
// the level's shift (an arithmetic shift floors, so negative coordinates
// fall in negative cells).
type cell struct{ x, z int64 }

// entry is a claim in a cell, with its corners inline so a lookup reads
// them without following the pointer.
type entry struct {
	minX, minZ, maxX, maxZ int64
	claim                  *Claim
}

func (e *entry) contains(x, z int64) bool {
	return e.minX <= x && x <= e.maxX && e.minZ <= z && z <= e.maxZ
}

type level struct {
	n     int // claims in this level
	cells map[cell][]entry
}

// worldIndex is the hierarchical grid of one world.
type worldIndex struct {
	levels [numLevels]level
	used   []uint8 // the levels with n > 0, ascending
	n      int     // claims in the world
}

// index is the single-threaded core of the store's spatial index: claims by
// world and by id. It is not safe for concurrent use; Store guards it.
type index struct {
	worlds map[string]*worldIndex
	byID   map[int64]*Claim
}

func newIndex() *index {
	return &index{worlds: make(map[string]*worldIndex), byID: make(map[int64]*Claim)}
}

// levelOf returns the lowest level whose cell edge is at least c's longer
// side. A side of at most the cell edge overlaps at most two cells, so c
// overlaps at most 2x2 cells of its level.
func levelOf(c *Claim) int {
	// w = longer side - 1; the edge 2^shift(k) must exceed w, and
	// 2^bits.Len64(w) is the least power of two above w.
	w := max(span(c.MinX, c.MaxX), span(c.MinZ, c.MaxZ))
	need := max(bits.Len64(w)-baseShift, 0)
	return (need + levelStep - 1) / levelStep
}

// cells calls fn for each cell of level k that c overlaps (1 to 4 of them).
func cells(c *Claim, k int, fn func(cell)) {
	s := shift(k)
	// The bounds are at most one apart by the choice of k, and
	// c.MaxX>>s < MaxInt64, so the loops end.
	for x := c.MinX >> s; x <= c.MaxX>>s; x++ {
		for z := c.MinZ >> s; z <= c.MaxZ>>s; z++ {
			fn(cell{x, z})
		}
	}
}

// add indexes c, which must be valid and whose id must not be indexed. The
// index keeps c; the caller must not modify it afterwards.
func (ix *index) add(c *Claim) {
	w := ix.worlds[c.World]
	if w == nil {
		w = &worldIndex{}
		ix.worlds[c.World] = w
	}
	k := levelOf(c)
	l := &w.levels[k]
	if l.cells == nil {
		l.cells = make(map[cell][]entry)
	}
	e := entry{c.MinX, c.MinZ, c.MaxX, c.MaxZ, c}
	cells(c, k, func(at cell) { l.cells[at] = append(l.cells[at], e) })
	if l.n++; l.n == 1 {
		i, _ := slices.BinarySearch(w.used, uint8(k))
		w.used = slices.Insert(w.used, i, uint8(k))
	}
	w.n++
	ix.byID[c.ID] = c
}

// remove drops the claim with the given id and returns it, or nil when it
// is not indexed.
func (ix *index) remove(id int64) *Claim {
	c := ix.byID[id]
	if c == nil {
		return nil
	}
	delete(ix.byID, id)
	w := ix.worlds[c.World]
	k := levelOf(c)
	l := &w.levels[k]
	cells(c, k, func(at cell) {
		es := l.cells[at]
		i := slices.IndexFunc(es, func(e entry) bool { return e.claim == c })
		last := len(es) - 1
		es[i] = es[last]
		es[last] = entry{} // drop the pointer for the collector
		if last == 0 {
			delete(l.cells, at)
		} else {
			l.cells[at] = es[:last]
		}
	})
	if l.n--; l.n == 0 {
		l.cells = nil
		i, _ := slices.BinarySearch(w.used, uint8(k))
		w.used = slices.Delete(w.used, i, i+1)
	}
	if w.n--; w.n == 0 {
		delete(ix.worlds, c.World)
	}
	return c
}

// lookup returns the claim containing (x, z) in world with the lowest id,
// or nil. With first set it returns the first containing claim it finds
// instead, which is enough to answer yes or no. It does not allocate.
func (ix *index) lookup(world string, x, z int64, first bool) *Claim {
	w := ix.worlds[world]
	if w == nil {
		return nil
	}
	var best *Claim
	for _, k := range w.used {
		s := shift(int(k))
		es := w.levels[k].cells[cell{x >> s, z >> s}]
		for i := range es {
			e := &es[i]
			if !e.contains(x, z) {
				continue
			}
			if first {
				return e.claim
			}
			if best == nil || e.claim.ID < best.ID {
				best = e.claim
			}
		}
	}
	return best
}

// len returns the number of indexed claims.
func (ix *index) len() int { return len(ix.byID) }
