package pgclaims

import (
	"testing"
	"time"

	"github.com/rtpengine/rtp/verify/claims"
)

func TestNoticeRoundTrip(t *testing.T) {
	c := &claims.Claim{ID: 3, World: "w", Owner: "o", MinX: 300, MinZ: 300, MaxX: 309, MaxZ: 309}
	c.World = `w "quoted" <&> ünïcödé`
	c.Created = time.UnixMilli(1_700_000_000_123).UTC()
	for _, ch := range []claims.Change{{Rev: 5, ID: 3, Add: c}, {Rev: 6, ID: 3}} {
		p, err := encodeNotice(ch)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeNotice(p)
		if err != nil {
			t.Fatalf("decodeNotice(%s) = %v", p, err)
		}
		if got.Rev != ch.Rev || got.ID != ch.ID || (got.Add == nil) != (ch.Add == nil) || (got.Add != nil && *got.Add != *ch.Add) {
			t.Errorf("decodeNotice(encodeNotice(%+v)) = %+v", ch, got)
		}
	}
	for _, p := range []string{
		``, `{`, `{"rev":0,"remove":1}`, `{"rev":1}`, `{"rev":1,"remove":-1}`,
		`{"rev":1,"remove":2,"add":{"id":2,"world":"w","owner":"o"}}`,
		`{"rev":1,"add":{"id":2,"world":"","owner":"o"}}`,
		`{"rev":1,"add":{"id":0,"world":"w","owner":"o"}}`,
	} {
		if ch, err := decodeNotice(p); err == nil {
			t.Errorf("decodeNotice(%q) = %+v, want an error", p, ch)
		}
	}
}
