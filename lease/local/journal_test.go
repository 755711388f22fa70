package local

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/leasetest"
)

// memJournal is a lease.Journal in memory that can be made to fail. It
// is safe for concurrent use.
type memJournal struct {
	mu   sync.Mutex
	recs map[string]lease.Record
	fail error // every call fails with it while set
}

func newMemJournal() *memJournal { return &memJournal{recs: map[string]lease.Record{}} }

func (j *memJournal) Load(_ context.Context, now time.Time) ([]lease.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return nil, j.fail
	}
	var out []lease.Record
	for _, r := range j.recs {
		if now.Before(r.Forget) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (j *memJournal) Put(_ context.Context, r lease.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return j.fail
	}
	j.recs[r.Token] = r
	return nil
}

func (j *memJournal) Delete(_ context.Context, token string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return j.fail
	}
	delete(j.recs, token)
	return nil
}

func (j *memJournal) Trim(_ context.Context, now time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return j.fail
	}
	maps.DeleteFunc(j.recs, func(_ string, r lease.Record) bool { return !now.Before(r.Forget) })
	return nil
}

func (j *memJournal) setFail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fail = err
}

func (j *memJournal) tokens() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Sorted(maps.Keys(j.recs))
}

func mustOpen(t testing.TB, j lease.Journal, clock func() time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), j, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestContractJournal runs the contract on a store written through a
// journal.
func TestContractJournal(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Backend {
		clock := newFakeClock()
		s := mustOpen(t, newMemJournal(), clock.Now)
		return leasetest.Backend{
			Node:  func(testing.TB) (lease.Store, func()) { return s, func() {} },
			Now:   clock.Now,
			Wait:  clock.Advance,
			Slack: 0,
		}
	})
}

// TestJournalReopen checks that a store opened again on its journal knows
// what the first one answered: a redeemed token stays redeemed, a live
// lease stays live with its location and end, a released token is
// unknown; and that the records forgotten are trimmed from the journal.
func TestJournalReopen(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	j := newMemJournal()
	s := mustOpen(t, j, clock.Now)
	la := lease.Lease{World: "w", X: 1, Y: 64, Z: -3, Index: 7, Owner: "n"}
	lb := lease.Lease{World: "w", X: 2, Y: 65, Z: -4, Index: 8, Owner: "n"}
	for tok, l := range map[string]lease.Lease{"a": la, "b": lb, "c": la} {
		if err := s.Grant(ctx, tok, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	_, wantEnd, err := s.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Redeem(ctx, "a"); err != nil || got != la {
		t.Fatalf("Redeem = %+v, %v", got, err)
	}
	if err := s.Release(ctx, "c"); err != nil {
		t.Fatal(err)
	}

	// The process ends; another opens the journal.
	clock.Advance(10 * time.Second)
	s = mustOpen(t, j, clock.Now)
	if _, err := s.Redeem(ctx, "a"); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Redeem of a redeemed token after a reopen = %v, want ErrRedeemed", err)
	}
	if err := s.Grant(ctx, "a", lb, time.Minute); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Grant of a redeemed token after a reopen = %v, want ErrRedeemed", err)
	}
	if got, end, err := s.Get(ctx, "b"); err != nil || got != lb || !end.Equal(wantEnd) {
		t.Errorf("Get of a live lease after a reopen = %+v, %v, %v; want %+v, %v", got, end, err, lb, wantEnd)
	}
	if owned, err := s.Owned(ctx, "n"); err != nil || len(owned) != 1 || owned[0].Token != "b" {
		t.Errorf("Owned after a reopen = %+v, %v; want b alone", owned, err)
	}
	if _, _, err := s.Get(ctx, "c"); !errors.Is(err, lease.ErrUnknown) {
		t.Errorf("Get of a released token after a reopen = %v, want ErrUnknown", err)
	}
	if got, err := s.Redeem(ctx, "b"); err != nil || got != lb {
		t.Errorf("Redeem of a live lease after a reopen = %+v, %v; want %+v", got, err, lb)
	}

	// Past every record's end plus a TTL, and a trim interval: a Grant
	// trims the journal of them, and a reopen knows none.
	clock.Advance(2*time.Minute + trimEvery)
	if err := s.Grant(ctx, "d", la, time.Minute); err != nil {
		t.Fatal(err)
	}
	if toks := j.tokens(); !slices.Equal(toks, []string{"d"}) {
		t.Errorf("journal after the trim = %v, want [d]", toks)
	}
	s = mustOpen(t, j, clock.Now)
	if s.Len() != 1 {
		t.Errorf("Len after a reopen = %d, want 1", s.Len())
	}
}

// TestJournalFailure checks that a change the journal refuses is refused,
// and changes nothing in memory.
func TestJournalFailure(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	j := newMemJournal()
	s := mustOpen(t, j, clock.Now)
	l := lease.Lease{World: "w", Owner: "n"}
	if err := s.Grant(ctx, "live", l, time.Minute); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	j.setFail(boom)
	if err := s.Grant(ctx, "new", l, time.Minute); !errors.Is(err, boom) {
		t.Errorf("Grant with a failing journal = %v, want %v", err, boom)
	}
	if _, err := s.Redeem(ctx, "live"); !errors.Is(err, boom) {
		t.Errorf("Redeem with a failing journal = %v, want %v", err, boom)
	}
	if err := s.Release(ctx, "live"); !errors.Is(err, boom) {
		t.Errorf("Release with a failing journal = %v, want %v", err, boom)
	}
	if _, err := Open(ctx, j, Options{Clock: clock.Now}); !errors.Is(err, boom) {
		t.Errorf("Open with a failing journal = %v, want %v", err, boom)
	}
	j.setFail(nil)
	if _, _, err := s.Get(ctx, "new"); !errors.Is(err, lease.ErrUnknown) {
		t.Errorf("a Grant the journal refused took effect: Get = %v", err)
	}
	if got, err := s.Redeem(ctx, "live"); err != nil || got != l {
		t.Errorf("after refused Redeem and Release, Redeem = %+v, %v; want the lease", got, err)
	}
	s = mustOpen(t, j, clock.Now)
	if _, err := s.Redeem(ctx, "live"); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("after a reopen, Redeem = %v, want ErrRedeemed", err)
	}
}
