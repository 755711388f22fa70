package pgpersist

import (
	"cmp"
	"slices"

	"github.com/rtpengine/rtp/pipeline"
)

// row names one row of the locations table by its unique columns. region
// is never empty (DB.Region checks it), so the zero row marks a dead slot.
type row struct {
	region  string
	key     pipeline.Key
	world   string
	x, y, z int64
}

// change is the net effect of the writes queued for one row: r Removes
// followed by a Adds. Any sequence of Adds and Removes on a row's count
// reduces to that form, since a Remove after an Add cancels it; applied
// in that order the change is exact whatever the row holds at commit.
type change struct {
	row  row
	idx  int64 // Index of the last Add
	r, a int
	hot  bool   // mark the row hot after the removes and adds
	seq  uint64 // sequence number of the first of the a Adds, 0 if a is 0
}

// writes returns the writes c stands for.
func (c *change) writes() int {
	n := c.r + c.a
	if c.hot {
		n++
	}
	return n
}

// compose makes c the effect of c followed by f and returns how many
// writes cancelled out.
func (c *change) compose(f change) (cancelled int) {
	undo := min(f.r, c.a)
	c.a -= undo
	c.r += f.r - undo
	if c.a == 0 {
		c.seq = 0
	}
	if f.a > 0 {
		if c.a == 0 {
			c.seq = f.seq
		}
		c.a += f.a
		c.idx = f.idx
	}
	if c.hot && f.hot {
		cancelled++
	}
	c.hot = c.hot || f.hot
	return cancelled + 2*undo
}

// markRow is one journal mark of a region.
type markRow struct {
	region string
	m      pipeline.Mark
}

// spotKey names one row of the spots table.
type spotKey struct {
	region string
	x, z   int64
}

// pending is a set of changes, one per row, in the order their rows were
// first written (so the oldest is dropped first past the queue limit),
// and the journal work queued with them. Make one with newPending; it is
// not safe for concurrent use.
type pending struct {
	at     map[row]int // index in ch of each live change
	ch     []change    // first-write order; dead slots have a zero row
	head   int         // ch[:head] are dead
	writes int         // writes held, journal work included

	marks []markRow
	spots map[spotKey]int64 // latest time of each spot, Unix nanoseconds
	trims map[string]uint64 // by region: highest Seq to trim
	done  []hotDone         // MarkHot callbacks of the changes held
}

// hotDone is the callback of one MarkHot and the row it marks.
type hotDone struct {
	row row
	f   func(error)
}

func newPending() *pending {
	return &pending{at: make(map[row]int), spots: make(map[spotKey]int64), trims: make(map[string]uint64)}
}

// rows returns the number of live changes.
func (p *pending) rows() int { return len(p.at) }

// put composes f into the change of its row, or appends it, and returns
// the writes that cancelled out.
func (p *pending) put(f change) (cancelled int) {
	i, ok := p.at[f.row]
	if !ok {
		p.at[f.row] = len(p.ch)
		p.ch = append(p.ch, f)
		p.writes += f.writes()
		return 0
	}
	c := &p.ch[i]
	p.writes -= c.writes()
	cancelled = c.compose(f)
	p.writes += c.writes()
	if c.writes() == 0 {
		p.kill(i)
	}
	return cancelled
}

// kill removes the change at ch[i], compacting ch once most of it is dead
// so that rows that come and go do not grow it without bound.
func (p *pending) kill(i int) {
	delete(p.at, p.ch[i].row)
	p.ch[i] = change{}
	for p.head < len(p.ch) && p.ch[p.head].row.region == "" {
		p.head++
	}
	if len(p.ch) >= 64 && len(p.ch) >= 2*len(p.at) {
		n := 0
		for j := p.head; j < len(p.ch); j++ {
			if p.ch[j].row.region != "" {
				p.ch[n] = p.ch[j]
				p.at[p.ch[n].row] = n
				n++
			}
		}
		clear(p.ch[n:])
		p.ch = p.ch[:n]
		p.head = 0
	}
}

// dropOldest removes the change of the row written first and returns the
// writes it held. p must hold a live change.
func (p *pending) dropOldest() int {
	n := p.ch[p.head].writes()
	p.writes -= n
	p.kill(p.head)
	return n
}

func (p *pending) putMark(m markRow) {
	p.marks = append(p.marks, m)
	p.writes++
}

// dropOldestMark drops the oldest mark; p must hold one.
func (p *pending) dropOldestMark() {
	p.marks[0] = markRow{}
	p.marks = p.marks[1:]
	p.writes--
}

func (p *pending) putSpot(k spotKey, at int64) (cancelled int) {
	if old, ok := p.spots[k]; ok {
		p.spots[k] = max(old, at)
		return 1
	}
	p.spots[k] = at
	p.writes++
	return 0
}

func (p *pending) putTrim(region string, seq uint64) (cancelled int) {
	if old, ok := p.trims[region]; ok {
		p.trims[region] = max(old, seq)
		return 1
	}
	p.trims[region] = seq
	p.writes++
	return 0
}

// merge composes everything of q, queued after p's, into p and returns
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

// takeDone returns the callbacks held and forgets them.
func (p *pending) takeDone() []hotDone {
	d := p.done
	p.done = nil
	return d
}

// reset empties p, keeping its memory.
func (p *pending) reset() {
	clear(p.at)
	clear(p.ch)
	p.ch = p.ch[:0]
	p.head = 0
	p.writes = 0
	clear(p.marks)
	p.marks = p.marks[:0]
	clear(p.spots)
	clear(p.trims)
	clear(p.done)
	p.done = p.done[:0]
}

// order returns the live changes in the order they are applied: pure
// removals first, then by the sequence number of their first Add, so that
// rows inserted afresh get ids in the order of their Adds. buf is reused.
func (p *pending) order(buf []*change) []*change {
	buf = buf[:0]
	for i := p.head; i < len(p.ch); i++ {
		if c := &p.ch[i]; c.writes() > 0 {
			buf = append(buf, c)
		}
	}
	slices.SortFunc(buf, func(a, b *change) int { return cmp.Compare(a.seq, b.seq) })
	return buf
}
