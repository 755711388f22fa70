package claims

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rtpengine/rtp/verify"
)

// Source is the verifier source name of the claims store: the name its
// rejections carry in stats and the key of its entry in ttl.yml's
// verifiers section.
const Source = "claims"

// ErrClosed is returned by Add, Remove and List once the store is closed.
var ErrClosed = errors.New("claims: closed")

// Backend is the storage under a Store: the only part that differs
// between the SQLite file of one process (package sqliteclaims) and a
// PostgreSQL database several nodes share (package pgclaims). The Store
// keeps the index and the validation; a back end only stores, deletes and
// lists rows, each write committed before it returns. The Store
// serializes the calls of Insert, Remove, List and Close, and calls
// nothing after Close.
type Backend interface {
	// Insert stores c, which is valid and has a zero ID, and returns the
	// committed change, whose claim has its ID set.
	Insert(ctx context.Context, c Claim) (Change, error)
	// Remove deletes the claim with the given id. ok is false when there
	// was none, and then nothing was committed.
	Remove(ctx context.Context, id int64) (ch Change, ok bool, err error)
	// List reads the claims of world (of every world when it is empty) in
	// id order. The caller owns the slice.
	List(ctx context.Context, world string) ([]Claim, error)
	// Close releases the storage and stops whatever the back end started.
	Close() error
}

// Store is the claims store: the claims of a back end's database, an
// SQLite file or a PostgreSQL schema shared by several nodes, mirrored in
// an in-memory spatial index. Make one with New or NewShared (or the
// Open of a back end's package); the zero value is not usable.
//
// A Store is safe for concurrent use. Contains (and the verifier) reads the
// index under a read lock and never waits for the database; Add, Remove and
// List are serialized with each other. After Close, Contains keeps
// answering from the claims in force at the time.
type Store struct {
	be     Backend
	opts   Options
	shared bool // other stores write the back end's rows (NewShared)

	wmu sync.Mutex // serializes Add, Remove, List and Close: database, then index
	// wmu protects the following field.
	closed bool

	mu sync.RWMutex // protects the following fields (local writers also hold wmu)
	ix *index
	// rev is the revision of the shared database the index reflects in
	// full: every change up to it, and those of ahead besides. Always 0
	// with a private back end.
	rev int64
	// ahead holds this store's own committed changes above rev+1, in
	// revision order, applied to the index before the changes below them
	// were seen (see sync.go).
	ahead []Change
}

func newStore(opts Options) *Store {
	return &Store{opts: opts.WithDefaults(), ix: newIndex()}
}

// New returns a Store over the private back end b, which only this store
// writes while it is open, holding the claims all: every row of b, as its
// List("") returns them. A row that is not a valid claim fails New (its
// error wraps ErrInvalidClaim and names the row), as do invalid options.
// The Store owns b from then on and closes it on Close; on error the
// caller closes it.
func New(b Backend, all []Claim, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := newStore(opts)
	if err := s.load(0, all); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	s.be = b
	return s, nil
}

// NewShared returns a Store over the shared back end b, whose rows other
// stores write too, holding the claims all of b at revision rev (a
// snapshot of both). Each write of a shared back end takes the next
// revision of its database (Change.Rev), so that revisions are dense and
// commit in order. The back end keeps the index up to date with the other
// stores' writes through the returned Mirror. Errors and ownership are
// New's.
func NewShared(b Backend, rev int64, all []Claim, opts Options) (*Store, *Mirror, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	s := newStore(opts)
	if err := s.load(rev, all); err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	s.be, s.shared = b, true
	return s, &Mirror{s: s}, nil
}

// Add validates c, stores it and puts it in force. It returns the claim as
// stored, with its ID and Created set. A claim that fails validation
// (empty or over-long world or owner, a minimum above its maximum, a side
// longer than Options.MaxSide, a non-zero ID, a Created time outside the
// years 1970 to 9999) gets an error listing every
// problem, in whose chain is ErrInvalidClaim. Overlapping claims are
// allowed.
//
// With a shared back end the claim is in force on this node when Add
// returns and on the other nodes of the database as soon as the back end
// learns of it (see package pgclaims: within a second, a few
// milliseconds in practice); so is a removal.
func (s *Store) Add(ctx context.Context, c Claim) (Claim, error) {
	err := c.check(s.opts.MaxSide)
	if c.ID != 0 {
		err = errors.Join(err, fmt.Errorf("%w: ID %d is assigned by the store; leave it zero", ErrInvalidClaim, c.ID))
	}
	if y := c.Created.Year(); !c.Created.IsZero() && (y < 1970 || y > 9999) {
		err = errors.Join(err, fmt.Errorf("%w: Created %v is outside the years 1970 to 9999", ErrInvalidClaim, c.Created))
	}
	if err != nil {
		return Claim{}, err
	}
	if c.Created.IsZero() {
		c.Created = s.opts.Clock()
	}
	c.Created = time.UnixMilli(c.Created.UnixMilli()).UTC() // as stored

	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return Claim{}, ErrClosed
	}
	ch, err := s.be.Insert(ctx, c)
	if err != nil {
		return Claim{}, fmt.Errorf("claims: add: %w", err)
	}
	stored := *ch.Add
	s.commit(ch)
	return stored, nil
}

// Remove deletes the claim with the given id and reports whether there was
// one. From then on its land is no longer claimed; places the verifier
// rejected for it come back as their memory expires.
func (s *Store) Remove(ctx context.Context, id int64) (bool, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	ch, ok, err := s.be.Remove(ctx, id)
	if err != nil {
		return false, fmt.Errorf("claims: remove %d: %w", id, err)
	}
	if s.shared {
		// Another node may have removed it first, and this store may have
		// dropped it from the index already: no disagreement there.
		if ok {
			s.commit(ch)
		}
		return ok, nil
	}
	s.mu.Lock()
	c := s.ix.remove(id)
	s.mu.Unlock()
	if ok != (c != nil) {
		// Only this store writes the file while it is open.
		return ok, fmt.Errorf("claims: remove %d: the database and the index disagree (removed %t, indexed %t)", id, ok, c != nil)
	}
	return ok, nil
}

// List returns the claims of world in id order (of every world when world
// is empty), read from the database. The caller owns the slice.
func (s *Store) List(ctx context.Context, world string) ([]Claim, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	cs, err := s.be.List(ctx, world)
	if err != nil {
		return nil, fmt.Errorf("claims: list: %w", err)
	}
	return cs, nil
}

// Contains returns the claim containing the block (x, z) of world, the one
// with the lowest id when several overlap there. It reads the in-memory
// index under a read lock: no I/O, no allocation.
func (s *Store) Contains(world string, x, z int64) (Claim, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c := s.ix.lookup(world, x, z, false); c != nil {
		return *c, true
	}
	return Claim{}, false
}

// Claimed reports whether any claim contains the block (x, z) of world. It
// is Contains without finding which claim, and a little faster.
func (s *Store) Claimed(world string, x, z int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.lookup(world, x, z, true) != nil
}

// Len returns the number of claims in force.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.len()
}

// Verifier returns the sync verifier of the store, for
// verify.Registry.Register(claims.Source, ...): it rejects a location
// inside any claim of its world (at any height). It is safe for concurrent
// calls, does no I/O and does not allocate.
func (s *Store) Verifier() func(verify.Location) bool {
	return func(l verify.Location) bool { return !s.Claimed(l.World, l.X, l.Z) }
}

// Register registers the store's verifier with reg under Source.
func (s *Store) Register(reg *verify.Registry) error {
	return reg.Register(Source, s.Verifier())
}

// Close closes the back end, which stops whatever it started (a shared
// one's following of the other nodes' changes): it returns once every
// goroutine and connection the store and its back end started is gone. Add, Remove and List then return ErrClosed;
// Contains and the verifier keep answering from the claims in force. Close
// is idempotent.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.be.Close(); err != nil {
		return fmt.Errorf("claims: close: %w", err)
	}
	return nil
}
