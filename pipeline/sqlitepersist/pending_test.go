package sqlitepersist

import (
	"cmp"
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

// apply does what DB.apply does with the statements of a change.
func (t *table) apply(c *change) {
	l := int(c.row.x)
	if c.r > 0 {
		if t.n[l] <= c.r {
			delete(t.n, l)
			delete(t.id, l)
		} else {
			t.n[l] -= c.r
		}
	}
	if c.a > 0 {
		if t.n[l] == 0 {
			t.id[l] = t.next
			t.next++
		}
		t.n[l] += c.a
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
		committed += batch.ops
		for _, c := range batch.order(nil) {
			got.apply(c)
		}
		batch.reset()
	}
	for _, b := range script {
		l := int(b & 3)
		r := row{region: "r", key: "k", world: "w", x: int64(l)}
		switch (b >> 2) & 3 {
		case 0:
			seq++
			writes++
			want.add(l)
			cancelled += front.put(change{row: r, idx: int64(l), a: 1, addSeq: seq})
		case 1:
			seq++
			writes++
			want.remove(l)
			cancelled += front.put(change{row: r, r: 1})
		case 2:
			commit(true)
		case 3:
			commit(false)
		}
		if front.ops < 0 || batch.ops < 0 {
			t.Fatalf("negative pending writes: %d, %d", front.ops, batch.ops)
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

// TestDropOldest drops rows from a pending that keeps taking new ones
// (the shape of a full queue) and checks its index and counts stay right
// across compactions.
func TestDropOldest(t *testing.T) {
	p := newPending()
	const limit = 100
	dropped := 0
	put := func(c change) { // as DB.enqueue does
		if _, ok := p.at[c.row]; !ok && p.rows() >= limit {
			dropped += p.dropOldest()
		}
		p.put(c)
	}
	for i := range 5000 {
		put(change{row: row{region: "r", x: int64(i)}, a: 1, addSeq: uint64(i + 1)})
		put(change{row: row{region: "r", x: int64(i - 3)}, r: 1}) // cancels an Add, or is a row of its own
	}
	// Each Remove undid the Add three before it: left are the last three
	// Adds and the first three Removes, which had no Add to undo.
	if p.rows() != 6 || p.ops != 6 {
		t.Errorf("%d live rows holding %d writes, want 6 and 6", p.rows(), p.ops)
	}
	if len(p.ch) > 4*limit {
		t.Errorf("slice of %d changes for %d live rows: not compacted", len(p.ch), p.rows())
	}
	ops := 0
	for k, i := range p.at {
		if i < p.head || p.ch[i].row != k {
			t.Fatalf("index of %v is %d, which holds %v (head %d)", k, i, p.ch[i].row, p.head)
		}
		ops += p.ch[i].r + p.ch[i].a
	}
	if len(p.at) != p.rows() || ops != p.ops {
		t.Fatalf("%d indexed rows, %d live; %d writes counted, %d held", len(p.at), p.rows(), p.ops, ops)
	}
	// The newest rows are the ones kept.
	if _, ok := p.at[row{region: "r", x: 4999}]; !ok {
		t.Error("the newest row was dropped")
	}
	if dropped != 0 {
		t.Errorf("%d writes dropped while the live rows stayed under the limit", dropped)
	}

	// Now without the Removes: the oldest go.
	p.reset()
	for i := range 5000 {
		put(change{row: row{region: "r", x: int64(i)}, a: 1, addSeq: uint64(i + 1)})
	}
	if p.rows() != limit || dropped != 5000-limit || len(p.ch) > 2*limit+64 {
		t.Errorf("%d live rows in %d slots, %d dropped; want %d live, %d dropped", p.rows(), len(p.ch), dropped, limit, 5000-limit)
	}
	for i, c := range p.order(nil) {
		if c.row.x != int64(5000-limit+i) {
			t.Fatalf("row %d kept is %d, want the newest in order", i, c.row.x)
		}
	}
}
