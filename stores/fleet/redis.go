package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/lease"
	leaseredis "github.com/rtpengine/rtp/lease/redis"
)

// openRedis opens the network lease store that FleetSpec.LeasesURL names,
// a redis:// or rediss:// URL: a store in that Redis under the default key
// prefix, shared by every node that names the same Redis.
// The Redis is pinged before openLeases returns, so that a wrong address
// or password fails the start rather than the first reservation; the
// caller closes the returned Closer (the Redis client) once the pipelines
// that use the store are closed.
//
// Errors do not quote the URL, which may hold a password.
func openRedis(ctx context.Context, rawURL string) (lease.Store, io.Closer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return nil, nil, fmt.Errorf("leases: invalid URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, nil, fmt.Errorf("leases: URL scheme %q: want redis:// or rediss://", u.Scheme)
	}
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("leases: invalid Redis URL: %s", strings.TrimPrefix(err.Error(), "redis: "))
	}
	c := goredis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("leases: Redis at %s: %w", opts.Addr, err)
	}
	return leaseredis.New(c, leaseredis.Options{}), c, nil
}
