package claims

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The revision bookkeeping of a shared store (sync.go), driven by hand in
// the orders the follower and this store's own writes can interleave.

func testClaim(id int64) *Claim {
	x := id * 100
	return &Claim{ID: id, World: "w", Owner: "o", MinX: x, MinZ: x, MaxX: x + 9, MaxZ: x + 9}
}

func added(rev, id int64) Change   { return Change{Rev: rev, ID: id, Add: testClaim(id)} }
func removed(rev, id int64) Change { return Change{Rev: rev, ID: id} }

// wantInForce checks that exactly the claims of ids are in force, and the
// revision.
func wantInForce(t *testing.T, s *Store, rev int64, ids ...int64) {
	t.Helper()
	for id := int64(1); id <= 10; id++ {
		c := testClaim(id)
		if got, want := s.Claimed("w", c.MinX, c.MinZ), slices.Contains(ids, id); got != want {
			t.Errorf("claim %d in force = %v, want %v", id, got, want)
		}
	}
	if s.Len() != len(ids) {
		t.Errorf("Len() = %d, want %d", s.Len(), len(ids))
	}
	if got := s.revision(); got != rev {
		t.Errorf("revision() = %d, want %d", got, rev)
	}
}

func TestSyncInOrder(t *testing.T) {
	s := newStore(Options{})
	s.commit(added(1, 1))
	wantInForce(t, s, 1, 1)
	if !s.remote(added(1, 1)) {
		t.Fatal("the notification of the store's own write was taken for a gap")
	}
	if !s.remote(added(2, 2)) || !s.remote(removed(3, 1)) {
		t.Fatal("remote() = false for changes in order")
	}
	wantInForce(t, s, 3, 2)
}

// The follower saw this store's addition and another node's removal of it
// before Add put it in force: Add must not bring it back.
func TestSyncOwnWriteBehindFollower(t *testing.T) {
	s := newStore(Options{})
	s.remote(added(1, 1))
	s.remote(removed(2, 1))
	s.commit(added(1, 1))
	wantInForce(t, s, 2)
	if len(s.ahead) != 0 {
		t.Fatalf("ahead = %v, want empty", s.ahead)
	}
}

// This store removes a claim at revision 3 before the follower has seen
// revision 2: the removal is in force at once, and revision 2 then carries
// the index over it.
func TestSyncOwnWriteAhead(t *testing.T) {
	s := newStore(Options{})
	s.remote(added(1, 1))
	s.commit(removed(3, 1))
	wantInForce(t, s, 1)
	if !s.remote(added(2, 2)) {
		t.Fatal("remote(2) = false")
	}
	wantInForce(t, s, 3, 2)
	if !s.remote(removed(3, 1)) || len(s.ahead) != 0 {
		t.Fatalf("own removal's notification: ahead = %v", s.ahead)
	}
	wantInForce(t, s, 3, 2)
}

// This store removed a claim whose addition the follower has not seen yet:
// the addition, when it comes, must not put it back in force.
func TestSyncLaterOwnRemovalWins(t *testing.T) {
	s := newStore(Options{})
	s.commit(removed(2, 7))
	s.remote(added(1, 7))
	wantInForce(t, s, 2)
}

func TestSyncGap(t *testing.T) {
	s := newStore(Options{})
	s.remote(added(1, 1))
	if s.remote(added(3, 3)) {
		t.Fatal("remote() = true for a change two revisions ahead")
	}
	wantInForce(t, s, 1, 1)
}

func TestSyncReplace(t *testing.T) {
	s := newStore(Options{})
	s.remote(added(1, 1))
	s.remote(added(2, 2))
	s.commit(added(3, 4)) // at rev+1: in order
	s.commit(added(6, 5)) // ahead: revisions 4 and 5 unseen
	wantInForce(t, s, 3, 1, 2, 4, 5)

	// A reload at revision 5: another node removed 1 and 4 and added 3;
	// claim 6's row is not valid. This store's addition at 6 stays.
	bad := *testClaim(6)
	bad.Owner = ""
	var reported []error
	add, rm := s.replace(5, []Claim{*testClaim(2), *testClaim(3), bad}, func(err error) { reported = append(reported, err) })
	if add != 1 || rm != 2 {
		t.Errorf("replace() = %d added, %d removed; want 1 and 2", add, rm)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrInvalidClaim) || !strings.Contains(reported[0].Error(), "claim 6") {
		t.Errorf("reported %v, want claim 6 invalid", reported)
	}
	wantInForce(t, s, 6, 2, 3, 5) // carried over the store's own revision 6

	// An older snapshot changes nothing.
	if add, rm := s.replace(4, nil, func(error) {}); add != 0 || rm != 0 {
		t.Errorf("replace(older) = %d, %d; want nothing done", add, rm)
	}
	wantInForce(t, s, 6, 2, 3, 5)
}

// A reload past this store's own write: the snapshot decides, since the
// write may have been undone by a later one.
func TestSyncReplaceDropsPassedOwnWrites(t *testing.T) {
	s := newStore(Options{})
	s.commit(added(2, 1))
	wantInForce(t, s, 0, 1)
	s.replace(3, nil, func(error) {}) // another node removed it at 3
	wantInForce(t, s, 3)
	if len(s.ahead) != 0 {
		t.Fatalf("ahead = %v, want empty", s.ahead)
	}
}

func TestLoadRefusesInvalidRow(t *testing.T) {
	s := newStore(Options{})
	bad := *testClaim(2)
	bad.MinX = bad.MaxX + 1
	err := s.load(4, []Claim{*testClaim(1), bad})
	if !errors.Is(err, ErrInvalidClaim) || !strings.Contains(err.Error(), "claim 2") {
		t.Fatalf("load() = %v, want ErrInvalidClaim naming claim 2", err)
	}
	if s.Len() != 0 {
		t.Fatalf("a failed load put %d claims in force", s.Len())
	}
	if err := s.load(4, []Claim{{World: "w", Owner: "o"}}); err == nil || !strings.Contains(err.Error(), "id 0") {
		t.Fatalf("load(id 0) = %v, want an error", err)
	}
}
