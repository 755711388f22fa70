package rowqueue

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// table models the locations table: copies and ids of the rows, by
// location number.
type table struct {
	n, id map[int]int
	next  int
}

func newTable() *table { return &table{n: map[int]int{}, id: map[int]int{}} }

// add and remove are the writes one at a time, as the contract has them.
func (t *table) add(l int) {
	if t.n[l] == 0 {
		t.id[l] = t.next
		t.next++
	}
	t.n[l]++
}

func (t *table) remove(l int) {
	switch t.n[l] {
	case 0:
	case 1:
		delete(t.n, l)
		delete(t.id, l)
	default:
		t.n[l]--
	}
}

// apply does what the back ends' apply does with the statements of a
// change.
func (t *table) apply(c *Change) {
	l := int(c.Row.X)
	if c.Removes > 0 {
		if t.n[l] <= c.Removes {
			delete(t.n, l)
			delete(t.id, l)
		} else {
			t.n[l] -= c.Removes
		}
	}
	if c.Adds > 0 {
		if t.n[l] == 0 {
			t.id[l] = t.next
			t.next++
		}
		t.n[l] += c.Adds
	}
}

// rows returns (location, copies) pairs in id order.
func (t *table) rows() [][2]int {
	var out [][2]int
	for l, n := range t.n {
		out = append(out, [2]int{l, n})
	}
	slices.SortFunc(out, func(a, b [2]int) int { return cmp.Compare(t.id[a[0]], t.id[b[0]]) })
	return out
}

// coalesce runs script through the writer's path (a front that gathers,
// a batch that commits or fails and keeps its changes) and one write at a
// time, and fails t if the tables differ: in rows, copies or order. Each
// byte is one step: bits 0-1 the location, bits 2-3 the step (Add,
// Remove, commit, failed commit).
func coalesce(t *testing.T, script []byte) {
	want, got := newTable(), newTable()
	front, batch := newPending(), newPending()
	var seq uint64
	writes, committed, cancelled := 0, 0, 0
	commit := func(ok bool) {
		cancelled += batch.merge(front)
		front.reset()
		if !ok {
			return
		}
		committed += batch.writes
		for _, c := range batch.Order(nil) {
			got.apply(c)
		}
		batch.reset()
	}
	for _, b := range script {
		l := int(b & 3)
		r := Row{Region: "r", Key: "k", World: "w", X: int64(l)}
		switch (b >> 2) & 3 {
		case 0:
			seq++
			writes++
			want.add(l)
			cancelled += front.put(Change{Row: r, Idx: int64(l), Adds: 1, AddSeq: seq})
		case 1:
			seq++
			writes++
			want.remove(l)
			cancelled += front.put(Change{Row: r, Removes: 1})
		case 2:
			commit(true)
		case 3:
			commit(false)
		}
		if front.writes < 0 || batch.writes < 0 {
			t.Fatalf("negative pending writes: %d, %d", front.writes, batch.writes)
		}
	}
	commit(true)
	if w, g := want.rows(), got.rows(); !slices.Equal(w, g) {
		t.Fatalf("script %v: coalesced writes give rows %v, one at a time %v", script, g, w)
	}
	if committed+cancelled != writes {
		t.Fatalf("script %v: %d writes, %d committed and %d cancelled", script, writes, committed, cancelled)
	}
}

func TestCoalesce(t *testing.T) {
	for _, script := range [][]byte{
		{0, 4},           // Add then Remove: nothing
		{4, 0},           // Remove of nothing then Add: one row
		{0, 8, 4, 0},     // committed row removed and added again: new id
		{0, 1, 8, 4, 0},  // ... so it comes after row 1
		{0, 0, 8, 4, 0},  // two copies, one removed and one added: id kept
		{0, 12, 1, 4, 8}, // a failed commit merges with later writes
		{0, 1, 4, 0, 12, 5, 1},
	} {
		coalesce(t, script)
	}
}

func FuzzCoalesce(f *testing.F) {
	f.Add([]byte{0, 4, 4, 0, 8, 1, 5, 12, 0, 2, 6, 2, 14, 10})
	f.Add([]byte{0, 1, 2, 3, 12, 4, 5, 6, 7, 0, 1, 2, 3, 8})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4096 {
			t.Skip("long scripts test nothing more")
		}
		coalesce(t, script)
	})
}

// TestComposeMatchesSequence: the change a run of Adds and Removes
// composes to leaves any starting count where applying the writes one by
// one does, and its writes plus those cancelled add up to the run.
func TestComposeMatchesSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := Row{Region: "r", Key: "k", World: "w"}
	for range 2000 {
		p := newPending()
		n := rng.IntN(12)
		adds := make([]bool, n)
		cancelled := 0
		for i := range adds {
			adds[i] = rng.IntN(2) == 0
			f := Change{Row: w, Removes: 1}
			if adds[i] {
				f = Change{Row: w, Adds: 1, AddSeq: uint64(i + 1)}
			}
			cancelled += p.put(f)
		}
		if p.writes+cancelled != n {
			t.Fatalf("writes %d + cancelled %d != %d writes of %v", p.writes, cancelled, n, adds)
		}
		for start := range 4 {
			want := start
			for _, a := range adds {
				if a {
					want++
				} else if want > 0 {
					want--
				}
			}
			got := start
			if i, ok := p.at[w]; ok {
				c := p.ch[i]
				got = max(got-c.Removes, 0) + c.Adds
			}
			if got != want {
				t.Fatalf("writes %v from count %d: change gives %d, want %d", adds, start, got, want)
			}
		}
	}
}

// TestHotMarksCoalesce: a second hot mark of a row already to be marked
// counts as cancelled, and the mark survives the Adds and Removes around
// it.
func TestHotMarksCoalesce(t *testing.T) {
	p := newPending()
	w := Row{Region: "r", Key: "k", World: "w"}
	cancelled := p.put(Change{Row: w, Adds: 1, AddSeq: 1})
	cancelled += p.put(Change{Row: w, Hot: true})
	cancelled += p.put(Change{Row: w, Hot: true})
	cancelled += p.put(Change{Row: w, Removes: 1})
	if cancelled != 3 || p.rows() != 1 || p.writes != 1 {
		t.Fatalf("cancelled %d, %d rows holding %d writes; want 3 cancelled and one hot mark left", cancelled, p.rows(), p.writes)
	}
	if c := p.ch[p.at[w]]; !c.Hot || c.Adds != 0 || c.Removes != 0 {
		t.Fatalf("change left = %+v, want a hot mark alone", c)
	}
}

// TestDropOldest drops rows from a pending that keeps taking new ones
// (the shape of a full queue) and checks its index and counts stay right
// across compactions.
func TestDropOldest(t *testing.T) {
	p := newPending()
	const limit = 100
	dropped := 0
	put := func(c Change) { // as Writer.enqueue does
		if _, ok := p.at[c.Row]; !ok && p.rows() >= limit {
			dropped += p.dropOldest()
		}
		p.put(c)
	}
	for i := range 5000 {
		put(Change{Row: Row{Region: "r", X: int64(i)}, Adds: 1, AddSeq: uint64(i + 1)})
		put(Change{Row: Row{Region: "r", X: int64(i - 3)}, Removes: 1}) // cancels an Add, or is a row of its own
	}
	// Each Remove undid the Add three before it: left are the last three
	// Adds and the first three Removes, which had no Add to undo.
	if p.rows() != 6 || p.writes != 6 {
		t.Errorf("%d live rows holding %d writes, want 6 and 6", p.rows(), p.writes)
	}
	if len(p.ch) > 4*limit {
		t.Errorf("slice of %d changes for %d live rows: not compacted", len(p.ch), p.rows())
	}
	ops := 0
	for k, i := range p.at {
		if i < p.head || p.ch[i].Row != k {
			t.Fatalf("index of %v is %d, which holds %v (head %d)", k, i, p.ch[i].Row, p.head)
		}
		ops += p.ch[i].Removes + p.ch[i].Adds
	}
	if len(p.at) != p.rows() || ops != p.writes {
		t.Fatalf("%d indexed rows, %d live; %d writes counted, %d held", len(p.at), p.rows(), ops, p.writes)
	}
	// The newest rows are the ones kept.
	if _, ok := p.at[Row{Region: "r", X: 4999}]; !ok {
		t.Error("the newest row was dropped")
	}
	if dropped != 0 {
		t.Errorf("%d writes dropped while the live rows stayed under the limit", dropped)
	}

	// Now without the Removes: the oldest go.
	p.reset()
	for i := range 5000 {
		put(Change{Row: Row{Region: "r", X: int64(i)}, Adds: 1, AddSeq: uint64(i + 1)})
	}
	if p.rows() != limit || dropped != 5000-limit || len(p.ch) > 2*limit+64 {
		t.Errorf("%d live rows in %d slots, %d dropped; want %d live, %d dropped", p.rows(), len(p.ch), dropped, limit, 5000-limit)
	}
	for i, c := range p.Order(nil) {
		if c.Row.X != int64(5000-limit+i) {
			t.Fatalf("row %d kept is %d, want the newest in order", i, c.Row.X)
		}
	}
}

// TestPendingDropOldest: dropping sheds the row written first and keeps
// the counts right.
func TestPendingDropOldest(t *testing.T) {
	p := newPending()
	for i := range 100 {
		p.put(Change{Row: Row{Region: "r", X: int64(i)}, Adds: 1, AddSeq: uint64(i + 1)})
	}
	if n := p.dropOldest(); n != 1 || p.rows() != 99 || p.writes != 99 {
		t.Fatalf("dropOldest = %d, rows %d, writes %d", n, p.rows(), p.writes)
	}
	if _, ok := p.at[Row{Region: "r", X: 0}]; ok {
		t.Fatal("the oldest row is still pending")
	}
	order := p.Order(nil)
	if len(order) != 99 || order[0].Row.X != 1 || order[98].Row.X != 99 {
		t.Fatalf("order after a drop: %d changes from x=%d", len(order), order[0].Row.X)
	}
}

// TestJournalWork: spots keep the latest time of a column, trims the
// highest Seq of a region, marks their order; dropping a mark takes the
// oldest; merge carries all of it and counts what coalesced.
func TestJournalWork(t *testing.T) {
	p, q := newPending(), newPending()
	for i := range 3 {
		p.putMark(MarkRow{Region: "r"})
		p.Marks[len(p.Marks)-1].Mark.Seq = uint64(i + 1)
	}
	p.dropOldestMark()
	if len(p.Marks) != 2 || p.Marks[0].Mark.Seq != 2 || p.writes != 2 {
		t.Fatalf("after dropping the oldest mark: %v, %d writes", p.Marks, p.writes)
	}
	k := SpotKey{Region: "r", X: 1, Z: 2}
	c := p.putSpot(k, 10) + p.putSpot(k, 5) + p.putTrim("r", 7)
	c += q.putSpot(k, 20) + q.putTrim("r", 3) + q.putTrim("s", 1)
	c += p.putSpotTrim("r", 50) + q.putSpotTrim("r", 60) + q.putSpotTrim("s", 5)
	q.putMark(MarkRow{Region: "r", Mark: p.Marks[1].Mark})
	q.Marks[0].Mark.Seq = 4
	c += p.merge(q)
	if c != 4 {
		t.Errorf("%d journal writes coalesced, want 4 (one spot in p, one spot, one trim and one spot trim in the merge)", c)
	}
	if p.SpotTrims["r"] != 60 || p.SpotTrims["s"] != 5 {
		t.Errorf("spot trims %v: want the latest of each region", p.SpotTrims)
	}
	if p.Spots[k] != 20 || p.Trims["r"] != 7 || p.Trims["s"] != 1 {
		t.Errorf("spots %v, trims %v: want the latest spot and the highest trims", p.Spots, p.Trims)
	}
	if len(p.Marks) != 3 || p.Marks[2].Mark.Seq != 4 {
		t.Errorf("marks after merge: %v, want q's appended", p.Marks)
	}
	// Three marks, one spot, two trims, two spot trims.
	if p.writes != 8 {
		t.Errorf("%d writes held, want 8", p.writes)
	}
	p.reset()
	if p.writes != 0 || len(p.Marks) != 0 || len(p.Spots) != 0 || len(p.Trims) != 0 || len(p.SpotTrims) != 0 {
		t.Errorf("reset left %d writes: %v %v %v %v", p.writes, p.Marks, p.Spots, p.Trims, p.SpotTrims)
	}
}

// TestTakeHot: takeHot moves exactly the changes carrying a hot mark,
// whole, and the callbacks, and leaves the others live and in order, also
// when enough slots die that the set compacts.
func TestTakeHot(t *testing.T) {
	p, q := newPending(), newPending()
	var rest []Row
	for i := range 200 {
		r := Row{Region: "r", X: int64(i)}
		c := Change{Row: r, Adds: 1, AddSeq: uint64(i + 1)}
		if i%3 != 0 {
			c.Hot = true
		} else {
			rest = append(rest, r)
		}
		p.put(c)
	}
	p.done = append(p.done, hotDone{row: Row{Region: "r", X: 1}, f: func(error) {}})
	writes := p.writes
	p.takeHot(q)
	if q.rows() != 200-len(rest) || len(q.done) != 1 || len(p.done) != 0 {
		t.Fatalf("moved %d changes and %d callbacks, kept %d callbacks; want %d and 1, 0", q.rows(), len(q.done), len(p.done), 200-len(rest))
	}
	for _, c := range q.Order(nil) {
		if !c.Hot || c.Adds != 1 {
			t.Fatalf("moved change %+v: want a hot mark with its Add", *c)
		}
	}
	var kept []Row
	for _, c := range p.Order(nil) {
		kept = append(kept, c.Row)
	}
	if !slices.Equal(kept, rest) || p.rows() != len(rest) || p.writes+q.writes != writes {
		t.Fatalf("kept %v (%d writes of %d), want %v", kept, p.writes, writes, rest)
	}
}
