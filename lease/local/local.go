// Package local is a lease.Store held in one process's memory: a mutex
// over a map, with expiry by an injectable clock.
//
// It serves a single node, and tests. Leases die with the process; a
// fleet shares leases through package lease/redis instead.
package local

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rtpengine/rtp/lease"
)

// Options configure a Store.
type Options struct {
	// Clock tells the time; nil means time.Now. All expiry is on it. The
	// store reads it with its lock held, so that operations take effect in
	// the order of their times; it must not call the store.
	Clock func() time.Time
}

// Store is an in-memory lease.Store.
//
// A Store is safe for concurrent use. Its zero value is an empty store on
// the real clock, ready to use; it must not be copied after first use.
type Store struct {
	clock func() time.Time

	mu sync.Mutex
	// mu protects the following fields.
	records map[string]*record
	forgets forgetQueue // every record granted, soonest forgotten first
}

// record is what the store knows of one token.
type record struct {
	lease    lease.Lease
	expires  time.Time // end of the lease
	forget   time.Time // the record is dropped then: expires plus the TTL
	redeemed bool
}

var _ lease.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts Options) *Store {
	return &Store{clock: opts.Clock}
}

func (s *Store) now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}

// state returns nil when r is a live lease at now and otherwise the error
// telling why it is not (ErrUnknown for a nil r).
func state(r *record, now time.Time) error {
	switch {
	case r == nil || !now.Before(r.forget):
		return lease.ErrUnknown
	case !now.Before(r.expires):
		return lease.ErrExpired
	case r.redeemed:
		return lease.ErrRedeemed
	}
	return nil
}

// Grant implements lease.Store.
func (s *Store) Grant(ctx context.Context, token string, l lease.Lease, ttl time.Duration) error {
	ttl, err := lease.CheckGrant(token, l, ttl)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.drop(now)
	switch err := state(s.records[token], now); err {
	case nil:
		return lease.ErrExists
	case lease.ErrRedeemed:
		return err
	}
	if s.records == nil {
		s.records = make(map[string]*record)
	}
	expires := now.Add(ttl)
	r := &record{lease: l, expires: expires, forget: expires.Add(ttl)}
	s.records[token] = r
	heap.Push(&s.forgets, forget{token: token, r: r})
	return nil
}

// drop deletes the records forgotten at now, so that records nobody asks
// for again do not pile up. It costs amortized O(log n) per Grant.
func (s *Store) drop(now time.Time) {
	for len(s.forgets) > 0 && !now.Before(s.forgets[0].r.forget) {
		f := heap.Pop(&s.forgets).(forget)
		if s.records[f.token] == f.r { // not released or granted again since
			delete(s.records, f.token)
		}
	}
}

// forget is a record due to be forgotten.
type forget struct {
	token string
	r     *record
}

// forgetQueue is a min-heap of records by the time they are forgotten
// (container/heap).
type forgetQueue []forget

func (q forgetQueue) Len() int           { return len(q) }
func (q forgetQueue) Less(i, j int) bool { return q[i].r.forget.Before(q[j].r.forget) }
func (q forgetQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *forgetQueue) Push(x any)        { *q = append(*q, x.(forget)) }
func (q *forgetQueue) Pop() any {
	old := *q
	f := old[len(old)-1]
	old[len(old)-1] = forget{}
	*q = old[:len(old)-1]
	return f
}

// lookup returns token's record at now and its state (see state),
// dropping a forgotten record. It is called with s.mu held.
func (s *Store) lookup(token string, now time.Time) (*record, error) {
	r := s.records[token]
	err := state(r, now)
	if err == lease.ErrUnknown && r != nil {
		delete(s.records, token)
	}
	return r, err
}

// Redeem implements lease.Store.
func (s *Store) Redeem(ctx context.Context, token string) (lease.Lease, error) {
	if err := lease.CheckToken(token); err != nil {
		return lease.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r, err := s.lookup(token, now)
	if err != nil {
		return lease.Lease{}, err
	}
	l := r.lease
	r.redeemed, r.lease = true, lease.Lease{}
	return l, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, token string) error {
	if err := lease.CheckToken(token); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if _, err := s.lookup(token, now); err != nil {
		return err
	}
	delete(s.records, token)
	return nil
}

// Get implements lease.Store.
func (s *Store) Get(ctx context.Context, token string) (lease.Lease, time.Time, error) {
	if err := lease.CheckToken(token); err != nil {
		return lease.Lease{}, time.Time{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r, err := s.lookup(token, now)
	if err != nil {
		return lease.Lease{}, time.Time{}, err
	}
	return r.lease, r.expires, nil
}

// Owned implements lease.Store. It scans every record: it is meant for the
// rare recovery of a node's leases, not for a hot path.
func (s *Store) Owned(ctx context.Context, owner string) ([]lease.Entry, error) {
	if err := lease.CheckOwner(owner); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []lease.Entry
	s.mu.Lock()
	now := s.now()
	for t, r := range s.records {
		if r.lease.Owner == owner && state(r, now) == nil {
			out = append(out, lease.Entry{Token: t, Lease: r.lease, Expires: r.expires})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b lease.Entry) int {
		return cmp.Or(a.Expires.Compare(b.Expires), cmp.Compare(a.Token, b.Token))
	})
	return out, nil
}

// Len is the number of records the store holds: live, redeemed and
// expired but not yet dropped (for tests and metrics).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}
