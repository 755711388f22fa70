package pipeline

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/bubble"
	"github.com/rtpengine/rtp/lease/local"
	"github.com/rtpengine/rtp/lease/token"
)

// records is the number of lease records the sink and its store keep
// (leased, redeemed or ended), the store being a lease/local one.
func (n *NetworkSink) records() int {
	n.mu.Lock()
	k := len(n.holds)
	n.mu.Unlock()
	return k + n.store.(*local.Store).Len()
}

// TestTokenReplayRefused: a redeemed token never takes a location again,
// under its own text (ErrRedeemed, then ErrLeaseExpired once too old to
// lease) or any other (ErrInvalidToken); a token too old to lease is
// refused, and one dated ahead of the clock by more than a TTL is invalid.
func TestTokenReplayRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
			o.Network = NetworkConfig{Enabled: true, Capacity: 2, Secret: []byte("0123456789abcdef-network"), LeaseTTL: 30 * time.Second}
		}})
		defer e.shutdown()
		n := e.p.Network()
		e.fill(20, func() bool { return n.Len() == 2 })
		tok := n.NewToken()
		if _, err := n.Reserve(tok); err != nil {
			t.Fatal(err)
		}
		h, err := n.Redeem(tok)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		respelt := []token.Token{tok + "\n", tok[:40] + "\n" + tok[40:], tok + "=", tok + "=="}
		for _, s := range respelt {
			if _, err := n.Reserve(s); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Reserve(%q) after redeem = %v, want ErrInvalidToken", s, err)
			}
			if _, err := n.Redeem(s); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Redeem(%q) after redeem = %v, want ErrInvalidToken", s, err)
			}
		}
		e.fill(20, func() bool { return n.Len() == 2 })
		for range 4 {
			if _, err := n.Redeem(tok); !errors.Is(err, ErrRedeemed) && !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Redeem of a redeemed token = %v, want ErrRedeemed or ErrLeaseExpired", err)
			}
			if _, err := n.Reserve(tok); !errors.Is(err, ErrRedeemed) && !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Reserve of a redeemed token = %v, want ErrRedeemed or ErrLeaseExpired", err)
			}
			bubble.Advance(20 * time.Second)
			e.cycle()
		}
		if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Reserve of a redeemed token, its record gone = %v, want ErrLeaseExpired", err)
		}
		if k := n.records(); k != 0 || n.Leased() != 0 {
			t.Fatalf("%d records, %d leases kept; want none", k, n.Leased())
		}

		old := n.NewToken()
		bubble.Advance(30 * time.Second)
		if _, err := n.Reserve(old); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Reserve of a token a lease TTL old = %v, want ErrLeaseExpired", err)
		}
		ahead := func(d time.Duration) token.Token {
			m, err := token.New([]byte("0123456789abcdef-network"), e.p.opts.Region, n.Name(), func() time.Time { return time.Now().Add(d) })
			if err != nil {
				t.Fatal(err)
			}
			return m.Mint()
		}
		if _, err := n.Reserve(ahead(31 * time.Second)); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Reserve of a token dated 31 s ahead = %v, want ErrInvalidToken", err)
		}
		if _, err := n.Reserve(ahead(5 * time.Second)); err != nil {
			t.Fatalf("Reserve of a token dated 5 s ahead (skew) = %v, want a lease", err)
		}
	})
}
