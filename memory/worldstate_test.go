package memory

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Ungenerated and unreadable chunks are remembered for their TTL (the
// defaults: 10 minutes and 1 hour), then go on probation, as any dynamic
// cause: they are selectable again by themselves.
func TestWorldStateCausesExpire(t *testing.T) {
	clk := newFakeClock()
	// Without gap absorption; dynamic runs that touch would merge (keeping
	// the first cause and the larger TTL), so the two lie apart.
	tb, err := New(Options{Len: 4, Clock: clk.Now, SpatialResolution: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Cause{CauseUngenerated, CauseUnreadable} {
		if c.Tier() != Dynamic {
			t.Errorf("%v.Tier() = %v, want dynamic", c, c.Tier())
		}
		if !tb.Remembers(c, "") {
			t.Errorf("Remembers(%v) = false with the default TTLs", c)
		}
	}
	mustAdd(t, tb, 0, CauseUngenerated, "")
	mustAdd(t, tb, 1, CauseVert, "")
	mustAdd(t, tb, 2, CauseUnreadable, "")
	mustAdd(t, tb, 3, CauseVert, "")
	tb.Rebuild()
	if n := tb.Selectable(); n != 0 {
		t.Fatalf("Selectable() = %d with every index rejected, want 0", n)
	}
	st := tb.Stats()
	if st.ByCause["ungenerated"] != 1 || st.ByCause["unreadable"] != 1 || st.ByCause["vert"] != 2 {
		t.Errorf("ByCause = %v, want ungenerated 1, unreadable 1, vert 2", st.ByCause)
	}
	clk.Advance(DefaultUngeneratedTTL + time.Second)
	tb.Rebuild()
	if i, ok := tb.Select(0); !ok || i != 0 || tb.Selectable() != 1 {
		t.Errorf("after the ungenerated TTL: Select(0) = %d, %v, Selectable %d; want index 0 alone", i, ok, tb.Selectable())
	}
	clk.Advance(DefaultUnreadableTTL)
	tb.Rebuild()
	if n := tb.Selectable(); n != 2 {
		t.Errorf("after the unreadable TTL: Selectable() = %d, want 2", n)
	}
}

// A memory file holding the new cause reads back with it.
func TestUnreadableRoundTrips(t *testing.T) {
	clk := newFakeClock()
	tb, err := New(Options{Len: 100, Clock: clk.Now, World: "w"})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tb, 7, CauseUnreadable, "")
	mustAdd(t, tb, 40, CauseUngenerated, "")
	tb.Rebuild()
	path := filepath.Join(t.TempDir(), "m.bin")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Open(path, Options{Len: 100, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int64]Cause{7: CauseUnreadable, 40: CauseUngenerated} {
		if c, bad := got.CauseAt(i); !bad || c != want {
			t.Errorf("CauseAt(%d) = %v, %v after a round trip, want %v", i, c, bad, want)
		}
	}
	if c, ok := ParseCause("unreadable"); !ok || c != CauseUnreadable {
		t.Errorf("ParseCause(unreadable) = %v, %v", c, ok)
	}
}

// The generation grows with every published snapshot (rebuild, Forget,
// Load) and only then, so a rejection recorded at generation g is seen by
// selection once Generation() > g.
func TestGeneration(t *testing.T) {
	clk := newFakeClock()
	tb := newTestTable(t, 100, clk)
	g0 := tb.Generation()
	mustAdd(t, tb, 5, CauseSafety, "")
	if tb.Generation() != g0 || !selectableHas(tb, 5) {
		t.Fatalf("AddBad changed the generation or selection before a rebuild")
	}
	tb.Rebuild()
	g1 := tb.Generation()
	if g1 <= g0 || selectableHas(tb, 5) {
		t.Fatalf("after a rebuild: generation %d (was %d), index 5 selectable %v", g1, g0, selectableHas(tb, 5))
	}
	if tb.Forget(5) != 1 || tb.Generation() <= g1 || !selectableHas(tb, 5) {
		t.Fatalf("Forget did not publish a new generation with index 5 selectable")
	}
	g2 := tb.Generation()
	if tb.Forget(6) != 0 || tb.Generation() != g2 {
		t.Errorf("Forget of an index the table does not hold published a snapshot")
	}
	if err := tb.Load(tb.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if tb.Generation() <= g2 {
		t.Errorf("Load kept generation %d", tb.Generation())
	}
	if tb.Remembers(CauseTimeout, "") || tb.Remembers(CauseNullChunk, "") || tb.Remembers(Cause(200), "") {
		t.Errorf("Remembers is true for a transient or invalid cause")
	}
	if tb.Remembers(CauseSafetyExternal, "off") {
		t.Errorf("Remembers is true for a zero TTL")
	}
}

func selectableHas(tb *Table, i int64) bool {
	for k := range tb.Selectable() {
		if j, _ := tb.Select(k); j == i {
			return true
		}
	}
	return false
}

// Exact causes keep to their cells: the good cells between unreadable ones
// stay selectable whatever the spatial resolution, touching cells of one
// exact cause make one run, and an exact run joins no run of another
// cause, while the other causes still absorb their gaps.
func TestExactCausesAbsorbNoGap(t *testing.T) {
	clk := newFakeClock()
	tb, err := New(Options{Len: 40, Clock: clk.Now, SpatialResolution: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 10; i += 2 {
		mustAdd(t, tb, i, CauseUnreadable, "") // 0 2 4 6 8
	}
	mustAdd(t, tb, 12, CauseUnreadable, "")
	mustAdd(t, tb, 13, CauseUnreadable, "")
	mustAdd(t, tb, 14, CauseUngenerated, "")
	mustAdd(t, tb, 15, CauseSafetyExternal, "")
	mustAdd(t, tb, 20, CauseSafetyExternal, "")
	mustAdd(t, tb, 22, CauseSafetyExternal, "") // absorbs 21
	tb.Rebuild()
	var got [][2]int64
	for _, r := range activeRuns(tb) {
		got = append(got, [2]int64{r.Start, r.Len})
	}
	want := [][2]int64{{0, 1}, {2, 1}, {4, 1}, {6, 1}, {8, 1}, {12, 2}, {14, 1}, {15, 1}, {20, 3}}
	if !slices.Equal(got, want) {
		t.Errorf("runs (start, len) = %v, want %v", got, want)
	}
	for _, i := range []int64{1, 3, 5, 7, 9} {
		if tb.IsBad(i) {
			t.Errorf("good cell %d between unreadable ones is bad", i)
		}
	}
}
