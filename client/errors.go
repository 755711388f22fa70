package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rtpengine/rtp/api"
)

// Error codes of the API (the "code" of an error body). Those that equal an
// engine reason have the same spelling as the engine.Reason* constants.
const (
	CodeBadRequest    = "bad-request"
	CodeUnauthorized  = "unauthorized"
	CodeTooLarge      = "too-large"
	CodeUnknownRegion = "unknown-region"
	CodeUnknownWorld  = "unknown-world"
	CodeUnknownID     = "unknown-id"
	CodeUnknownToken  = "unknown-token"
	CodeUnknownClaim  = "unknown-claim"
	CodeUnknownSink   = "unknown-sink"
	CodeInvalid       = "invalid"
	CodeInvalidToken  = "invalid-token"
	CodeSinkDisabled  = "sink-disabled"
	CodeTokenRedeemed = "token-redeemed"
	CodeRestartNeeded = "restart-needed"
	CodeLeaseExpired  = "lease-expired"
	CodeNoLocation    = "no-location"
	// CodeRegionExhausted: the region has no safe place left (every place
	// rejected, nothing cached); answered at once, until the world changes
	// or the rejections expire.
	CodeRegionExhausted = "region-exhausted"
	// CodeLeasesUnavailable: the network lease store (a fleet's, or a
	// single node's database) could not be reached or failed; nothing was
	// handed out.
	CodeLeasesUnavailable = "leases-unavailable"
	// CodeGroupTooLarge: a group teleport named more players than the
	// region's group size (sinks.group.max_size).
	CodeGroupTooLarge  = "group-too-large"
	CodePaused         = "paused"
	CodeShutdown       = "shutdown"
	CodeInternal       = "internal"
	CodeNotReady       = "not-ready"
	maxMessageRunes    = 1024
	maxRetryAfterDelay = 24 * time.Hour
)

// APIError is a non-2xx answer of the server: a plain value, safe to share
// once returned.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the API's error code (one of the Code constants, or another
	// the server sent); "" when the body was not an API error body.
	Code string
	// Message is the server's explanation; for a body that was not an API
	// error body, the start of the body's text.
	Message string
	// RetryAfter is the delay the server's Retry-After header asked for
	// (whole seconds or an HTTP date), 0 when absent or unreadable.
	RetryAfter time.Duration
	// Method and Path name the request that failed (set by the Client).
	Method, Path string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("rtp server")
	if e.Method != "" {
		fmt.Fprintf(&b, ": %s %s", e.Method, e.Path)
	}
	fmt.Fprintf(&b, ": %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Code returns the API error code of err (an *APIError in its chain), or
// "" when err is not an answer of the server.
func Code(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// DecodeError builds the *APIError of an answer from its status, headers
// and (already bounded) body. It never fails: a body that is not an API
// error body becomes the Message (cleaned to printable text and cut to a
// bounded length).
func DecodeError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RetryAfter: parseRetryAfter(h.Get("Retry-After"), time.Now())}
	var eb api.Error
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Code = clean(eb.Error.Code, 64)
		e.Message = clean(eb.Error.Message, maxMessageRunes)
		return e
	}
	e.Message = clean(string(body), 256)
	return e
}

// parseRetryAfter reads a Retry-After header: whole seconds, or an HTTP
// date (relative to now). Absent, unreadable, negative or past values give
// 0; values are capped at a day.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfterDelay/time.Second) {
			return maxRetryAfterDelay
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now).Round(time.Second)
	}
	return min(max(d, 0), maxRetryAfterDelay)
}

// clean makes s printable on one line: invalid UTF-8 and control
// characters become U+FFFD or spaces, surrounding space is trimmed and the
// text is cut to n runes.
func clean(s string, n int) string {
	var b strings.Builder
	runes := 0
	for _, r := range strings.TrimSpace(s) {
		if runes == n {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
		runes++
	}
	return b.String()
}
