package memory

import (
	"path/filepath"
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
