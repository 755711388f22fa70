package pgpersist

import (
	"math/rand/v2"
	"testing"
)

// TestComposeMatchesSequence: the change a run of Adds and Removes
// composes to leaves any starting count where applying the writes one by
// one does, and its writes plus those cancelled add up to the run.
func TestComposeMatchesSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := row{region: "r", key: "k", world: "w"}
	for range 2000 {
		p := newPending()
		n := rng.IntN(12)
		adds := make([]bool, n)
		cancelled := 0
		for i := range adds {
			adds[i] = rng.IntN(2) == 0
			f := change{row: w, r: 1}
			if adds[i] {
				f = change{row: w, a: 1, seq: uint64(i + 1)}
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
				got = max(got-c.r, 0) + c.a
			}
			if got != want {
				t.Fatalf("writes %v from count %d: change gives %d, want %d", adds, start, got, want)
			}
		}
	}
}

// TestPendingDropOldest: dropping sheds the row written first and keeps
// the counts right.
func TestPendingDropOldest(t *testing.T) {
	p := newPending()
	for i := range 100 {
		p.put(change{row: row{region: "r", x: int64(i)}, a: 1, seq: uint64(i + 1)})
	}
	if n := p.dropOldest(); n != 1 || p.rows() != 99 || p.writes != 99 {
		t.Fatalf("dropOldest = %d, rows %d, writes %d", n, p.rows(), p.writes)
	}
	if _, ok := p.at[row{region: "r", x: 0}]; ok {
		t.Fatal("the oldest row is still pending")
	}
	order := p.order(nil)
	if len(order) != 99 || order[0].row.x != 1 || order[98].row.x != 99 {
		t.Fatalf("order after a drop: %d changes from x=%d", len(order), order[0].row.x)
	}
}
