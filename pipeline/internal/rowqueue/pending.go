package rowqueue

import (
	"cmp"
	"slices"

	"github.com/rtpengine/rtp/pipeline"
)

// Row names one row of the locations table by its unique columns. Region
// is never empty (the back ends' DB.Region checks it), so the zero Row
// marks a dead slot.
type Row struct {
	Region  string
	Key     pipeline.Key
	World   string
	X, Y, Z int64
}

// Change is the net effect of the writes pending for one row. Any
// sequence of Adds (n+1) and Removes (n-1, nothing at 0) on a row's count
// n comes down to Removes followed by Adds: an Add cancels against
// nothing before it, and a Remove after an Add cancels that Add. Applied
// to the table in that order (the Removes delete the row or lower its
// count, then the Adds insert it again or raise the count), a change is
// exact whatever the row holds when it is committed.
type Change struct {
	Row           Row
	Idx           int64 // Index of the last Add
	Removes, Adds int
	// Hot asks for the row to be marked hot after the Removes and Adds.
	Hot bool
	// AddSeq is the sequence number of the first of the Adds (0 when
	// Adds is 0): where the row, if it is inserted afresh, falls in
	// insertion order. The writer sets it.
	AddSeq uint64
}

// writes returns the writes c stands for.
func (c *Change) writes() int {
	n := c.Removes + c.Adds
	if c.Hot {
		n++
	}
	return n
}

// compose makes c the effect of c followed by f and returns how many
// writes cancelled out: two for each Add undone by a Remove, and one for
// a second hot mark of a row already to be marked.
func (c *Change) compose(f Change) (cancelled int) {
	undo := min(f.Removes, c.Adds) // each Remove of f undoes the latest Add of c
	c.Adds -= undo
	c.Removes += f.Removes - undo
	if c.Adds == 0 {
		c.AddSeq = 0
	}
	if f.Adds > 0 {
		if c.Adds == 0 {
			c.AddSeq = f.AddSeq
		}
		c.Adds += f.Adds
		c.Idx = f.Idx
	}
	if c.Hot && f.Hot {
		cancelled++
	}
	c.Hot = c.Hot || f.Hot
	return cancelled + 2*undo
}

// MarkRow is one journal mark of a region.
type MarkRow struct {
	Region string
	Mark   pipeline.Mark
}

// SpotKey names one row of the spots table.
type SpotKey struct {
	Region string
	X, Z   int64
}

// hotDone is the callback of one MarkHot and the row it marks, so that a
// back end can answer row by row (see Config.Apply).
type hotDone struct {
	row Row
	f   func(error)
}

// Pending is a set of changes, one per row, in the order their rows were
// first written (so the oldest work is dropped first past the queue
// limit), and the journal work queued with them. A change that cancels
// out entirely leaves the set: rows counts work, not rows once touched.
// The writer owns every Pending; a back end's Config.Apply reads the one
// it is given (Order, Marks, Spots, Trims, SpotTrims) and must not keep it. A
// Pending is not safe for concurrent use.
type Pending struct {
	at     map[Row]int // index in ch of each live change
	ch     []Change    // first-write order; a dead slot has a zero Row
	head   int         // ch[:head] are dead
	writes int         // writes held: the live changes' and the journal work

	// Marks are the journal rows to insert, in Seq order.
	Marks []MarkRow
	// Spots are the spots to upsert: the latest time of each, in Unix
	// nanoseconds.
	Spots map[SpotKey]int64
	// Trims are by region: delete the marks up to this Seq.
	Trims map[string]uint64
	// SpotTrims are by region: delete the spots claimed before this time,
	// in Unix nanoseconds (after the Spots: it may cover some of them).
	SpotTrims map[string]int64

	done []hotDone // MarkHot callbacks of the changes held
}

func newPending() *Pending {
	return &Pending{at: make(map[Row]int), Spots: make(map[SpotKey]int64), Trims: make(map[string]uint64), SpotTrims: make(map[string]int64)}
}

// rows returns the number of live changes.
func (p *Pending) rows() int { return len(p.at) }

// put composes f into the change of its row, or appends it, and returns
// the writes that cancelled out.
func (p *Pending) put(f Change) (cancelled int) {
	i, ok := p.at[f.Row]
	if !ok {
		p.at[f.Row] = len(p.ch)
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

// kill removes the change at ch[i].
func (p *Pending) kill(i int) {
	delete(p.at, p.ch[i].Row)
	p.ch[i] = Change{}
	for p.head < len(p.ch) && p.ch[p.head].Row.Region == "" {
		p.head++
	}
	// Keep the slice from growing without bound when rows come and go (a
	// full set sheds one row for each it takes; an Add and its Remove
	// leave a dead slot): move the live changes down once most slots are
	// dead. Amortized, one copy and one map store per write.
	if len(p.ch) >= 64 && len(p.ch) >= 2*len(p.at) {
		p.compact()
	}
}

// compact moves the live changes to the front of ch, in their order.
func (p *Pending) compact() {
	n := 0
	for i := p.head; i < len(p.ch); i++ {
		if p.ch[i].Row.Region != "" {
			p.ch[n] = p.ch[i]
			p.at[p.ch[n].Row] = n
			n++
		}
	}
	clear(p.ch[n:])
	p.ch = p.ch[:n]
	p.head = 0
}

// dropOldest removes the change of the row written first and returns the
// writes it held. p must hold a live change (the head slot is live while
// any is).
func (p *Pending) dropOldest() int {
	n := p.ch[p.head].writes()
	p.writes -= n
	p.kill(p.head)
	return n
}

// putMark appends a journal row.
func (p *Pending) putMark(m MarkRow) {
	p.Marks = append(p.Marks, m)
	p.writes++
}

// dropOldestMark drops the oldest journal row; p must hold one. It takes
// constant time, however many marks a flood has queued.
func (p *Pending) dropOldestMark() {
	p.Marks[0] = MarkRow{}
	p.Marks = p.Marks[1:]
	p.writes--
}

// putSpot records a spot, keeping the latest time of a column.
func (p *Pending) putSpot(k SpotKey, at int64) (cancelled int) {
	cancelled = putMax(p.Spots, k, at)
	p.writes += 1 - cancelled
	return cancelled
}

// putTrim records a trim, keeping the highest Seq of a region.
func (p *Pending) putTrim(region string, seq uint64) (cancelled int) {
	cancelled = putMax(p.Trims, region, seq)
	p.writes += 1 - cancelled
	return cancelled
}

// putSpotTrim records a trim of spots, keeping the latest time of a
// region.
func (p *Pending) putSpotTrim(region string, before int64) (cancelled int) {
	cancelled = putMax(p.SpotTrims, region, before)
	p.writes += 1 - cancelled
	return cancelled
}

// putMax sets m[k] to v, or keeps the greater of v and the value m holds
// already, in which case the write coalesced and it returns 1.
func putMax[K comparable, V cmp.Ordered](m map[K]V, k K, v V) (cancelled int) {
	if old, ok := m[k]; ok {
		m[k] = max(old, v)
		return 1
	}
	m[k] = v
	return 0
}

// merge composes everything of q, queued after p's, into p and returns
// the writes that cancelled out.
func (p *Pending) merge(q *Pending) (cancelled int) {
	for _, f := range q.ch[q.head:] {
		if f.Row.Region != "" {
			cancelled += p.put(f)
		}
	}
	for _, m := range q.Marks {
		p.putMark(m)
	}
	for k, at := range q.Spots {
		cancelled += p.putSpot(k, at)
	}
	for r, seq := range q.Trims {
		cancelled += p.putTrim(r, seq)
	}
	for r, before := range q.SpotTrims {
		cancelled += p.putSpotTrim(r, before)
	}
	p.done = append(p.done, q.done...)
	return cancelled
}

// takeHot moves every change that carries a hot mark, whole (its Removes
// and Adds come along, so the mark finds its row), and every MarkHot
// callback from p into q, which must be empty. The changes left in p
// concern other rows, so committing q first changes no row's result.
func (p *Pending) takeHot(q *Pending) {
	moved := false
	for i := p.head; i < len(p.ch); i++ {
		c := p.ch[i]
		if c.Row.Region == "" || !c.Hot {
			continue
		}
		q.put(c)
		p.writes -= c.writes()
		// Not p.kill: it may compact p.ch under this loop.
		delete(p.at, c.Row)
		p.ch[i] = Change{}
		moved = true
	}
	if moved {
		for p.head < len(p.ch) && p.ch[p.head].Row.Region == "" {
			p.head++
		}
		if len(p.ch) >= 64 && len(p.ch) >= 2*len(p.at) {
			p.compact()
		}
	}
	q.done = append(q.done, p.done...)
	clear(p.done)
	p.done = p.done[:0]
}

// takeDone returns the callbacks held and forgets them.
func (p *Pending) takeDone() []hotDone {
	d := p.done
	p.done = nil
	return d
}

// reset empties p, keeping its memory.
func (p *Pending) reset() {
	clear(p.at)
	clear(p.ch)
	p.ch = p.ch[:0]
	p.head = 0
	p.writes = 0
	clear(p.Marks)
	p.Marks = p.Marks[:0]
	clear(p.Spots)
	clear(p.Trims)
	clear(p.SpotTrims)
	clear(p.done)
	p.done = p.done[:0]
}

// Order returns the live changes in the order they are to be applied:
// pure removals first, then by AddSeq, so that rows inserted afresh get
// ids in the order of the Adds that made them. buf is reused; the
// pointers are valid until p changes.
func (p *Pending) Order(buf []*Change) []*Change {
	buf = buf[:0]
	for i := p.head; i < len(p.ch); i++ {
		if c := &p.ch[i]; c.writes() > 0 {
			buf = append(buf, c)
		}
	}
	slices.SortFunc(buf, func(a, b *Change) int { return cmp.Compare(a.AddSeq, b.AddSeq) })
	return buf
}
