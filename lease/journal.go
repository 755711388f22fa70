package lease

import (
	"context"
	"time"
)

// Record is what a store knows of one token, as a Journal keeps it.
type Record struct {
	Token string
	// Lease is the lease granted; the zero Lease once redeemed.
	Lease Lease
	// Expires is the end of the lease, Forget when the record is dropped
	// (Expires plus the TTL), both on the store's clock.
	Expires, Forget time.Time
	// Redeemed is set once the lease was redeemed.
	Redeemed bool
}

// Journal keeps the records of a store in one process (package
// lease/local) on durable storage, so that a token's lease, and above all
// its redemption, outlive a restart or a crash of the process. Each
// writing method returns once its change is durable: the store answers
// its caller only after that, so that an answer given was never lost.
//
// A Journal is used by one store at a time, which serializes its calls;
// implementations need not be safe for concurrent use by several stores.
type Journal interface {
	// Load returns the records not yet forgotten at now (Forget after
	// now), in any order.
	Load(ctx context.Context, now time.Time) ([]Record, error)
	// Put writes r, replacing any record of r.Token.
	Put(ctx context.Context, r Record) error
	// Delete removes the record of token, if any.
	Delete(ctx context.Context, token string) error
	// Trim removes the records forgotten at now (Forget at or before
	// now).
	Trim(ctx context.Context, now time.Time) error
}
