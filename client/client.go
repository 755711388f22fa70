// Package client is a Go client of the rtp HTTP API (version 1): teleports,
// player events, network reservations, claims, stats and the admin routes.
//
// Every method takes a context that bounds the whole call. A non-2xx answer
// is returned as an *APIError carrying the HTTP status, the API's error code
// (the engine's reason, such as "no-location") and, for 503 answers, the
// Retry-After the server asked for. Response bodies are read with a bound
// (Options.MaxResponseBytes), so a misbehaving server cannot make the client
// allocate without limit.
//
// The answers are package api's types, the documented wire shapes:
// Teleport, Reservation, Stats and their parts are aliases of them (so a
// value of either package is the same type), with the durations as float
// milliseconds under their Ms fields; methods such as Teleport.Waited and
// Latency.P99 give them as time.Duration. Keys a newer server adds are
// skipped when decoding; StatsRaw returns the stats answer as it was
// written.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxResponseBytes bounds a response body the client decodes.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultMaxExportBytes bounds a memory export copied to a writer.
	DefaultMaxExportBytes = 1 << 30
	// maxErrorBytes bounds the error body of a non-2xx answer.
	maxErrorBytes = 64 << 10
	// maxDrainBytes is how much of an unread body is drained so the
	// connection can be reused; a longer body closes the connection.
	maxDrainBytes = 64 << 10
)

// ErrTooLarge is in the chain of the error returned when a response body is
// larger than the client's bound.
var ErrTooLarge = errors.New("client: response body too large")

// Options configure a Client. The zero value selects every default.
type Options struct {
	// Token is the admin token, sent as "Authorization: Bearer <token>"
	// with every request. Default "": no Authorization header.
	Token string
	// HTTPClient sends the requests. Default http.DefaultClient. Use one
	// whose Transport keeps enough idle connections per host
	// (MaxIdleConnsPerHost) for the concurrency you use.
	HTTPClient *http.Client
	// MaxResponseBytes bounds every response body the client decodes.
	// Default DefaultMaxResponseBytes (32 MiB).
	MaxResponseBytes int64
	// MaxExportBytes bounds the memory export ExportMemory copies.
	// Default DefaultMaxExportBytes (1 GiB).
	MaxExportBytes int64
	// UserAgent is sent as the User-Agent header. Default "rtp-client".
	UserAgent string
}

// Client talks to one rtp server. Make one with New; the zero value is not
// usable. A Client is safe for concurrent use by any number of goroutines.
type Client struct {
	base    *url.URL
	hc      *http.Client
	auth    string
	ua      string
	maxBody int64
	maxExp  int64
	err     error // a bad base URL, returned by every call
}

// New returns a client of the server at baseURL (such as
// "http://127.0.0.1:8080"; a path prefix is kept). It never fails: a
// baseURL that is not an absolute http or https URL makes Err, and every
// call, return an error saying so.
func New(baseURL string, opts Options) *Client {
	c := &Client{hc: opts.HTTPClient, ua: opts.UserAgent,
		maxBody: opts.MaxResponseBytes, maxExp: opts.MaxExportBytes}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	if c.ua == "" {
		c.ua = "rtp-client"
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxResponseBytes
	}
	if c.maxExp <= 0 {
		c.maxExp = DefaultMaxExportBytes
	}
	if opts.Token != "" {
		c.auth = "Bearer " + opts.Token
	}
	c.base, c.err = parseBase(baseURL)
	return c
}

func parseBase(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return &url.URL{}, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &url.URL{}, fmt.Errorf("client: base URL %q: the scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return &url.URL{}, fmt.Errorf("client: base URL %q has no host", baseURL)
	}
	if u.User != nil {
		return &url.URL{}, errors.New("client: base URL: user information is not supported (use Options.Token)")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

// Err returns the error of a bad base URL given to New, or nil.
func (c *Client) Err() error { return c.err }

// BaseURL returns the server URL the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// path joins escaped path segments under the base URL's path.
func (c *Client) path(segs ...string) string {
	var b strings.Builder
	if c.base != nil {
		b.WriteString(c.base.EscapedPath())
	}
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// do sends one request; body, when non-nil, is encoded as JSON. It returns
// the response when its status is want, or an *APIError. The caller closes
// the response body (use c.finish).
func (c *Client) do(ctx context.Context, method, path string, body any, want ...int) (_ *http.Response, err error) {
	if c.err != nil {
		return nil, c.err
	}
	u := *c.base
	u.RawPath = path
	if u.Path, err = url.PathUnescape(path); err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encode: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	// Mutating routes want JSON or this header (which no web page can
	// send cross-site without the server's consent): requests without a
	// body carry it.
	req.Header.Set("X-RTP-Request", "1")
	req.Header.Set("User-Agent", c.ua)
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return resp, nil
		}
	}
	data, rerr := readBounded(resp.Body, maxErrorBytes)
	finish(resp)
	ae := DecodeError(resp.StatusCode, resp.Header, data)
	if rerr != nil && !errors.Is(rerr, ErrTooLarge) {
		return nil, fmt.Errorf("client: %s %s: %w (reading the body: %v)", method, path, ae, rerr)
	}
	ae.Method, ae.Path = method, path
	return nil, ae
}

// call sends a request and decodes a JSON answer of status want into out
// (out nil: the body is discarded).
func (c *Client) call(ctx context.Context, method, path string, body, out any, want int) error {
	resp, err := c.do(ctx, method, path, body, want)
	if err != nil {
		return err
	}
	defer finish(resp)
	if out == nil {
		return nil
	}
	data, err := readBounded(resp.Body, c.maxBody)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// readBounded reads all of r, failing with ErrTooLarge past limit bytes (the
// first limit bytes are returned with it).
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > limit {
		return data[:limit], fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, limit)
	}
	return data, nil
}

// finish drains a little of what is left of a body, so the keep-alive
// connection can be reused, and closes it.
func finish(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrainBytes)
	resp.Body.Close()
}

// ms converts a duration to the API's whole milliseconds.
func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

func itoa(id uint64) string { return strconv.FormatUint(id, 10) }
