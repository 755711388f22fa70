// Package redis is a lease.Store kept in Redis, shared by every node of a
// fleet: a token reserved through one node is redeemable through any
// other, and a lease outlives the node that granted it.
//
// # Keys
//
// Under the store's prefix (Options.Prefix), a token t has up to three
// keys, each with a PX time to live so that Redis alone ends them:
//
//	<prefix>l:<t>  the lease: its encoded lease.Lease; PX the lease TTL
//	<prefix>r:<t>  the redeemed marker; PX what was left of the lease
//	<prefix>g:<t>  the grant's memory; PX twice the lease TTL
//
// and an owner o the sorted set <prefix>o:<o> of the tokens it granted,
// scored by the end of their leases on Redis's clock, pruned as leases end
// and kept no longer than its latest lease. Every change of a token's keys
// is one Lua script (EVALSHA, EVAL on a script cache miss), so it is
// atomic across all clients: of concurrent Redeems exactly one deletes the
// lease and writes the marker.
//
// The scripts touch keys of one token and one owner, which need not hash
// to one Redis Cluster slot: the store wants a single Redis primary
// (with replicas or Sentinel if wanted), not a cluster. It is written for
// Redis 7.
package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/lease"
)

// DefaultPrefix is the key prefix of a Store whose Options.Prefix is
// empty.
const DefaultPrefix = "rtp:lease:"

// Options configure a Store.
type Options struct {
	// Prefix starts the name of every key the store uses; "" means
	// DefaultPrefix. Stores sharing a prefix share leases.
	Prefix string
}

// Store is a lease.Store in Redis.
//
// A Store is safe for concurrent use; several Stores, in one process or
// many, over the same Redis and prefix see the same leases. Its zero value
// is not usable: call New. The Store does not own its client: closing the
// client is the caller's business, and a Store whose client is closed
// fails every call.
type Store struct {
	c      goredis.UniversalClient
	prefix string
}

var _ lease.Store = (*Store)(nil)

// New returns a Store over the client c.
func New(c goredis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Store{c: c, prefix: opts.Prefix}
}

// Prefix is the store's key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Replies of the scripts: 0 is success, the others a token's state.
const (
	replyOK       = 0
	replyExists   = 1
	replyRedeemed = 2
	replyExpired  = 3
	replyUnknown  = 4
)

// stateLua answers for a token with no live lease; it ends every script
// but grant's. KEYS[2] is the redeemed marker and KEYS[3] the memory.
const stateLua = `
if redis.call('EXISTS', KEYS[2]) == 1 then return {2} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {3} end
return {4}
`

// grantScript: KEYS lease, marker, memory[, owner set]; ARGV encoded
// lease, TTL in ms[, token].
var grantScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[3], '', 'PX', 2 * ttl)
if KEYS[4] then
	local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
	redis.call('ZADD', KEYS[4], now + ttl, ARGV[3])
	if redis.call('PTTL', KEYS[4]) < ttl then
		redis.call('PEXPIRE', KEYS[4], ttl)
	end
end
return 0
`)

// redeemScript: KEYS lease, marker, memory.
var redeemScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
	local left = redis.call('PTTL', KEYS[1])
	redis.call('DEL', KEYS[1])
	if left > 0 then
		redis.call('SET', KEYS[2], '', 'PX', left)
	end
	return {0, v}
end
` + stateLua)

// releaseScript: KEYS lease, marker, memory.
var releaseScript = goredis.NewScript(`
if redis.call('DEL', KEYS[1]) == 1 then
	redis.call('DEL', KEYS[3])
	return {0}
end
` + stateLua)

// getScript: KEYS lease, marker, memory.
var getScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
	return {0, v, redis.call('PTTL', KEYS[1])}
end
` + stateLua)

// keys returns the lease, marker and memory keys of token.
func (s *Store) keys(token string) []string {
	return []string{s.prefix + "l:" + token, s.prefix + "r:" + token, s.prefix + "g:" + token}
}

func (s *Store) ownerKey(owner string) string { return s.prefix + "o:" + owner }

// stateErr is the error of a script's reply code.
func stateErr(code int64) error {
	switch code {
	case replyOK:
		return nil
	case replyExists:
		return lease.ErrExists
	case replyRedeemed:
		return lease.ErrRedeemed
	case replyExpired:
		return lease.ErrExpired
	case replyUnknown:
		return lease.ErrUnknown
	}
	return fmt.Errorf("lease/redis: unexpected script reply %d", code)
}

// Grant implements lease.Store.
func (s *Store) Grant(ctx context.Context, token string, l lease.Lease, ttl time.Duration) error {
	ttl, err := lease.CheckGrant(token, l, ttl)
	if err != nil {
		return err
	}
	v, err := l.MarshalBinary()
	if err != nil {
		return err
	}
	keys, args := s.keys(token), []any{v, ttl.Milliseconds()}
	if l.Owner != "" {
		keys, args = append(keys, s.ownerKey(l.Owner)), append(args, token)
	}
	code, err := grantScript.Run(ctx, s.c, keys, args...).Int64()
	if err != nil {
		return fmt.Errorf("lease/redis: grant: %w", err)
	}
	return stateErr(code)
}

// run runs one of the token scripts and splits its reply into the state's
// error and the rest.
func (s *Store) run(ctx context.Context, op string, script *goredis.Script, token string) ([]any, error) {
	if err := lease.CheckToken(token); err != nil {
		return nil, err
	}
	r, err := script.Run(ctx, s.c, s.keys(token)).Slice()
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	code, ok := int64(-1), len(r) > 0
	if ok {
		code, ok = r[0].(int64)
	}
	if !ok {
		return nil, fmt.Errorf("lease/redis: %s: malformed script reply", op)
	}
	return r[1:], stateErr(code)
}

// decode decodes the encoded lease of a script's reply.
func decode(op string, v any) (lease.Lease, error) {
	b, ok := v.(string)
	var l lease.Lease
	if !ok {
		return l, fmt.Errorf("lease/redis: %s: malformed script reply", op)
	}
	if err := l.UnmarshalBinary([]byte(b)); err != nil {
		return l, fmt.Errorf("lease/redis: %s: stored lease: %w", op, err)
	}
	return l, nil
}

// Redeem implements lease.Store. A stored lease that does not decode (a
// key written by something else under the prefix) is an error, and the
// token is redeemed all the same.
func (s *Store) Redeem(ctx context.Context, token string) (lease.Lease, error) {
	r, err := s.run(ctx, "redeem", redeemScript, token)
	if err != nil {
		return lease.Lease{}, err
	}
	if len(r) != 1 {
		return lease.Lease{}, errors.New("lease/redis: redeem: malformed script reply")
	}
	return decode("redeem", r[0])
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, token string) error {
	_, err := s.run(ctx, "release", releaseScript, token)
	return err
}

// Get implements lease.Store. The expiry is the local clock when the
// reply arrived plus the time Redis said was left.
func (s *Store) Get(ctx context.Context, token string) (lease.Lease, time.Time, error) {
	r, err := s.run(ctx, "get", getScript, token)
	if err != nil {
		return lease.Lease{}, time.Time{}, err
	}
	now := time.Now()
	if len(r) != 2 {
		return lease.Lease{}, time.Time{}, errors.New("lease/redis: get: malformed script reply")
	}
	left, ok := r[1].(int64)
	if !ok {
		return lease.Lease{}, time.Time{}, errors.New("lease/redis: get: malformed script reply")
	}
	l, err := decode("get", r[0])
	if err != nil {
		return lease.Lease{}, time.Time{}, err
	}
	return l, now.Add(time.Duration(left) * time.Millisecond), nil
}

// Owned implements lease.Store. It is not atomic: it reads the owner's
// tokens, then their leases, in two round trips, so a lease granted
// meanwhile may be missed. Tokens whose lease is gone stay in the owner's
// set until their lease would have ended (Grant prunes them then).
func (s *Store) Owned(ctx context.Context, owner string) ([]lease.Entry, error) {
	if err := lease.CheckOwner(owner); err != nil {
		return nil, err
	}
	set := s.ownerKey(owner)
	tokens, err := s.c.ZRange(ctx, set, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("lease/redis: owned: %w", err)
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	type reply struct {
		v   *goredis.StringCmd
		ttl *goredis.DurationCmd
	}
	replies := make([]reply, len(tokens))
	_, err = s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, t := range tokens {
			k := s.prefix + "l:" + t
			replies[i] = reply{p.Get(ctx, k), p.PTTL(ctx, k)}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("lease/redis: owned: %w", err)
	}
	now := time.Now()
	var out []lease.Entry
	for i, t := range tokens {
		v, err := replies[i].v.Result()
		if errors.Is(err, goredis.Nil) {
			continue // redeemed, released or ended
		}
		if err == nil {
			err = replies[i].ttl.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("lease/redis: owned: %w", err)
		}
		left := replies[i].ttl.Val()
		if left <= 0 {
			continue // ended between the two commands
		}
		var l lease.Lease
		if err := l.UnmarshalBinary([]byte(v)); err != nil {
			return nil, fmt.Errorf("lease/redis: owned: stored lease of %q: %w", t, err)
		}
		if l.Owner != owner {
			continue // released, then granted again by another node
		}
		out = append(out, lease.Entry{Token: t, Lease: l, Expires: now.Add(left)})
	}
	return out, nil
}
