package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of a Store (see the package documentation for which method
// returns which). Implementations return these values, or errors wrapping
// them; test with errors.Is.
var (
	ErrExists   = errors.New("lease: token already holds a lease")
	ErrRedeemed = errors.New("lease: token already redeemed")
	ErrExpired  = errors.New("lease: lease expired")
	ErrUnknown  = errors.New("lease: no lease for the token")
	ErrInvalid  = errors.New("lease: invalid argument")
)

// Bounds of a store's arguments.
const (
	// MaxTokenLen is the longest token accepted, in bytes.
	MaxTokenLen = 256
	// MaxNameLen is the longest Lease.World and Lease.Owner accepted, in
	// bytes.
	MaxNameLen = 255
	// MaxTTL is the longest lease accepted. Network leases last seconds to
	// minutes; the bound keeps a store's arithmetic far from overflow.
	MaxTTL = 24 * time.Hour
)

// Lease is what a token holds: a location and the node that granted it.
// Its zero value is a valid (if meaningless) lease.
type Lease struct {
	// World is the name of the location's world.
	World string
	// X, Y and Z are the location's block coordinates.
	X, Y, Z int64
	// Index is the location's index in its region's search order.
	Index int64
	// Owner names the node that granted the lease; Owned lists by it.
	// Empty means unlisted.
	Owner string
}

// Entry is a live lease, as Owned lists it.
type Entry struct {
	Token   string
	Lease   Lease
	Expires time.Time // on the local clock
}

// Store keeps network leases. Implementations are safe for concurrent
// use; the package documentation gives the contract every method keeps.
type Store interface {
	// Grant makes token hold l for ttl. It fails with ErrExists while
	// token holds a live lease and with ErrRedeemed while it is redeemed.
	Grant(ctx context.Context, token string, l Lease, ttl time.Duration) error
	// Redeem ends token's live lease and returns it, exactly once across
	// all clients of the store. It fails with ErrRedeemed, ErrExpired or
	// ErrUnknown when token holds no live lease.
	Redeem(ctx context.Context, token string) (Lease, error)
	// Release ends token's live lease without redeeming it, forgetting the
	// token. It fails with ErrRedeemed, ErrExpired or ErrUnknown when
	// token holds no live lease.
	Release(ctx context.Context, token string) error
	// Get returns token's live lease and when it ends, on the local clock.
	// It fails with ErrRedeemed, ErrExpired or ErrUnknown when token holds
	// no live lease.
	Get(ctx context.Context, token string) (Lease, time.Time, error)
	// Owned returns the live leases whose Owner is owner, soonest to end
	// first (ties by token). It fails with ErrInvalid for an empty owner
	// or one longer than MaxNameLen.
	Owned(ctx context.Context, owner string) ([]Entry, error)
}

// CheckToken returns an error wrapping ErrInvalid when token is not one a
// Store accepts.
func CheckToken(token string) error {
	switch {
	case token == "":
		return fmt.Errorf("%w: empty token", ErrInvalid)
	case len(token) > MaxTokenLen:
		return fmt.Errorf("%w: token of %d bytes, more than %d", ErrInvalid, len(token), MaxTokenLen)
	}
	return nil
}

// CheckOwner returns an error wrapping ErrInvalid when owner is not one
// Store.Owned accepts.
func CheckOwner(owner string) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: empty owner", ErrInvalid)
	case len(owner) > MaxNameLen:
		return fmt.Errorf("%w: owner of %d bytes, more than %d", ErrInvalid, len(owner), MaxNameLen)
	}
	return nil
}

// CheckGrant returns an error wrapping ErrInvalid when Store.Grant refuses
// its arguments, and otherwise the TTL as a store keeps it (truncated to
// the millisecond).
func CheckGrant(token string, l Lease, ttl time.Duration) (time.Duration, error) {
	if err := CheckToken(token); err != nil {
		return 0, err
	}
	if len(l.World) > MaxNameLen {
		return 0, fmt.Errorf("%w: world name of %d bytes, more than %d", ErrInvalid, len(l.World), MaxNameLen)
	}
	if len(l.Owner) > MaxNameLen {
		return 0, fmt.Errorf("%w: owner of %d bytes, more than %d", ErrInvalid, len(l.Owner), MaxNameLen)
	}
	if ttl < time.Millisecond || ttl > MaxTTL {
		return 0, fmt.Errorf("%w: TTL %v outside [1ms, %v]", ErrInvalid, ttl, MaxTTL)
	}
	return ttl.Truncate(time.Millisecond), nil
}
