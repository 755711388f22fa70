// Package token mints and verifies network tokens: the keys under which
// a network sink leases a location to a player moving between servers
// (see package lease for the leases themselves).
//
// A token is the unpadded base64url (RFC 4648 section 5) text of 57
// bytes:
//
//	version   1 byte, 1
//	issued    8 bytes, big-endian Unix milliseconds on the minter's clock
//	nonce     16 bytes from crypto/rand
//	mac       32 bytes, HMAC-SHA256 under the secret of a label, the
//	          region and sink names (length-prefixed) and the 25 bytes
//	          above
//
// Without the secret a token can be neither guessed nor forged, and a
// token minted for one region's sink is refused by the Minter of any
// other (the names are under the MAC). The text is decoded strictly: only
// the one canonical spelling of the bytes is accepted (no padding,
// whitespace, other alphabet or stray trailing bits), so a token has
// exactly one text, and a lease keyed by that text cannot be taken twice
// by respelling it.
//
// A token carries the time it was minted; what age a token may have is
// for its user to decide (a network sink refuses tokens older than a
// lease).
package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// Token is a network token's text.
type Token string

// Layout of a token.
const (
	version  = 1
	nonceLen = 16
	bodyLen  = 1 + 8 + nonceLen // version, issued, nonce
	tokenLen = bodyLen + sha256.Size
	// label separates the MACs of tokens from any other use of the
	// secret.
	label = "rtp network token\x00"
)

// TextLen is the length of a token's text.
const TextLen = (tokenLen*8 + 5) / 6

// MinSecretLen is the shortest secret accepted.
const MinSecretLen = 16

// Minter mints and verifies the tokens of one sink of one region under a
// secret. Minters made with the same secret and names accept each
// other's tokens: the servers of one network share the secret.
//
// A Minter is safe for concurrent use. Its zero value is not usable: use
// New.
type Minter struct {
	secret []byte
	bind   []byte // label and the length-prefixed region and sink names
	now    func() time.Time
}

// New returns the Minter of the sink named sink of region under secret,
// dating its tokens by now (nil: time.Now). An empty secret is replaced
// by 32 random bytes: the tokens are then this Minter's alone. A secret
// shorter than MinSecretLen is refused. New keeps a copy of secret.
func New(secret []byte, region, sink string, now func() time.Time) (*Minter, error) {
	switch {
	case len(secret) == 0:
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("token: secret: %w", err)
		}
	case len(secret) < MinSecretLen:
		return nil, fmt.Errorf("token: a secret of %d bytes is shorter than %d", len(secret), MinSecretLen)
	default:
		secret = bytes.Clone(secret)
	}
	if now == nil {
		now = time.Now
	}
	return &Minter{secret: secret, bind: binding(region, sink), now: now}, nil
}

// binding returns what a token's MAC covers before its body: the label
// and the region and sink names, each prefixed by its length.
func binding(region, sink string) []byte {
	b := append([]byte(label), binary.AppendUvarint(nil, uint64(len(region)))...)
	b = append(b, region...)
	b = binary.AppendUvarint(b, uint64(len(sink)))
	return append(b, sink...)
}

// mac appends the MAC of a token's body to dst.
func (m *Minter) mac(dst, body []byte) []byte {
	h := hmac.New(sha256.New, m.secret)
	h.Write(m.bind)
	h.Write(body)
	return h.Sum(dst)
}

// Mint returns a fresh, unguessable token, dated now.
func (m *Minter) Mint() Token {
	var b [tokenLen]byte
	b[0] = version
	binary.BigEndian.PutUint64(b[1:9], uint64(m.now().UnixMilli()))
	_, _ = rand.Read(b[9:bodyLen]) // never fails (crypto/rand)
	m.mac(b[:bodyLen], b[:bodyLen])
	return Token(base64.RawURLEncoding.EncodeToString(b[:]))
}

// Verify checks t's text and MAC and returns when t was minted. It
// accepts only the canonical text of a token of this version minted under
// this Minter's secret and names: t's bytes must re-encode to exactly t.
// It never panics, whatever t holds.
func (m *Minter) Verify(t Token) (issued time.Time, ok bool) {
	if len(t) != TextLen {
		return time.Time{}, false
	}
	var b [tokenLen]byte
	if k, err := base64.RawURLEncoding.Decode(b[:], []byte(t)); err != nil || k != tokenLen {
		return time.Time{}, false
	}
	var text [TextLen]byte
	base64.RawURLEncoding.Encode(text[:], b[:])
	if string(text[:]) != string(t) || b[0] != version {
		return time.Time{}, false
	}
	var sum [sha256.Size]byte
	if !hmac.Equal(m.mac(sum[:0], b[:bodyLen]), b[bodyLen:]) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[1:9]))), true
}
