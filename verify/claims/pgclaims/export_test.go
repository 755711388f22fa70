package pgclaims

import (
	"context"

	"github.com/rtpengine/rtp/verify/claims"
)

// OpenWatched is Open, with a function that returns the PostgreSQL
// backend process of the store's following connection, 0 while it is
// down.
func OpenWatched(ctx context.Context, connString string, opts Options) (*claims.Store, func() uint32, error) {
	s, b, err := open(ctx, connString, opts)
	if err != nil {
		return nil, nil, err
	}
	return s, b.f.pid.Load, nil
}
