package pipeline

import (
	"testing"

	"github.com/rtpengine/rtp/geom"
)

// TestSharesPartitionChunks: of n shares exactly one takes each index,
// and each takes about 1/n of them.
func TestSharesPartitionChunks(t *testing.T) {
	const indices = 60_000
	for _, n := range []int{2, 3, 5} {
		counts := make([]int, n)
		for i := range int64(indices) {
			owners := 0
			for r := range n {
				if inShareOf(i, r, n) {
					owners++
					counts[r]++
				}
			}
			if owners != 1 {
				t.Fatalf("index %d is in %d of %d shares, want exactly one", i, owners, n)
			}
		}
		for r, c := range counts {
			want := indices / n
			if c < want*9/10 || c > want*11/10 {
				t.Errorf("share %d of %d holds %d indices, want about %d", r, n, c, want)
			}
		}
	}
	if !inShareOf(12345, 0, 1) || !inShareOf(12345, 0, 0) {
		t.Error("a share of one (or none) must hold every index")
	}
}

// TestShareDraws: pipelines given shares 0 and 1 of 2 screen disjoint
// chunks that are all in their share, and together still follow the
// distribution's spread.
func TestShareDraws(t *testing.T) {
	var screened [2][]geom.Chunk
	var shape geom.Shape
	for rank := range 2 {
		e, rec := drawEnv(t, 60, geom.Flat{}, nil)
		e.p.SetShare(rank, 2)
		if r, n := e.p.shareOf(); r != rank || n != 2 {
			t.Fatalf("shareOf() = %d, %d; want %d, 2", r, n, rank)
		}
		screened[rank] = runDraws(e, rec, 400)
		shape = e.shape
		e.shutdown()
	}
	seen := map[geom.Chunk]int{}
	for rank, cs := range screened {
		for _, c := range cs {
			i, _ := shape.Index(c)
			if !inShareOf(i, rank, 2) {
				t.Fatalf("node %d screened chunk %v (index %d) outside its share", rank, c, i)
			}
			seen[c] |= 1 << rank
		}
	}
	for c, who := range seen {
		if who == 3 {
			t.Fatalf("chunk %v screened by both nodes", c)
		}
	}
	all := append(append([]geom.Chunk(nil), screened[0]...), screened[1]...)
	if m := meanRank(t, shape, all); m < 0.45 || m > 0.55 {
		t.Errorf("mean rank of the fleet's draws %.3f, want about 0.5 (uniform)", m)
	}
}

// TestShareChecksAtScreening: a candidate drawn before the node's share
// changed is not screened once it lies outside the new share (the node
// it now belongs to screens it), and its hold on the index is released;
// one inside the share is screened.
func TestShareChecksAtScreening(t *testing.T) {
	e, rec := drawEnv(t, 60, geom.Flat{}, nil)
	defer e.shutdown()
	var in, out int64 = -1, -1
	for i := int64(0); in < 0 || out < 0; i++ {
		switch {
		case inShareOf(i, 0, 2) && in < 0:
			in = i
		case !inShareOf(i, 0, 2) && out < 0:
			out = i
		}
	}
	chunkOf := e.shape.Chunk
	for _, i := range []int64{in, out} {
		if !e.p.held.acquire(i) {
			t.Fatalf("index %d already held", i)
		}
	}
	e.p.SetShare(0, 2)
	e.p.runScreening(t.Context(), Candidate{Index: out, Chunk: chunkOf(out)})
	if got := rec.screened(); len(got) != 0 {
		t.Fatalf("screened %v, a chunk outside the node's share", got)
	}
	if e.p.held.has(out) {
		t.Error("the candidate outside the share still holds its index")
	}
	e.p.runScreening(t.Context(), Candidate{Index: in, Chunk: chunkOf(in)})
	if got := rec.screened(); len(got) != 1 || got[0] != chunkOf(in) {
		t.Fatalf("screened %v, want the chunk inside the share", got)
	}
}
