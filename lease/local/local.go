// Package local is a lease.Store held in one process's memory: a mutex
// over a map, with expiry by an injectable clock.
//
// It serves a single node (a pipeline's network sink keeps its leases in
// one made by New unless given another store), and tests. A Store made by
// New forgets its leases with the process; one made by Open writes every
// change through a lease.Journal before it answers, and reads the journal
// back when it is opened again, so that a lease granted, and above all a
// token redeemed, outlive a restart or a crash. A fleet shares leases
// through package lease/redis instead.
package local

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
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

// Store is an in-memory lease.Store, optionally written through to a
// lease.Journal (see Open).
//
// A Store is safe for concurrent use. Its zero value is an empty store on
// the real clock without a journal, ready to use; it must not be copied
// after first use.
type Store struct {
	clock   func() time.Time
	journal lease.Journal // nil: memory only

	mu sync.Mutex
	// mu protects the following fields (and serializes the journal's
	// calls).
	records  map[string]*record
	forgets  forgetQueue // every record granted, soonest forgotten first
	nextTrim time.Time   // the journal's forgotten records are trimmed then
}

// trimEvery is how often, at most, a Grant trims the journal of the
// records forgotten since the last trim (records dropped from memory stay
// in the journal until then; Load skips them).
const trimEvery = time.Minute

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

// Open returns a Store holding the records journal keeps that are not yet
// forgotten, which writes every change of a record through journal: Grant,
// Redeem and Release return only once their change is durable, and fail,
// changing nothing in memory, when the journal fails (the journal's error
// is wrapped; whether the change reached the journal is then unknown).
// The records already forgotten are trimmed from the journal. Get and
// Owned read memory alone.
//
// The Store must be the journal's only writer while it is used: it
// trusts its memory and reads the journal only here.
func Open(ctx context.Context, journal lease.Journal, opts Options) (*Store, error) {
	s := New(opts)
	s.journal = journal
	now := s.now()
	recs, err := journal.Load(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("lease/local: load the journal: %w", err)
	}
	s.records = make(map[string]*record, len(recs))
	for _, rec := range recs {
		if !now.Before(rec.Forget) || lease.CheckToken(rec.Token) != nil {
			continue
		}
		r := &record{lease: rec.Lease, expires: rec.Expires, forget: rec.Forget, redeemed: rec.Redeemed}
		if r.redeemed {
			r.lease = lease.Lease{}
		}
		s.records[rec.Token] = r
		heap.Push(&s.forgets, forget{token: rec.Token, r: r})
	}
	if err := journal.Trim(ctx, now); err != nil {
		return nil, fmt.Errorf("lease/local: trim the journal: %w", err)
	}
	s.nextTrim = now.Add(trimEvery)
	return s, nil
}

// journalFailed wraps an error of the journal.
func journalFailed(err error) error {
	return fmt.Errorf("lease/local: journal: %w", err)
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
	s.drop(ctx, now)
	switch err := state(s.records[token], now); err {
	case nil:
		return lease.ErrExists
	case lease.ErrRedeemed:
		return err
	}
	expires := now.Add(ttl)
	r := &record{lease: l, expires: expires, forget: expires.Add(ttl)}
	if s.journal != nil {
		rec := lease.Record{Token: token, Lease: l, Expires: r.expires, Forget: r.forget}
		if err := s.journal.Put(ctx, rec); err != nil {
			return journalFailed(err)
		}
	}
	if s.records == nil {
		s.records = make(map[string]*record)
	}
	s.records[token] = r
	heap.Push(&s.forgets, forget{token: token, r: r})
	return nil
}

// drop deletes the records forgotten at now, so that records nobody asks
// for again do not pile up. It costs amortized O(log n) per Grant. With a
// journal, it trims the journal too when records were dropped and
// trimEvery has passed since the last trim: one statement for them all,
// best effort (a record left in the journal is skipped by Open, and
// trimmed by the next trim).
func (s *Store) drop(ctx context.Context, now time.Time) {
	dropped := false
	for len(s.forgets) > 0 && !now.Before(s.forgets[0].r.forget) {
		f := heap.Pop(&s.forgets).(forget)
		if s.records[f.token] == f.r { // not released or granted again since
			delete(s.records, f.token)
		}
		dropped = true
	}
	if dropped && s.journal != nil && !now.Before(s.nextTrim) {
		s.nextTrim = now.Add(trimEvery)
		_ = s.journal.Trim(ctx, now)
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
	if s.journal != nil {
		rec := lease.Record{Token: token, Expires: r.expires, Forget: r.forget, Redeemed: true}
		if err := s.journal.Put(ctx, rec); err != nil {
			return lease.Lease{}, journalFailed(err)
		}
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
	if s.journal != nil {
		if err := s.journal.Delete(ctx, token); err != nil {
			return journalFailed(err)
		}
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
