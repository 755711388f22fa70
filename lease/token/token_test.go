package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// secret keys the tokens of the tests.
var secret = []byte("fuzzing secret, 32 bytes long..")

// minter returns the Minter of region "region", sink "network" under
// secret, on the real clock.
func minter(t testing.TB) *Minter {
	t.Helper()
	m, err := New(secret, "region", "network", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMintVerify: a token is TextLen characters, distinct from every
// other, and verifies to the time it was minted (to the millisecond).
func TestMintVerify(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123_456_789, time.UTC)
	m, err := New(secret, "region", "network", func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Token]bool{}
	for range 100 {
		tok := m.Mint()
		if len(tok) != TextLen || seen[tok] {
			t.Fatalf("Mint() = %q (%d characters, seen before %v), want a fresh token of %d", tok, len(tok), seen[tok], TextLen)
		}
		seen[tok] = true
		issued, ok := m.Verify(tok)
		if want := at.Truncate(time.Millisecond); !ok || !issued.Equal(want) {
			t.Fatalf("Verify(Mint()) = %v, %v; want %v, true", issued, ok, want)
		}
	}
}

// TestNew: an empty secret is a random one (two such minters refuse each
// other's tokens), a short one is refused, and the secret is copied.
func TestNew(t *testing.T) {
	a, err := New(nil, "region", "network", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(nil, "region", "network", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Verify(a.Mint()); ok {
		t.Error("two minters with random secrets accept each other's tokens")
	}
	if m, err := New(secret[:MinSecretLen-1], "region", "network", nil); err == nil {
		t.Errorf("New with a secret of %d bytes = %v, want an error", MinSecretLen-1, m)
	}
	s := []byte(string(secret))
	m, err := New(s, "region", "network", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Mint()
	s[0] ^= 1
	if _, ok := m.Verify(tok); !ok {
		t.Error("changing the caller's secret after New changed the minter's")
	}
}

// TestRespellingsRefused: a token is accepted in its one canonical text
// only. Whitespace (which the base64 decoder would skip), padding, the
// standard alphabet, any changed, added or removed character, and a token
// of another sink or region or secret are refused.
func TestRespellingsRefused(t *testing.T) {
	m := minter(t)
	tok := string(m.Mint())
	if _, ok := m.Verify(Token(tok)); !ok || len(tok) != TextLen {
		t.Fatalf("fresh token %q (%d characters) refused", tok, len(tok))
	}
	bad := []string{
		"", tok[:TextLen-1], tok + "A",
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
		if _, ok := m.Verify(Token(s)); s != tok && ok {
			t.Errorf("token %q (a respelling or change of %q) accepted", s, tok)
		}
	}

	others := map[string][3]string{
		"sink":   {string(secret), "region", "hub"},
		"region": {string(secret), "lobby", "network"},
		"secret": {"another secret of the network", "region", "network"},
	}
	for what, o := range others {
		om, err := New([]byte(o[0]), o[1], o[2], nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := om.Verify(Token(tok)); ok {
			t.Errorf("a token accepted by the minter of another %s", what)
		}
		if _, ok := m.Verify(om.Mint()); ok {
			t.Errorf("a token of another %s accepted", what)
		}
	}
	// The names are length-prefixed: moving a byte from one to the other
	// changes the MAC.
	a, _ := New(secret, "ab", "c", nil)
	b, _ := New(secret, "a", "bc", nil)
	if _, ok := b.Verify(a.Mint()); ok {
		t.Error("the token of region ab sink c accepted by region a sink bc")
	}
}

// FuzzVerify: verifying a presented token never panics, and a token
// passes only if it is the canonical encoding of a current-version body
// and its HMAC under the secret and the sink's names (what a server
// sharing the secret mints): every accepted text re-encodes to itself.
func FuzzVerify(f *testing.F) {
	m := minter(f)
	for range 4 {
		tok := string(m.Mint())
		f.Add(tok)
		f.Add(tok + "\n")
		f.Add(tok[:30] + "\r\n" + tok[30:])
		f.Add(tok + "==")
		f.Add(strings.NewReplacer("-", "+", "_", "/").Replace(tok))
	}
	f.Add("")
	f.Add("====")
	f.Add(string(make([]byte, TextLen)))
	f.Fuzz(func(t *testing.T, s string) {
		if _, ok := m.Verify(Token(s)); !ok {
			return
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(b) != tokenLen {
			t.Fatalf("token %q accepted but does not decode to %d bytes", s, tokenLen)
		}
		if base64.RawURLEncoding.EncodeToString(b) != s {
			t.Fatalf("non-canonical token %q accepted", s)
		}
		h := hmac.New(sha256.New, secret)
		h.Write(m.bind)
		h.Write(b[:bodyLen])
		if b[0] != version || !hmac.Equal(h.Sum(nil), b[bodyLen:]) {
			t.Fatalf("forged token %q accepted", s)
		}
	})
}

// FuzzMutation: any change to a valid token's text (a byte replaced,
// inserted or removed) is refused.
func FuzzMutation(f *testing.F) {
	m := minter(f)
	tok := string(m.Mint())
	f.Add(uint8(0), uint8(0), byte('A'))
	f.Add(uint8(1), uint8(75), byte('\n'))
	f.Add(uint8(1), uint8(76), byte('='))
	f.Add(uint8(2), uint8(10), byte(0))
	f.Add(uint8(0), uint8(75), byte('B'))
	f.Fuzz(func(t *testing.T, op, pos uint8, c byte) {
		i := int(pos) % (len(tok) + 1)
		var s string
		switch op % 3 {
		case 0: // replace
			if i == len(tok) {
				i--
			}
			s = tok[:i] + string([]byte{c}) + tok[i+1:]
		case 1: // insert
			s = tok[:i] + string([]byte{c}) + tok[i:]
		default: // remove
			if i == len(tok) {
				i--
			}
			s = tok[:i] + tok[i+1:]
		}
		if _, ok := m.Verify(Token(s)); s != tok && ok {
			t.Fatalf("mutated token %q (of %q) accepted", s, tok)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	m := minter(b)
	tok := m.Mint()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := m.Verify(tok); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkMint(b *testing.B) {
	m := minter(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Mint()
	}
}
