package server

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Timeouts.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
)

// Timeouts bound the connections Serve accepts and its shutdown. A zero
// or negative field selects its default, so the zero value selects every
// default. A Timeouts is a plain value.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (http.Server's
	// ReadHeaderTimeout). Default DefaultReadHeaderTimeout.
	ReadHeader time.Duration
	// Read bounds reading a whole request (http.Server's ReadTimeout).
	// Default DefaultReadTimeout.
	Read time.Duration
	// Write bounds writing a response (http.Server's WriteTimeout).
	// Default DefaultWriteTimeout.
	Write time.Duration
	// Idle is how long an idle keep-alive connection stays open
	// (http.Server's IdleTimeout). Default DefaultIdleTimeout.
	Idle time.Duration
	// Shutdown is how long a stopping Serve waits for the requests in
	// flight. Default DefaultShutdownTimeout.
	Shutdown time.Duration
}

// AdminToken is the admin token (Options.Token): a string that does not
// print. fmt (%v, %+v, %#v, %s, %q), slog, and text or JSON marshalling
// all show "[redacted]", or "" when it is empty. Reveal returns the token
// itself. The zero value is no token.
type AdminToken string

// redacted stands for a token that is set.
const redacted = "[redacted]"

// String returns "[redacted]", or "" for no token.
func (t AdminToken) String() string {
	if t == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer without the token.
func (t AdminToken) GoString() string { return fmt.Sprintf("server.AdminToken(%q)", t.String()) }

// LogValue implements slog.LogValuer without the token.
func (t AdminToken) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalText implements encoding.TextMarshaler without the token, so
// that Options marshalled to JSON do not leak it.
func (t AdminToken) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Reveal returns the token.
func (t AdminToken) Reveal() string { return string(t) }
