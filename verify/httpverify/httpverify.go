package httpverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rtpengine/rtp/verify"
)

// Defaults of Options.
const (
	DefaultTimeout          = 2 * time.Second
	DefaultMaxResponseBytes = 4 << 10
)

// statusSnippet bounds how much of a non-2xx body goes into StatusError.
const statusSnippet = 256

// Options configure a Verifier. The zero value selects every default.
type Options struct {
	// Timeout bounds each call, from sending the request to reading the
	// whole answer. Default DefaultTimeout (2 s). Keep it at or below the
	// registry's timeout (verify.Options.Timeout, also 2 s by default):
	// whichever ends first, the call counts as timed out.
	Timeout time.Duration
	// Client sends the requests. Default: a client of the verifier's own
	// with the default transport settings that does not follow redirects
	// (a redirect is then a non-2xx answer, an error). A given client is
	// used as it is; its own Timeout, if any, also applies.
	Client *http.Client
	// MaxResponseBytes bounds the response body. Default
	// DefaultMaxResponseBytes (4 KiB).
	MaxResponseBytes int64
	// Header is added to every request, typically for authentication
	// (Authorization). The verifier keeps a copy. Content-Type and Accept
	// are always application/json.
	Header http.Header
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("httpverify: Timeout %v is negative", o.Timeout))
	}
	if o.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("httpverify: MaxResponseBytes %d is negative", o.MaxResponseBytes))
	}
	for name, values := range o.Header {
		if !validHeaderName(name) {
			errs = append(errs, fmt.Errorf("httpverify: header name %q is not a valid HTTP token", name))
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				errs = append(errs, fmt.Errorf("httpverify: header %s has a value with a line break or NUL", name))
			}
		}
	}
	return errors.Join(errs...)
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// Errors in the chain of Verify's errors, for callers that branch on them.
// A timeout wraps verify.ErrTimeout and context.DeadlineExceeded; a
// non-2xx answer is a *StatusError.
var (
	ErrResponseTooLarge = errors.New("httpverify: response too large")
	ErrBadResponse      = errors.New("httpverify: malformed response")
)

// StatusError is the error of an answer with a status outside 2xx.
type StatusError struct {
	URL    string // the verifier's URL, password redacted
	Code   int    // e.g. 500
	Status string // e.g. "500 Internal Server Error"
	Body   string // the start of the body, for diagnosis
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("httpverify: POST %s: status %s", e.URL, e.Status)
	if e.Body != "" {
		msg += fmt.Sprintf(": %q", e.Body)
	}
	return msg
}

// Verifier is the HTTP callback verifier. Create one with New; the zero
// value is not usable. A Verifier is immutable and safe for concurrent
// use. With the default client it owns its idle connections (and their
// goroutines); Close releases them.
type Verifier struct {
	name     string
	url      string // as configured
	redacted string // for messages
	timeout  time.Duration
	max      int64
	header   http.Header
	client   *http.Client
	ownsConn bool // client is the verifier's own
}

// The verifier's Verify has the signature of verify.Registry.RegisterAsync.
var _ func(context.Context, verify.Location) (bool, error) = (*Verifier)(nil).Verify

// New returns the verifier named name (its source name: it must satisfy
// verify.Registry's rule, so ttl.yml can give it a TTL) that POSTs to
// rawURL, an absolute http or https URL. It reports every problem with its
// arguments at once.
func New(name, rawURL string, opts Options) (*Verifier, error) {
	var errs []error
	var probe verify.Registry // applies the registry's rule on source names
	if err := probe.Register(name, func(verify.Location) bool { return true }); err != nil {
		errs = append(errs, fmt.Errorf("httpverify: name: %w", err))
	}
	u, err := url.Parse(rawURL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("httpverify: URL: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("httpverify: URL %q: scheme must be http or https", u.Redacted()))
	case u.Host == "":
		errs = append(errs, fmt.Errorf("httpverify: URL %q: no host", u.Redacted()))
	}
	if err := opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	v := &Verifier{
		name: name, url: rawURL, redacted: u.Redacted(),
		timeout: opts.Timeout, max: opts.MaxResponseBytes,
		header: opts.Header.Clone(), client: opts.Client,
	}
	if v.timeout == 0 {
		v.timeout = DefaultTimeout
	}
	if v.max == 0 {
		v.max = DefaultMaxResponseBytes
	}
	if v.client == nil {
		v.client = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
		v.ownsConn = true
	}
	return v, nil
}

// Name returns the verifier's source name.
func (v *Verifier) Name() string { return v.name }

// URL returns the URL the verifier posts to, with any password redacted.
func (v *Verifier) URL() string { return v.redacted }

// Extrinsic reports true: the verifier asks another process, so the
// pipeline must not re-run it when transferring entries between sinks (see
// the package documentation).
func (v *Verifier) Extrinsic() bool { return true }

// Register registers Verify with reg as an async verifier under the
// verifier's name.
func (v *Verifier) Register(reg *verify.Registry) error {
	return reg.RegisterAsync(v.name, v.Verify)
}

// Close releases the idle connections of the verifier's own client (not
// those of a client given in Options). The verifier stays usable.
func (v *Verifier) Close() {
	if v.ownsConn {
		v.client.CloseIdleConnections()
	}
}

type request struct {
	World string `json:"world"`
	X     int64  `json:"x"`
	Y     int64  `json:"y"`
	Z     int64  `json:"z"`
}

// Verify asks the server whether loc is acceptable (see the package
// documentation for the protocol). It returns the answer, or an error when
// there is none; it gives up after Options.Timeout or when ctx ends,
// whichever is first. When ctx ends first, the error wraps ctx.Err().
func (v *Verifier) Verify(ctx context.Context, loc verify.Location) (bool, error) {
	body, err := json.Marshal(request{World: loc.World, X: loc.X, Y: loc.Y, Z: loc.Z})
	if err != nil {
		return false, fmt.Errorf("httpverify: encoding the request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, v.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("httpverify: %w", err)
	}
	for k, vs := range v.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	resp, err := v.client.Do(req)
	if err != nil {
		return false, v.failure(ctx, rctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, min(v.max, statusSnippet)))
		return false, &StatusError{URL: v.redacted, Code: resp.StatusCode, Status: resp.Status, Body: string(snippet)}
	}
	if resp.ContentLength > v.max {
		return false, fmt.Errorf("%w: POST %s: %d bytes announced, limit %d", ErrResponseTooLarge, v.redacted, resp.ContentLength, v.max)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, v.max+1))
	if err != nil {
		return false, v.failure(ctx, rctx, err)
	}
	if int64(len(data)) > v.max {
		return false, fmt.Errorf("%w: POST %s: more than %d bytes", ErrResponseTooLarge, v.redacted, v.max)
	}
	allowed, err := decodeAnswer(data)
	if err != nil {
		return false, fmt.Errorf("%w: POST %s: %v", ErrBadResponse, v.redacted, err)
	}
	return allowed, nil
}

// failure explains an error while sending or reading: the caller's context
// ended, the verifier's timeout passed, or the transport failed.
func (v *Verifier) failure(ctx, rctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("httpverify: POST %s: %w", v.redacted, ctx.Err())
	case rctx.Err() != nil:
		return fmt.Errorf("httpverify: POST %s: no answer within %v: %w (%w)", v.redacted, v.timeout, verify.ErrTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("httpverify: %w", err)
}

// decodeAnswer reads the answer {"allowed": true|false}. The body must be a
// JSON object; "allowed" must be present (matched exactly) and a boolean;
// other members are ignored. Its errors describe the body; the caller
// wraps them in ErrBadResponse.
func decodeAnswer(data []byte) (bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return false, fmt.Errorf("%v (body %.64q)", err, data)
	}
	raw, ok := obj["allowed"]
	if !ok {
		return false, fmt.Errorf("no \"allowed\" member (body %.64q)", data)
	}
	var allowed *bool
	if err := json.Unmarshal(raw, &allowed); err != nil || allowed == nil {
		return false, fmt.Errorf("\"allowed\" is %.32s, want true or false", raw)
	}
	return *allowed, nil
}
