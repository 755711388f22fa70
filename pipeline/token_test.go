package pipeline

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/bubble"
)

// records is the number of lease records the sink keeps (leased, redeemed
// or ended).
func (n *NetworkSink) records() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.leases)
}

// TestTokenRespellingsRefused: a token is accepted in its one canonical
// text only. Whitespace (which the base64 decoder would skip), padding,
// the standard alphabet, any changed, added or removed character, and a
// token of another sink or region or secret are refused.
func TestTokenRespellingsRefused(t *testing.T) {
	n, err := newNetworkSink(nil, fuzzSecret, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tok := string(n.NewToken())
	if !n.valid(Token(tok)) || len(tok) != tokenTextLen {
		t.Fatalf("fresh token %q (%d characters) refused", tok, len(tok))
	}
	bad := []string{
		"", tok[:tokenTextLen-1], tok + "A",
		tok + "\n", "\n" + tok, tok + "\r\n", tok[:33] + "\n" + tok[33:], tok[:33] + "\r" + tok[34:],
		tok + "=", tok + "==", " " + tok, tok + " ",
		strings.ToUpper(tok), strings.ToLower(tok),
	}
	if std := strings.NewReplacer("-", "+", "_", "/").Replace(tok); std != tok {
		bad = append(bad, std)
	}
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 0x01
		bad = append(bad, string(b))
	}
	for _, s := range bad {
		if s != tok && n.valid(Token(s)) {
			t.Errorf("token %q (a respelling or change of %q) accepted", s, tok)
		}
	}

	otherSink, _ := newNetworkSink(nil, fuzzSecret, time.Minute)
	otherSink.bind = tokenBinding("region", "hub")
	otherRegion, _ := newNetworkSink(nil, fuzzSecret, time.Minute)
	otherRegion.bind = tokenBinding("lobby", "network")
	otherSecret, _ := newNetworkSink(nil, []byte("another secret of the network"), time.Minute)
	for what, o := range map[string]*NetworkSink{"sink": otherSink, "region": otherRegion, "secret": otherSecret} {
		if o.valid(Token(tok)) || n.valid(o.NewToken()) {
			t.Errorf("a token of another %s accepted", what)
		}
	}
	// The names are length-prefixed: moving a byte from one to the other
	// changes the MAC.
	a, _ := newNetworkSink(nil, fuzzSecret, time.Minute)
	a.bind = tokenBinding("ab", "c")
	b, _ := newNetworkSink(nil, fuzzSecret, time.Minute)
	b.bind = tokenBinding("a", "bc")
	if b.valid(a.NewToken()) {
		t.Error("the token of region ab sink c accepted by region a sink bc")
	}
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
		respelt := []Token{tok + "\n", tok[:40] + "\n" + tok[40:], tok + "=", tok + "=="}
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
		if n.records() != 0 || n.Leased() != 0 {
			t.Fatalf("%d records, %d leases kept; want none", n.records(), n.Leased())
		}

		old := n.NewToken()
		bubble.Advance(30 * time.Second)
		if _, err := n.Reserve(old); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Reserve of a token a lease TTL old = %v, want ErrLeaseExpired", err)
		}
		ahead, _ := newNetworkSink(nil, []byte("0123456789abcdef-network"), 30*time.Second)
		ahead.bind = n.bind
		ahead.clock = func() time.Time { return time.Now().Add(31 * time.Second) }
		if _, err := n.Reserve(ahead.NewToken()); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Reserve of a token dated 31 s ahead = %v, want ErrInvalidToken", err)
		}
		ahead.clock = func() time.Time { return time.Now().Add(5 * time.Second) }
		if _, err := n.Reserve(ahead.NewToken()); err != nil {
			t.Fatalf("Reserve of a token dated 5 s ahead (skew) = %v, want a lease", err)
		}
	})
}

func BenchmarkTokenParse(b *testing.B) {
	n, err := newNetworkSink(nil, fuzzSecret, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	tok := n.NewToken()
	b.ReportAllocs()
	for b.Loop() {
		if !n.valid(tok) {
			b.Fatal("refused")
		}
	}
}
