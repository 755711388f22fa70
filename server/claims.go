package server

import (
	"context"
	"errors"

	"github.com/rtpengine/rtp/verify/claims"
)

// ClaimStore is what the claims routes need of a claims store: list a
// world's claims, add one, remove one. *claims.Store implements it.
//
// Add fails with an error wrapping claims.ErrInvalidClaim for a claim it
// refuses (answered 400 invalid); a store that is closed fails with an
// error wrapping claims.ErrClosed (answered 503 shutdown). Remove reports
// whether a claim of that id existed. A store that also has a method
// Len() int (as *claims.Store does) feeds the rtp_claims metric.
type ClaimStore interface {
	List(ctx context.Context, world string) ([]claims.Claim, error)
	Add(ctx context.Context, c claims.Claim) (claims.Claim, error)
	Remove(ctx context.Context, id int64) (bool, error)
}

var _ ClaimStore = (*claims.Store)(nil)

// claimsOwner is an engine that owns a claims store, as *engine.Engine
// does; New takes the store from it when Options.Claims is nil.
type claimsOwner interface {
	Claims() *claims.Store
}

// claimStoreOf resolves Options.Claims: the store given, or e's own.
func claimStoreOf(e Engine, given ClaimStore) (ClaimStore, error) {
	if given != nil {
		return given, nil
	}
	if o, ok := e.(claimsOwner); ok {
		if cs := o.Claims(); cs != nil {
			return cs, nil
		}
	}
	return nil, errors.New("server: no claims store: set Options.Claims, or pass an engine whose Claims method returns one")
}
