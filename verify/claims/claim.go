package claims

import (
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
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

// Options configure a Store. The zero value selects every default.
type Options struct {
	// MaxSide bounds the width and depth of a claim given to Add, in
	// blocks, to catch typos that would claim a whole world. Claims
	// already in the database load whatever their size. Default
	// DefaultMaxSide (65,536).
	MaxSide int64
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process (SQLite only). Default 5 s.
	BusyTimeout time.Duration
	// Clock gives Created to claims added without one. Default time.Now.
	Clock func() time.Time
	// Logger receives what Open finds at its path: an info record when it
	// creates a new, empty store where there was no file, and a warning
	// when it adopts an existing file that held no claims (a 0-byte file,
	// or an SQLite database without any table), which may mean the claims
	// of an earlier run were lost. With PostgreSQL it receives an info
	// record when OpenPostgres creates the tables, a warning when the
	// connection that follows the other nodes' changes is lost and an info
	// record when it is back (one of each per outage), and a warning for a
	// row or notification that is not a valid claim. Default
	// slog.Default().
	Logger *slog.Logger

	// Schema is the PostgreSQL schema that holds the tables (PostgreSQL
	// only); it must exist. Default "": the first existing schema of the
	// connection's search_path.
	Schema string
	// ResyncInterval is how often a PostgreSQL store checks the database's
	// revision when no notification came, the fallback that catches up on
	// changes whose notifications were lost (PostgreSQL only). Default
	// DefaultResyncInterval.
	ResyncInterval time.Duration
}

// DefaultResyncInterval is the default of Options.ResyncInterval.
const DefaultResyncInterval = 2 * time.Second

// maxIdentifier is PostgreSQL's limit on the length of a name, in bytes.
const maxIdentifier = 63

// DefaultBusyTimeout is the default of Options.BusyTimeout.
const DefaultBusyTimeout = 5 * time.Second

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.MaxSide < 0 {
		errs = append(errs, fmt.Errorf("claims: MaxSide %d is negative", o.MaxSide))
	}
	if o.BusyTimeout < 0 {
		errs = append(errs, fmt.Errorf("claims: BusyTimeout %v is negative", o.BusyTimeout))
	}
	if o.ResyncInterval < 0 {
		errs = append(errs, fmt.Errorf("claims: ResyncInterval %v is negative", o.ResyncInterval))
	}
	if len(o.Schema) > maxIdentifier || strings.ContainsRune(o.Schema, 0) {
		errs = append(errs, fmt.Errorf("claims: Schema %q is not a PostgreSQL name (at most %d bytes, no NUL)", o.Schema, maxIdentifier))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.MaxSide == 0 {
		o.MaxSide = DefaultMaxSide
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultResyncInterval
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
