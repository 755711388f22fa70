package claims

import (
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"
	"unicode/utf8"
)

// Limits on a claim.
const (
	// DefaultMaxSide is the default bound on a claim's width and depth, in
	// blocks (Options.MaxSide).
	DefaultMaxSide = 1 << 16
	// MaxNameBytes bounds the length of a world or owner name, in bytes.
	MaxNameBytes = 256
)

// ErrInvalidClaim is in the chain of every error Add returns for a claim
// that fails validation.
var ErrInvalidClaim = errors.New("claims: invalid claim")

// Claim is a rectangle of land in one world held by one owner. Its corners
// are block coordinates, both inclusive: the claim covers the blocks (x, z)
// with MinX <= x <= MaxX and MinZ <= z <= MaxZ, at every height.
//
// A Claim is a plain value; the zero value is not a valid claim.
type Claim struct {
	// ID identifies the claim in the store. Add assigns it (a claim given
	// to Add must leave it zero); ids are positive and never reused.
	ID int64 `json:"id"`
	// World names the world the claim is in. Non-empty, valid UTF-8, at
	// most MaxNameBytes bytes.
	World string `json:"world"`
	// Owner names who holds the claim (a player, a town, a plugin).
	// Non-empty, valid UTF-8, at most MaxNameBytes bytes.
	Owner string `json:"owner"`
	// MinX, MinZ, MaxX, MaxZ are the inclusive corners, Min <= Max on each
	// axis.
	MinX int64 `json:"minX"`
	MinZ int64 `json:"minZ"`
	MaxX int64 `json:"maxX"`
	MaxZ int64 `json:"maxZ"`
	// Created is when the claim was added, stored to the millisecond, in
	// UTC. Add sets it from Options.Clock when it is zero and keeps it
	// otherwise (to import claims from elsewhere).
	Created time.Time `json:"created"`
}

// Contains reports whether the block (x, z) lies inside c.
func (c Claim) Contains(x, z int64) bool {
	return c.MinX <= x && x <= c.MaxX && c.MinZ <= z && z <= c.MaxZ
}

func (c Claim) String() string {
	return fmt.Sprintf("claim %d of %q in %q: (%d, %d)..(%d, %d)", c.ID, c.Owner, c.World, c.MinX, c.MinZ, c.MaxX, c.MaxZ)
}

// span returns the number of blocks from lo to hi inclusive minus one,
// exactly for every lo <= hi (it cannot overflow).
func span(lo, hi int64) uint64 { return uint64(hi) - uint64(lo) }

// blocks returns the number of blocks from lo to hi inclusive, in decimal.
// It may be 2^64, one more than a uint64 holds, so it is computed exactly.
func blocks(lo, hi int64) string {
	n := new(big.Int).SetUint64(span(lo, hi))
	return n.Add(n, big.NewInt(1)).String()
}

// check reports every problem with c's names and corners, each wrapping
// ErrInvalidClaim. With maxSide > 0 it also bounds the width and depth.
func (c Claim) check(maxSide int64) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidClaim}, args...)...))
	}
	checkName := func(field, v string) {
		switch {
		case v == "":
			bad("empty %s", field)
		case len(v) > MaxNameBytes:
			bad("%s of %d bytes exceeds %d", field, len(v), MaxNameBytes)
		case !utf8.ValidString(v):
			bad("%s %q is not valid UTF-8", field, v)
		}
	}
	checkName("world", c.World)
	checkName("owner", c.Owner)
	checkAxis := func(axis string, lo, hi int64) {
		switch {
		case lo > hi:
			bad("min%s %d exceeds max%s %d", axis, lo, axis, hi)
		case maxSide > 0 && span(lo, hi) >= uint64(maxSide):
			bad("%s blocks along %s exceeds the limit of %d", blocks(lo, hi), axis, maxSide)
		}
	}
	checkAxis("X", c.MinX, c.MaxX)
	checkAxis("Z", c.MinZ, c.MaxZ)
	return errors.Join(errs...)
}

// Options configure a Store, whatever its back end (each back end's
// package adds its own). The zero value selects every default.
type Options struct {
	// MaxSide bounds the width and depth of a claim given to Add, in
	// blocks, to catch typos that would claim a whole world. Claims
	// already in the database load whatever their size. Default
	// DefaultMaxSide (65,536).
	MaxSide int64
	// Clock gives Created to claims added without one. Default time.Now.
	Clock func() time.Time
	// Logger receives what the back end reports: what it found where it
	// opened (a new store, a store that held no claims) and, for a shared
	// one, the outages of its link to the other nodes and the rows or
	// notifications that are not valid claims (see each back end's
	// package). Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	if o.MaxSide < 0 {
		return fmt.Errorf("claims: MaxSide %d is negative", o.MaxSide)
	}
	return nil
}

// WithDefaults returns o with every field left zero set to its default.
func (o Options) WithDefaults() Options {
	if o.MaxSide == 0 {
		o.MaxSide = DefaultMaxSide
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrNotClaimsDatabase is in the chain of the error a back end's Open
// returns for a database that holds another program's tables where the
// claims should be, which it refuses to change.
var ErrNotClaimsDatabase = errors.New("claims: not a claims database")
