package client

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDecodeError(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   APIError
	}{
		{"api error", 404, nil, `{"error":{"code":"unknown-region","message":"no region \"x\""}}`,
			APIError{Status: 404, Code: "unknown-region", Message: `no region "x"`}},
		{"miss with retry", 503, h("Retry-After", "3"), `{"error":{"code":"no-location","message":"empty"}}`,
			APIError{Status: 503, Code: "no-location", Message: "empty", RetryAfter: 3 * time.Second}},
		{"retry capped", 503, h("Retry-After", "99999999999"), `{"error":{"code":"paused","message":""}}`,
			APIError{Status: 503, Code: "paused", RetryAfter: 24 * time.Hour}},
		{"retry negative", 503, h("Retry-After", "-4"), `{"error":{"code":"shutdown","message":"bye"}}`,
			APIError{Status: 503, Code: "shutdown", Message: "bye"}},
		{"retry garbage", 503, h("Retry-After", "soon"), ``, APIError{Status: 503}},
		{"retry past date", 503, h("Retry-After", "Mon, 02 Jan 2006 15:04:05 GMT"), ``, APIError{Status: 503}},
		{"plain text", 500, nil, "  internal\nerror\t \x00 ", APIError{Status: 500, Message: "internal error  \uFFFD"}},
		{"no code", 400, nil, `{"error":{"message":"x"}}`, APIError{Status: 400, Message: `{"error":{"message":"x"}}`}},
		{"null error", 400, nil, `{"error":null}`, APIError{Status: 400, Message: `{"error":null}`}},
		{"wrong types", 400, nil, `{"error":{"code":5}}`, APIError{Status: 400, Message: `{"error":{"code":5}}`}},
		{"invalid utf8", 400, nil, "{\"error\":{\"code\":\"bad-request\",\"message\":\"a\xffb\"}}",
			APIError{Status: 400, Code: "bad-request", Message: "a\uFFFDb"}},
		{"empty", 502, nil, ``, APIError{Status: 502}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hd := tt.header
			if hd == nil {
				hd = http.Header{}
			}
			got := DecodeError(tt.status, hd, []byte(tt.body))
			if *got != tt.want {
				t.Errorf("DecodeError(%d, %q) = %+v, want %+v", tt.status, tt.body, *got, tt.want)
			}
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if d := parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Errorf("parseRetryAfter(now+90s) = %v, want 1m30s", d)
	}
}

func TestCleanCuts(t *testing.T) {
	long := strings.Repeat("é", 3000)
	got := clean(long, maxMessageRunes)
	if n := utf8.RuneCountInString(got); n != maxMessageRunes+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("clean(3000 runes) has %d runes (suffix %q), want %d with an ellipsis", n, got[len(got)-3:], maxMessageRunes+1)
	}
}

func TestAPIErrorText(t *testing.T) {
	e := &APIError{Status: 503, Code: "no-location", Message: "empty", RetryAfter: time.Second, Method: "POST", Path: "/v1/x"}
	if got, want := e.Error(), "rtp server: POST /v1/x: 503 no-location: empty (retry after 1s)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &APIError{Status: 502}
	if got, want := e.Error(), "rtp server: 502 Bad Gateway"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func FuzzDecodeError(f *testing.F) {
	f.Add(404, "", `{"error":{"code":"unknown-region","message":"no region"}}`)
	f.Add(503, "3", `{"error":{"code":"no-location","message":"empty"}}`)
	f.Add(503, "Mon, 02 Jan 2006 15:04:05 GMT", ``)
	f.Add(500, "-1", "\x00\xff<html>")
	f.Add(400, "99999999999999999999", `{"error":{"code":5}}`)
	f.Add(400, "", `{"error":{"code":"`+strings.Repeat("x", 200)+`","message":"`+strings.Repeat("\\u0001", 50)+`"}}`)
	f.Fuzz(func(t *testing.T, status int, retry, body string) {
		h := http.Header{}
		h.Set("Retry-After", retry)
		e := DecodeError(status, h, []byte(body))
		if e.Status != status {
			t.Fatalf("Status = %d, want %d", e.Status, status)
		}
		if e.RetryAfter < 0 || e.RetryAfter > maxRetryAfterDelay {
			t.Fatalf("RetryAfter = %v out of [0, 24h]", e.RetryAfter)
		}
		for _, s := range []string{e.Code, e.Message} {
			if !utf8.ValidString(s) {
				t.Fatalf("%q is not valid UTF-8", s)
			}
			if strings.ContainsAny(s, "\x00\n\r\x7f") {
				t.Fatalf("%q holds control characters", s)
			}
		}
		if utf8.RuneCountInString(e.Message) > maxMessageRunes+1 || utf8.RuneCountInString(e.Code) > 65 {
			t.Fatalf("code %d runes, message %d runes: not bounded", utf8.RuneCountInString(e.Code), utf8.RuneCountInString(e.Message))
		}
		_ = e.Error()
	})
}

// FuzzDecodeAnswers feeds arbitrary bytes to the custom JSON decoders of
// answers (Teleport's waitedMs, Stats' latency): an error or a value, never
// a panic; a decoded teleport encodes back to the same.
func FuzzDecodeAnswers(f *testing.F) {
	f.Add([]byte(`{"id":1,"region":"default","world":"world","x":1,"y":2,"z":3,"biome":"plains","sink":"general","waitedMs":1.5}`))
	f.Add([]byte(`{"region":"r","latency":{"count":9,"p50":0.012,"p99Ms":1.5,"max":2000}}`))
	f.Add([]byte(`{"latency":{"p50":"x"}}`))
	f.Add([]byte(`{"latency":null,"waitedMs":1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tp Teleport
		if json.Unmarshal(data, &tp) == nil {
			out, err := json.Marshal(tp)
			if err != nil {
				t.Fatalf("Marshal(%+v) = %v", tp, err)
			}
			var back Teleport
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("Unmarshal(%s) = %v", out, err)
			}
			if back.ID != tp.ID || back.X != tp.X || back.Biome != tp.Biome {
				t.Fatalf("round trip %+v -> %+v", tp, back)
			}
		}
		var s Stats
		_ = json.Unmarshal(data, &s)
	})
}
