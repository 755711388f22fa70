package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/lease"
	leaselocal "github.com/rtpengine/rtp/lease/local"
	leaseredis "github.com/rtpengine/rtp/lease/redis"
)

// openLocalLeases opens the network lease store of a single node: a
// lease/local store written through the leases table of its SQLite
// locations database, so that a token reserved before a restart or a
// crash is still redeemable after it, and one redeemed is never redeemed
// again (it is refused as redeemed, or once too old as expired). It
// returns nil for a fleet node on PostgreSQL without a lease store: its
// network sinks keep their leases in memory (the pipeline's default
// lease/local store).
//
// The store needs no closing: it writes through the database, which the
// engine closes after the pipelines.
func (e *Engine) openLocalLeases(ctx context.Context) (lease.Store, error) {
	db, ok := e.db.(sqliteDB)
	if !ok {
		return nil, nil
	}
	s, err := leaselocal.Open(ctx, db.Leases(), leaselocal.Options{Clock: e.opts.Clock})
	if err != nil {
		return nil, fmt.Errorf("network leases: %w", err)
	}
	return s, nil
}

// openLeases opens the network lease store that FleetSpec.LeasesURL names:
// "" is none (nil store and closer: the network sinks keep their leases in
// this process), a redis:// or rediss:// URL a store in that Redis under
// the default key prefix, shared by every node that names the same Redis.
// The Redis is pinged before openLeases returns, so that a wrong address
// or password fails the start rather than the first reservation; the
// caller closes the returned Closer (the Redis client) once the pipelines
// that use the store are closed.
//
// Errors do not quote the URL, which may hold a password.
func openLeases(ctx context.Context, rawURL string) (lease.Store, io.Closer, error) {
	if rawURL == "" {
		return nil, nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return nil, nil, fmt.Errorf("engine: leases: invalid URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, nil, fmt.Errorf("engine: leases: URL scheme %q: want redis:// or rediss://", u.Scheme)
	}
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: leases: invalid Redis URL: %s", strings.TrimPrefix(err.Error(), "redis: "))
	}
	c := goredis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("engine: leases: Redis at %s: %w", opts.Addr, err)
	}
	return leaseredis.New(c, leaseredis.Options{}), c, nil
}
