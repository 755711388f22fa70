package sqlitepersist

import (
	"cmp"
	"slices"

	"github.com/rtpengine/rtp/pipeline"
)

// row names one row of the table: its UNIQUE columns. region is never
// empty (DB.Region checks), so the zero row marks a dead slot.
type row struct {
	region  string
	key     pipeline.Key
	world   string
	x, y, z int64
}

// change is the net effect of the writes pending for one row. Any sequence
// of Adds (n+1) and Removes (n-1, nothing at 0) on a row's count n comes
// down to r Removes followed by a Adds: an Add cancels against nothing
// before it, and a Remove after an Add cancels that Add. Applied to the
// table, the r Removes delete the row or lower its count, then the a Adds
// insert it again or raise the count; so a change is exact whatever the
// row holds when it is committed.
type change struct {
	row  row
	idx  int64 // Index of the last Add
	r, a int
	// hot asks for the row to be marked hot after the r Removes and a
	// Adds (a mark on a row that is gone by then does nothing).
	hot bool
	// addSeq is the sequence number of the first of the a Adds (0 when a
	// is 0): where the row, if it is inserted afresh, falls in insertion
	// order.
	addSeq uint64
}

// compose makes c the effect of c followed by f and returns how many
// writes cancelled out (two for each Add undone by a Remove).
func (c *change) compose(f change) (cancelled int) {
	undo := min(f.r, c.a) // each Remove of f undoes the latest Add of c
	c.a -= undo
	c.r += f.r - undo
	if c.a == 0 {
		c.addSeq = 0
	}
	if f.a > 0 {
		if c.a == 0 {
			c.addSeq = f.addSeq
		}
		c.a += f.a
		c.idx = f.idx
	}
	c.hot = c.hot || f.hot
	return 2 * undo
}

// ops returns the writes c holds.
func (c *change) ops() int {
	n := c.r + c.a
	if c.hot {
		n++
	}
	return n
}

// pending is a set of changes, one per row, in the order the rows were
// first written (so the oldest work is dropped first). A change that
// cancels out entirely leaves the set: rows counts work, not rows once
// touched. The zero value is not usable; see newPending. A pending is not
// safe for concurrent use.
type pending struct {
	at   map[row]int // index in ch of each live change
	ch   []change    // in first-write order; a dead slot has a zero row
	head int         // ch[:head] are dead
	ops  int         // writes held: those of the live changes, marks, spots and trims

	marks []markRow         // journal rows to insert, in Seq order
	spots map[spotKey]int64 // spots to upsert: the latest time, in Unix nanoseconds
	trims map[string]uint64 // by region: delete the marks up to this Seq
	done  []func(error)     // the MarkHot callbacks of the changes held
}

// markRow is one journal row of a region.
type markRow struct {
	region string
	m      pipeline.Mark
}

// spotKey names one spot row.
type spotKey struct {
	region string
	x, z   int64
}

func newPending() *pending {
	return &pending{at: make(map[row]int), spots: make(map[spotKey]int64), trims: make(map[string]uint64)}
}

// putMark appends a journal row.
func (p *pending) putMark(m markRow) {
	p.marks = append(p.marks, m)
	p.ops++
}

// putSpot records a spot, keeping the latest time of a column.
func (p *pending) putSpot(k spotKey, at int64) (cancelled int) {
	if old, ok := p.spots[k]; ok {
		p.spots[k] = max(old, at)
		return 1
	}
	p.spots[k] = at
	p.ops++
	return 0
}

// putTrim records a trim, keeping the highest Seq of a region.
func (p *pending) putTrim(region string, seq uint64) (cancelled int) {
	if old, ok := p.trims[region]; ok {
		p.trims[region] = max(old, seq)
		return 1
	}
	p.trims[region] = seq
	p.ops++
	return 0
}

// dropOldestMark drops the oldest journal row. It must not be called
// when there is none.
func (p *pending) dropOldestMark() {
	copy(p.marks, p.marks[1:])
	p.marks[len(p.marks)-1] = markRow{}
	p.marks = p.marks[:len(p.marks)-1]
	p.ops--
}

// takeDone returns the callbacks held and forgets them.
func (p *pending) takeDone() []func(error) {
	d := p.done
	p.done = nil
	return d
}

// rows returns the number of live changes.
func (p *pending) rows() int { return len(p.at) }

// put composes f into the change of its row, or appends it. It returns
// the writes that cancelled out.
func (p *pending) put(f change) (cancelled int) {
	i, ok := p.at[f.row]
	if !ok {
		p.at[f.row] = len(p.ch)
		p.ch = append(p.ch, f)
		p.ops += f.ops()
		return 0
	}
	c := &p.ch[i]
	p.ops -= c.ops()
	wasHot := c.hot
	cancelled = c.compose(f)
	if wasHot && f.hot {
		cancelled++ // a second mark of a row already to be marked
	}
	p.ops += c.ops()
	if c.ops() == 0 {
		p.kill(i)
	}
	return cancelled
}

// kill removes the change at ch[i].
func (p *pending) kill(i int) {
	delete(p.at, p.ch[i].row)
	p.ch[i] = change{}
	for p.head < len(p.ch) && p.ch[p.head].row.region == "" {
		p.head++
	}
	// Keep the slice from growing without bound when rows come and go
	// (a full pending sheds one row for each it takes; an Add and its
	// Remove leave a dead slot): move the live changes down once most
	// slots are dead. Amortized, one copy and one map store per write.
	if len(p.ch) >= 64 && len(p.ch) >= 2*len(p.at) {
		p.compact()
	}
}

// dropOldest removes the change of the row written first and returns how
// many writes it held. It must not be called on an empty pending.
func (p *pending) dropOldest() (ops int) {
	c := p.ch[p.head] // the head slot is live while any is
	ops = c.ops()
	p.ops -= ops
	p.kill(p.head)
	return ops
}

// compact moves the live changes to the front of ch, in their order.
func (p *pending) compact() {
	n := 0
	for i := p.head; i < len(p.ch); i++ {
		if p.ch[i].row.region != "" {
			p.ch[n] = p.ch[i]
			p.at[p.ch[n].row] = n
			n++
		}
	}
	clear(p.ch[n:])
	p.ch = p.ch[:n]
	p.head = 0
}

// merge composes every change of q (written after p's) into p and returns
// the writes that cancelled out.
func (p *pending) merge(q *pending) (cancelled int) {
	for _, f := range q.ch[q.head:] {
		if f.row.region != "" {
			cancelled += p.put(f)
		}
	}
	for _, m := range q.marks {
		p.putMark(m)
	}
	for k, at := range q.spots {
		cancelled += p.putSpot(k, at)
	}
	for r, seq := range q.trims {
		cancelled += p.putTrim(r, seq)
	}
	p.done = append(p.done, q.done...)
	return cancelled
}

// reset empties p, keeping its memory.
func (p *pending) reset() {
	clear(p.at)
	clear(p.ch)
	p.ch = p.ch[:0]
	p.head = 0
	p.ops = 0
	clear(p.marks)
	p.marks = p.marks[:0]
	clear(p.spots)
	clear(p.trims)
	clear(p.done)
	p.done = p.done[:0]
}

// order returns the live changes that do something, in the order they are
// to be applied: pure removals first, then by addSeq, so rows inserted
// afresh get ids in the order of the Adds that made them. buf is reused.
func (p *pending) order(buf []*change) []*change {
	buf = buf[:0]
	for i := p.head; i < len(p.ch); i++ {
		if c := &p.ch[i]; c.ops() > 0 {
			buf = append(buf, c)
		}
	}
	slices.SortFunc(buf, func(a, b *change) int { return cmp.Compare(a.addSeq, b.addSeq) })
	return buf
}
