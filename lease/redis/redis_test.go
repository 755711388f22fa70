package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/leasetest"
)

// envRedis names the variable holding the URL of the Redis the tests use,
// e.g. redis://127.0.0.1:6379/0. Their keys have a random prefix and are
// deleted afterwards.
const envRedis = "RTP_TEST_REDIS"

// redisOptions returns the client options of the test Redis, skipping tb
// when none is configured.
func redisOptions(tb testing.TB) *goredis.Options {
	tb.Helper()
	url := os.Getenv(envRedis)
	if url == "" {
		tb.Skipf("skipping: set %s to a Redis URL (e.g. redis://127.0.0.1:6379/0) to test the Redis lease store", envRedis)
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		tb.Fatalf("%s: %v", envRedis, err)
	}
	return opts
}

// client returns a new client of the test Redis, closed at cleanup.
func client(tb testing.TB, opts *goredis.Options) *goredis.Client {
	c := goredis.NewClient(opts)
	tb.Cleanup(func() { _ = c.Close() }) // a killed node is closed already
	return c
}

// testPrefix returns a fresh random key prefix whose keys are deleted at
// cleanup.
func testPrefix(tb testing.TB, opts *goredis.Options) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "rtp:leasetest:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		c := goredis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		var keys []string
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("listing the test keys: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("deleting the test keys: %v", err)
			}
		}
	})
	return prefix
}

func TestContract(t *testing.T) {
	opts := redisOptions(t)
	leasetest.Run(t, func(t *testing.T) leasetest.Backend {
		prefix := testPrefix(t, opts)
		return leasetest.Backend{
			// Each node has its own client, hence its own connections.
			Node: func(tb testing.TB) (lease.Store, func()) {
				c := client(tb, opts)
				return New(c, Options{Prefix: prefix}), func() { _ = c.Close() }
			},
			Now:   time.Now,
			Wait:  time.Sleep,
			Slack: 50 * time.Millisecond,
		}
	})
}

// TestKeys checks the key layout and that every key of a lease has a
// Redis TTL, so that Redis alone ends it.
func TestKeys(t *testing.T) {
	opts := redisOptions(t)
	prefix := testPrefix(t, opts)
	c := client(t, opts)
	s := New(c, Options{Prefix: prefix})
	ctx := context.Background()
	l := lease.Lease{World: "w", X: 1, Owner: "node"}
	if err := s.Grant(ctx, "tok", l, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := c.PTTL(ctx, prefix+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	within := func(key string, lo, hi time.Duration) {
		t.Helper()
		if d := ttl(key); d < lo || d > hi {
			t.Errorf("PTTL %s = %v, want in [%v, %v]", key, d, lo, hi)
		}
	}
	within("l:tok", 9*time.Second, 10*time.Second)
	within("g:tok", 19*time.Second, 20*time.Second)
	within("o:node", 9*time.Second, 10*time.Second)
	v, err := c.Get(ctx, prefix+"l:tok").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := l.MarshalBinary(); string(v) != string(want) {
		t.Errorf("stored lease = %x, want %x", v, want)
	}
	if _, err := s.Redeem(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, prefix+"l:tok").Val(); n != 0 {
		t.Error("the lease key outlived its redemption")
	}
	within("r:tok", 9*time.Second, 10*time.Second)
	// A longer lease of the same owner extends the owner's set; a shorter
	// one does not shorten it.
	if err := s.Grant(ctx, "tok2", l, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, "tok3", l, time.Second); err != nil {
		t.Fatal(err)
	}
	within("o:node", 29*time.Second, 30*time.Second)
	if New(c, Options{}).Prefix() != DefaultPrefix {
		t.Errorf("default prefix = %q, want %q", New(c, Options{}).Prefix(), DefaultPrefix)
	}
}

// TestCorruptLease checks that a stored value that is not a lease is an
// error, not a lease.
func TestCorruptLease(t *testing.T) {
	opts := redisOptions(t)
	prefix := testPrefix(t, opts)
	c := client(t, opts)
	s := New(c, Options{Prefix: prefix})
	ctx := context.Background()
	if err := c.Set(ctx, prefix+"l:tok", "not a lease", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "tok"); err == nil {
		t.Error("Get of a corrupt lease succeeded")
	}
	if _, err := s.Redeem(ctx, "tok"); err == nil || errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Redeem of a corrupt lease = %v, want a decoding error", err)
	}
}

// TestClosedClient checks that a store whose client is closed fails,
// and says so.
func TestClosedClient(t *testing.T) {
	opts := redisOptions(t)
	c := goredis.NewClient(opts)
	_ = c.Close()
	s := New(c, Options{Prefix: testPrefix(t, opts)})
	err := s.Grant(context.Background(), "tok", lease.Lease{}, time.Second)
	if !errors.Is(err, goredis.ErrClosed) {
		t.Errorf("Grant through a closed client = %v, want goredis.ErrClosed", err)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	opts := redisOptions(b)
	s := New(client(b, opts), Options{Prefix: testPrefix(b, opts)})
	leasetest.BenchmarkRoundTrip(b, s, 5*time.Second)
}
