package pipeline

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"
)

// FuzzToken: checking a presented token never panics, and a token passes
// only if it is the canonical encoding of a nonce and its HMAC under the
// secret (what a server sharing the secret mints).
func FuzzToken(f *testing.F) {
	secret := []byte("fuzzing secret, 32 bytes long..")
	n, err := newNetworkSink(nil, secret, time.Minute)
	if err != nil {
		f.Fatal(err)
	}
	for range 4 {
		f.Add(string(n.NewToken()))
	}
	f.Add("")
	f.Add("====")
	f.Add(string(make([]byte, 64)))
	f.Fuzz(func(t *testing.T, s string) {
		if !n.valid(Token(s)) {
			return
		}
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != tokenLen {
			t.Fatalf("token %q accepted but does not decode to %d bytes", s, tokenLen)
		}
		m := hmac.New(sha256.New, secret)
		m.Write(b[:tokenNonce])
		if !hmac.Equal(m.Sum(nil), b[tokenNonce:]) || base64.RawURLEncoding.EncodeToString(b) != s {
			t.Fatalf("forged or non-canonical token %q accepted", s)
		}
	})
}
