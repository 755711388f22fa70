package pipeline

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// fuzzSecret keys the tokens of the fuzz tests.
var fuzzSecret = []byte("fuzzing secret, 32 bytes long..")

// FuzzToken: checking a presented token never panics, and a token passes
// only if it is the canonical encoding of a current-version body and its
// HMAC under the secret and the sink's names (what a server sharing the
// secret mints): every accepted text re-encodes to itself.
func FuzzToken(f *testing.F) {
	n, err := newNetworkSink(nil, fuzzSecret, time.Minute)
	if err != nil {
		f.Fatal(err)
	}
	for range 4 {
		tok := string(n.NewToken())
		f.Add(tok)
		f.Add(tok + "\n")
		f.Add(tok[:30] + "\r\n" + tok[30:])
		f.Add(tok + "==")
		f.Add(strings.NewReplacer("-", "+", "_", "/").Replace(tok))
	}
	f.Add("")
	f.Add("====")
	f.Add(string(make([]byte, tokenTextLen)))
	f.Fuzz(func(t *testing.T, s string) {
		if !n.valid(Token(s)) {
			return
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(b) != tokenLen {
			t.Fatalf("token %q accepted but does not decode to %d bytes", s, tokenLen)
		}
		if base64.RawURLEncoding.EncodeToString(b) != s {
			t.Fatalf("non-canonical token %q accepted", s)
		}
		m := hmac.New(sha256.New, fuzzSecret)
		m.Write(n.bind)
		m.Write(b[:tokenBody])
		if b[0] != tokenVersion || !hmac.Equal(m.Sum(nil), b[tokenBody:]) {
			t.Fatalf("forged token %q accepted", s)
		}
	})
}

// FuzzTokenMutation: any change to a valid token's text (a byte replaced,
// inserted or removed) is refused.
func FuzzTokenMutation(f *testing.F) {
	n, err := newNetworkSink(nil, fuzzSecret, time.Minute)
	if err != nil {
		f.Fatal(err)
	}
	tok := string(n.NewToken())
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
		if s != tok && n.valid(Token(s)) {
			t.Fatalf("mutated token %q (of %q) accepted", s, tok)
		}
	})
}
