package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/lease"
)

// TestOpenRedisRefused: a URL of another scheme, a malformed one and a
// Redis nobody answers at all fail, without quoting the password.
func TestOpenRedisRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	for _, c := range []struct{ url, want string }{
		{"postgres://u:hunter2@127.0.0.1/db", `scheme "postgres"`},
		{"tcp://127.0.0.1:6379", `scheme "tcp"`},
		{"redis://:hunter2@127.0.0.1:6379/zero", "invalid database number"},
		{"redis://:hunter2@127.0.0.1:6379/0?bogus=1", "unexpected option"},
		{"redis://:hunter2@[::1", "invalid URL"},
		{"redis://:hunter2@" + closed + "/0", "Redis at " + closed},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, closer, err := openRedis(ctx, c.url)
		cancel()
		if err == nil {
			_ = closer.Close()
			t.Errorf("openRedis(%q) = %v, want an error", c.url, s)
			continue
		}
		if s != nil || closer != nil {
			t.Errorf("openRedis(%q) failed but returned a store or a closer", c.url)
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "hunter2") {
			t.Errorf("openRedis(%q) = %q, want an error saying %q and not quoting the password", c.url, msg, c.want)
		}
	}
}

// TestOpenRedis: a redis:// URL opens a store in that Redis: a lease
// granted through it is seen by a second store on the same URL, and
// redeemed once; once closed, the store fails.
func TestOpenRedis(t *testing.T) {
	u := os.Getenv("RTP_TEST_REDIS")
	if u == "" {
		t.Skip("skipping: set RTP_TEST_REDIS to a Redis URL (e.g. redis://127.0.0.1:6379/0) to test the Redis lease store")
	}
	ctx := context.Background()
	a, closeA, err := openRedis(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	b, closeB, err := openRedis(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer closeB.Close()
	var r [16]byte
	_, _ = rand.Read(r[:])
	token := "fleet-test-" + hex.EncodeToString(r[:])
	want := lease.Lease{World: "overworld", X: 1, Y: 64, Z: -3, Index: 7, Owner: "node-a"}
	if err := a.Grant(ctx, token, want, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Get(ctx, token); err != nil || got != want {
		t.Fatalf("Get through the second store = %+v, %v; want %+v", got, err, want)
	}
	if got, err := b.Redeem(ctx, token); err != nil || got != want {
		t.Fatalf("Redeem through the second store = %+v, %v; want %+v", got, err, want)
	}
	if _, err := a.Redeem(ctx, token); !errors.Is(err, lease.ErrRedeemed) {
		t.Fatalf("second Redeem = %v, want lease.ErrRedeemed", err)
	}
	if err := closeA.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, token); err == nil || errors.Is(err, lease.ErrRedeemed) {
		t.Fatalf("Get through a closed store = %v, want a transport error", err)
	}
}
