package pgpersist_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// fill adds locations 0..n-1 to region r under key k through a node that
// then closes cleanly, which leaves every row cold and unowned.
func fill(t *testing.T, schema string, n int) {
	t.Helper()
	db := open(t, schema, "filler", pgpersist.Options{})
	r := region(t, db, "r", "k")
	for i := range n {
		r.Add(persisttest.Loc(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func markHot(t *testing.T, r *pgpersist.Region, loc pipeline.Location) {
	t.Helper()
	done := make(chan error, 1)
	r.MarkHot(loc, true, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatalf("MarkHot: %v", err)
	}
}

func claim(t *testing.T, r *pgpersist.Region, n int) []pipeline.Location {
	t.Helper()
	locs, err := r.ClaimCold(context.Background(), n)
	if err != nil {
		t.Fatalf("ClaimCold: %v", err)
	}
	return locs
}

func indices(locs []pipeline.Location) []int64 {
	out := make([]int64, len(locs))
	for i, l := range locs {
		out[i] = l.Index
	}
	slices.Sort(out)
	return out
}

// TestClaimConcurrent: two nodes of eight claimers each drain one region;
// every row is claimed by exactly one claimer.
func TestClaimConcurrent(t *testing.T) {
	schema := newSchema(t)
	const rows = 2000
	fill(t, schema, rows)
	nodes := []*pgpersist.DB{open(t, schema, "a", pgpersist.Options{}), open(t, schema, "b", pgpersist.Options{})}
	var mu sync.Mutex
	by := map[int64]int{} // index: node
	perNode := make([]int, len(nodes))
	var wg sync.WaitGroup
	for ni, db := range nodes {
		r := region(t, db, "r", "k")
		for range 8 {
			wg.Go(func() {
				for {
					locs, err := r.ClaimCold(context.Background(), 7)
					if err != nil {
						t.Errorf("ClaimCold: %v", err)
						return
					}
					if len(locs) == 0 {
						return
					}
					mu.Lock()
					for _, l := range locs {
						if prev, ok := by[l.Index]; ok {
							t.Errorf("row %d claimed twice (by nodes %d and %d)", l.Index, prev, ni)
						}
						by[l.Index] = ni
					}
					perNode[ni] += len(locs)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(by) != rows {
		t.Fatalf("%d rows claimed, want all %d", len(by), rows)
	}
	if perNode[0] == 0 || perNode[1] == 0 {
		t.Fatalf("claims per node %v: want both nodes to get rows", perNode)
	}
	infos, err := nodes[0].Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]int64{}
	for _, n := range infos {
		owned[n.Name] = n.Owned
	}
	if owned["a"] != int64(perNode[0]) || owned["b"] != int64(perNode[1]) || owned["filler"] != 0 {
		t.Fatalf("Nodes() owned %v, want a=%d b=%d filler=0", owned, perNode[0], perNode[1])
	}
	if st := nodes[0].Stats(); st.Claimed != uint64(perNode[0]) {
		t.Fatalf("Stats().Claimed = %d, want %d", st.Claimed, perNode[0])
	}
}

// TestCleanCloseReturnsClaims: a node that closes in order gives its
// claims back, hot ones included, for another node to claim.
func TestCleanCloseReturnsClaims(t *testing.T) {
	schema := newSchema(t)
	fill(t, schema, 100)
	a := open(t, schema, "a", pgpersist.Options{})
	b := open(t, schema, "b", pgpersist.Options{})
	ra, rb := region(t, a, "r", "k"), region(t, b, "r", "k")
	gotA := claim(t, ra, 30)
	if len(gotA) != 30 || gotA[0] != persisttest.Loc(0) {
		t.Fatalf("first claim = %d rows starting %v, want 30 oldest first", len(gotA), gotA[0])
	}
	markHot(t, ra, gotA[0])
	if gotB := claim(t, rb, 1000); len(gotB) != 70 {
		t.Fatalf("b claimed %d rows while a held 30 of 100, want 70", len(gotB))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	gotB := claim(t, rb, 1000)
	if !slices.Equal(indices(gotB), indices(gotA)) {
		t.Fatalf("after a closed, b claimed %v, want a's rows %v (the hot one too)", indices(gotB), indices(gotA))
	}
	infos, err := b.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range infos {
		if n.Name == "a" && (n.State != "clean" || n.Live || n.Owned != 0) {
			t.Fatalf("a after Close: %+v, want clean, not live, owning nothing", n)
		}
	}
}

// TestAbandonedNodeLapses: a node that stops renewing its lease keeps its
// claims until the lease lapses, then a sweep by another node returns its
// cold rows and discards its hot one; the abandoned node learns it lost
// the lease, and its next run reports the discarded row.
func TestAbandonedNodeLapses(t *testing.T) {
	schema := newSchema(t)
	fill(t, schema, 100)
	// Twenty heartbeats a TTL: a loaded machine may delay a few.
	const ttl = time.Second
	opts := pgpersist.Options{LeaseTTL: ttl, HeartbeatEvery: 50 * time.Millisecond, SweepEvery: 50 * time.Millisecond}
	a := open(t, schema, "a", opts)
	b := open(t, schema, "b", opts)
	ra, rb := region(t, a, "r", "k"), region(t, b, "r", "k")
	gotA := claim(t, ra, 40)
	hot := gotA[5]
	markHot(t, ra, hot)
	if got := claim(t, rb, 1000); len(got) != 60 {
		t.Fatalf("b claimed %d rows, want the 60 a does not hold", len(got))
	}
	// Renewed leases hold past the TTL.
	time.Sleep(2 * ttl)
	if got := claim(t, rb, 1000); len(got) != 0 {
		t.Fatalf("b claimed %v while a renewed its lease", indices(got))
	}
	pgpersist.StopHeartbeat(a)
	stopped := time.Now()
	var back []pipeline.Location
	eventually.Within(10*time.Second, func() bool {
		back = append(back, claim(t, rb, 1000)...)
		return len(back) >= 39
	})
	if waited := time.Since(stopped); waited < ttl/2 {
		t.Fatalf("a's rows came back %v after its heartbeat stopped, before its lease could lapse", waited)
	}
	want := indices(slices.DeleteFunc(slices.Clone(gotA), func(l pipeline.Location) bool { return l == hot }))
	if !slices.Equal(indices(back), want) {
		t.Fatalf("after a's lease lapsed b claimed %v, want a's cold rows %v", indices(back), want)
	}
	if _, err := ra.ClaimCold(context.Background(), 1); !errors.Is(err, pgpersist.ErrLeaseLost) {
		t.Fatalf("ClaimCold of the lapsed node = %v, want ErrLeaseLost", err)
	}
	if err := a.Heartbeat(context.Background()); !errors.Is(err, pgpersist.ErrLeaseLost) {
		t.Fatalf("Heartbeat of the lapsed node = %v, want ErrLeaseLost", err)
	}
	if st := a.Stats(); !st.LeaseLost || !a.LeaseUntil().IsZero() {
		t.Fatalf("lapsed node: Stats() = %+v, LeaseUntil %v: want the loss recorded", st, a.LeaseUntil())
	}
	if st := b.Stats(); st.Swept != 40 {
		t.Fatalf("b's Stats().Swept = %d, want a's 40 rows", st.Swept)
	}
	infos, err := b.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range infos {
		if n.Name == "a" && (n.State != "lapsed" || n.Live || n.Owned != 0) {
			t.Fatalf("a after the sweep: %+v, want lapsed, not live, owning nothing", n)
		}
		if n.Name == "b" && (!n.Live || n.Owned != 99) {
			t.Fatalf("b: %+v, want live owning 99 rows", n)
		}
	}
	if err := pgpersist.Abandon(a); err != nil {
		t.Fatal(err)
	}
	a = open(t, schema, "a", opts)
	rec := region(t, a, "r", "k").Recovery()
	if !rec.Unclean || !slices.Equal(rec.Discarded, []pipeline.Location{hot}) {
		t.Fatalf("a's next run: Recovery() = %+v, want unclean with %v discarded", rec, hot)
	}
	if rec := region(t, b, "r", "k").Recovery(); rec.Unclean {
		t.Fatalf("b's Recovery() = %+v: another node's crash is not b's", rec)
	}
}

// TestCrashRecoveryPerNode: a node restarted after a crash discards its
// own hot rows only; another node's hot rows and run are untouched.
func TestCrashRecoveryPerNode(t *testing.T) {
	schema := newSchema(t)
	a := open(t, schema, "a", pgpersist.Options{})
	b := open(t, schema, "b", pgpersist.Options{})
	ra, rb := region(t, a, "r", "k"), region(t, b, "r", "k")
	for i := range 4 {
		ra.Add(persisttest.Loc(i))
		rb.Add(persisttest.Loc(10 + i))
	}
	markHot(t, ra, persisttest.Loc(1))
	markHot(t, rb, persisttest.Loc(11))
	if err := pgpersist.Abandon(a); err != nil {
		t.Fatal(err)
	}
	a = open(t, schema, "a", pgpersist.Options{})
	ra = region(t, a, "r", "k")
	if rec := ra.Recovery(); !rec.Unclean || !slices.Equal(rec.Discarded, []pipeline.Location{persisttest.Loc(1)}) {
		t.Fatalf("a after its crash: Recovery() = %+v, want its one hot row discarded", rec)
	}
	locs, err := ra.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 2, 3}; !slices.Equal(indices(locs), want) {
		t.Fatalf("a's Load() = %v, want its cold rows %v and none of b's", indices(locs), want)
	}
	if err := rb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var hot bool
	if err := pgpersist.Pool(b).QueryRow(context.Background(),
		`SELECT hot FROM locations WHERE idx = 11 AND owner = 'b'`).Scan(&hot); err != nil || !hot {
		t.Fatalf("b's hot row after a's recovery: hot=%v, %v; want it kept, hot and b's", hot, err)
	}
}

// TestTakeover: a second process opening a running node's name wins, and
// the first learns at its next renewal that its lease is lost.
func TestTakeover(t *testing.T) {
	schema := newSchema(t)
	first := open(t, schema, "a", pgpersist.Options{})
	second := open(t, schema, "a", pgpersist.Options{})
	if err := first.Heartbeat(context.Background()); !errors.Is(err, pgpersist.ErrLeaseLost) {
		t.Fatalf("Heartbeat of the run taken over = %v, want ErrLeaseLost", err)
	}
	if err := second.Heartbeat(context.Background()); err != nil {
		t.Fatalf("Heartbeat of the new run: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	infos, err := second.Nodes(context.Background())
	if err != nil || len(infos) != 1 || !infos[0].Live || infos[0].Version != 2 {
		t.Fatalf("Nodes() after the old run closed = %+v, %v; want the new run live, version 2", infos, err)
	}
}

// TestJournalAcrossNodes: marks recorded by one node are visible to
// another; sequence numbers never collide; a node trims only its own.
func TestJournalAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	a := open(t, schema, "a", pgpersist.Options{})
	b := open(t, schema, "b", pgpersist.Options{})
	ja, jb := region(t, a, "r", "k"), region(t, b, "r", "k")
	at := time.Unix(1_700_000_000, 42)
	var seqA, seqB []uint64
	for i := range 3 {
		seqA = append(seqA, ja.Record(pipeline.Mark{Index: int64(i), Cause: memory.CauseSafety, Source: "a", At: at}))
		seqB = append(seqB, jb.Record(pipeline.Mark{Index: int64(100 + i), Cause: memory.CauseUniquePlacement, Source: "b", At: at}))
	}
	ja.Claim(pipeline.Spot{X: 1, Z: 2, At: at})
	if err := ja.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	marks, err := jb.Marks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 6 {
		t.Fatalf("b's Marks() = %+v, want a's 3 and its own 3", marks)
	}
	seen := map[uint64]bool{}
	for _, m := range marks {
		if seen[m.Seq] {
			t.Fatalf("Seq %d used twice: %+v", m.Seq, marks)
		}
		seen[m.Seq] = true
	}
	if !slices.IsSortedFunc(marks, func(x, y pipeline.Mark) int { return cmp.Compare(x.Seq, y.Seq) }) || marks[0].Source == "" || !marks[0].At.Equal(at) {
		t.Fatalf("Marks() = %+v, want Seq order with sources and times", marks)
	}
	ja.Trim(seqA[2])
	jb.Trim(seqB[0])
	if err := ja.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	marks, err = jb.Marks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var left []int64
	for _, m := range marks {
		left = append(left, m.Index)
	}
	if !slices.Equal(left, []int64{101, 102}) {
		t.Fatalf("after a trimmed all its marks and b its first: indices %v, want [101 102]", left)
	}
	spots, err := jb.Spots(context.Background(), at)
	if err != nil || len(spots) != 1 || spots[0].X != 1 {
		t.Fatalf("b's Spots() = %+v, %v; want a's spot", spots, err)
	}
}
