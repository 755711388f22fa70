package server

import (
	"crypto/sha256"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/rtpengine/rtp/internal/hostname"
)

// This file holds the checks that keep a web page from driving the API:
// the request-shape rule of the mutating routes (cross-site request
// forgery), the allowed hosts (DNS rebinding), and the redaction of what a
// request may carry that the server must not repeat.
//
// Design note: a browser sends a cross-site request without asking first
// (a "simple" request: a form post, or a fetch in no-cors mode) only with a
// method among GET, HEAD and POST, no header beyond a short safelist, and a
// Content-Type of text/plain, application/x-www-form-urlencoded or
// multipart/form-data. Asking for application/json or a custom header on
// every mutating route therefore makes the browser send a CORS preflight
// (OPTIONS) first, which this server never approves: it sends no
// Access-Control-Allow-* header on any answer, so the real request is never
// sent. Checking Origin or Referer instead would depend on headers that
// some clients omit; the shape rule needs nothing from a well-behaved
// client but one fixed header.
//
// DNS rebinding defeats that rule: a page whose own host name resolves to
// 127.0.0.1 is same-origin with the service and may send any header. Its
// requests, though, carry the page's host name in Host, which the host
// check refuses.

// HeaderRequest is the header that marks a request as sent by a program
// rather than by a web page: a mutating request without a JSON
// Content-Type needs it (any non-empty value, such as "1").
const HeaderRequest = "X-RTP-Request"

// mutating reports whether method changes state: such a request must pass
// checkRequestShape.
func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// jsonContentType reports whether h has a Content-Type header and whether
// it is exactly one application/json media type, with parameters allowed
// but a charset other than UTF-8 refused (JSON is UTF-8).
func jsonContentType(h http.Header) (present, ok bool) {
	vs := h.Values("Content-Type")
	if len(vs) == 0 {
		return false, false
	}
	if len(vs) > 1 {
		return true, false
	}
	mt, params, err := mime.ParseMediaType(vs[0])
	if err != nil || mt != "application/json" {
		return true, false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return true, false
	}
	return true, true
}

// checkRequestShape lets a mutating request through when it has a JSON
// Content-Type or a non-empty HeaderRequest header: a browser sends
// neither cross-site without a preflight.
func checkRequestShape(r *http.Request) error {
	if r.Header.Get(HeaderRequest) != "" {
		return nil
	}
	if _, ok := jsonContentType(r.Header); ok {
		return nil
	}
	return unsupportedMediaType("a " + r.Method + " request needs Content-Type: application/json, or the header " + HeaderRequest + ": 1 when it has no body")
}

func unsupportedMediaType(msg string) *apiError {
	return &apiError{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType, msg: msg}
}

// hostPolicy is the set of Host names a server answers. The zero value
// allows any host.
type hostPolicy struct {
	restricted bool            // false: any host
	names      map[string]bool // normalised names (hostname.Normalize)
	loopback   bool            // also localhost, *.localhost and loopback IP literals
}

// anyHost is the policy of an empty AllowedHosts on a listener that is not
// on loopback.
var anyHost = &hostPolicy{}

// loopbackHosts is the policy of an empty AllowedHosts on a loopback
// listener.
var loopbackHosts = &hostPolicy{restricted: true, loopback: true}

// newHostPolicy checks and normalises Options.AllowedHosts. An empty list
// gives nil: the caller picks the default. A list widens the loopback
// default: the names of this machine (localhost, loopback addresses) stay
// allowed beside the listed ones, since no page of another site can make a
// browser send them (DNS rebinding needs a name the attacker controls), and
// local tools such as `rtp stats` use them.
func newHostPolicy(hosts []string) (*hostPolicy, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	p := &hostPolicy{restricted: true, loopback: true, names: make(map[string]bool, len(hosts))}
	anyName := false
	for _, h := range hosts {
		if err := hostname.Check(h); err != nil {
			return nil, fmt.Errorf("server: AllowedHosts: %w", err)
		}
		if h == "*" {
			anyName = true
			continue
		}
		p.names[hostname.Normalize(h)] = true
	}
	if anyName {
		return anyHost, nil
	}
	return p, nil
}

// hostOnly returns the host of host[:port].
func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}

// allows reports whether p allows the Host of a request (host[:port]).
func (p *hostPolicy) allows(hostport string) bool {
	if !p.restricted {
		return true
	}
	h := hostname.Normalize(hostOnly(hostport))
	if h == "" {
		return false
	}
	return p.names[h] || p.loopback && hostname.IsLoopback(h)
}

// hostGuard serves with h the requests whose Host p allows, and answers
// the others 421 misdirected, counted as unmatched.
func (s *Server) hostGuard(p *hostPolicy, h http.Handler) http.Handler {
	m := s.metrics.route(unmatchedRoute)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.allows(r.Host) {
			h.ServeHTTP(w, r)
			return
		}
		start := s.opts.Clock()
		s.writeError(w, r, misdirected())
		m.observe(http.StatusMisdirectedRequest, s.opts.Clock().Sub(start))
	})
}

// redact returns text with what r carries as a secret cut to a short
// prefix: the network token of its path and the credentials of its
// Authorization header. A log line of a failed request goes through it,
// since an error or a panic may quote what it was given.
func redact(r *http.Request, text string) string {
	secrets := []string{r.PathValue("token")}
	if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok {
		secrets = append(secrets, strings.TrimSpace(cred))
	}
	for _, sec := range secrets {
		if len(sec) > echoPrefix {
			text = strings.ReplaceAll(text, sec, strings.ToValidUTF8(sec[:echoPrefix], "")+"…")
		}
	}
	return text
}

// misdirected is the answer to a request whose Host the server does not
// serve.
func misdirected() *apiError {
	return &apiError{status: http.StatusMisdirectedRequest, code: CodeMisdirected,
		msg: "this server does not answer requests for that host name; use one it is configured for (server.Options.AllowedHosts; on loopback by default localhost or a loopback address)"}
}

// tokenDigest is the SHA-256 digest of an admin token.
type tokenDigest [sha256.Size]byte

// SetToken replaces the admin token: from its return on, requests need
// "Authorization: Bearer <tok>" where they needed the old token, and the
// old token is refused; "" removes the token (those routes are then open).
// It is safe to call while the server serves; a request already past its
// token check is not checked again.
func (s *Server) SetToken(tok string) {
	if tok == "" {
		s.token.Store(nil)
		return
	}
	d := tokenDigest(sha256.Sum256([]byte(tok)))
	s.token.Store(&d)
}

// maxEchoSegment is the longest path segment the server repeats in a
// message or a log line; a longer one, such as a network token, is cut to
// echoPrefix bytes.
const (
	maxEchoSegment = 24
	echoPrefix     = 6
)

// safePath returns p with every segment longer than maxEchoSegment bytes
// cut to its first echoPrefix bytes and "…": what the server may repeat of
// a path that can hold a network token.
func safePath(p string) string {
	if len(p) <= maxEchoSegment {
		return p
	}
	segs := strings.Split(p, "/")
	for i, sg := range segs {
		if len(sg) > maxEchoSegment {
			segs[i] = strings.ToValidUTF8(sg[:echoPrefix], "") + "…"
		}
	}
	return strings.Join(segs, "/")
}

// clientAddr returns the IP address of the peer that sent r (without its
// port), which bounds the open handouts one caller holds. It is the
// connection's address: a proxy in front of the server counts as one
// client.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
