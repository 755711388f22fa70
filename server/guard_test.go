package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/rtpengine/rtp/internal/hostname"
)

// httpAnswer sends req to a real HTTP server and returns the answer.
func httpAnswer(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// newHTTPRequest makes a request of base+path with body ("" for none) and
// header (name, value pairs), and nothing else: no Content-Type unless
// header says so.
func newHTTPRequest(t *testing.T, method, url, body string, header ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// TestRequestShape checks over HTTP that a mutating request needs a JSON
// Content-Type or the X-RTP-Request header, with a token configured or
// not, and that a refused request never reaches the engine.
func TestRequestShape(t *testing.T) {
	for _, token := range []string{"", testToken} {
		f, s := newFakeServer(t, Options{Token: AdminToken(token)})
		hs := httptest.NewServer(s.Handler())
		defer hs.Close()
		// The spec describes every answer; a request without Content-Type
		// served is beyond what it can say (a body of no media type).
		send := func(req *http.Request, body string) answer {
			t.Helper()
			a := httpAnswer(t, req)
			if a.status >= 300 {
				checkSpec(t, req, []byte(body), a.status, a.header, a.body)
			}
			return a
		}
		var auth []string
		if token != "" {
			auth = []string{"Authorization", "Bearer " + token}
		}
		tp := "/v1/regions/r/teleports"
		body := `{"player":"alice","waitMs":0}`
		for _, tc := range []struct {
			name, method, path, body string
			header                   []string
			ok                       bool
		}{
			{"teleport without Content-Type", "POST", tp, body, nil, false},
			{"teleport as text/plain", "POST", tp, body, []string{"Content-Type", "text/plain"}, false},
			{"teleport as text/plain with charset", "POST", tp, body, []string{"Content-Type", "text/plain; charset=utf-8"}, false},
			{"teleport as a form", "POST", tp, body, []string{"Content-Type", "application/x-www-form-urlencoded"}, false},
			{"teleport as multipart", "POST", tp, body, []string{"Content-Type", "multipart/form-data; boundary=x"}, false},
			{"teleport as +json", "POST", tp, body, []string{"Content-Type", "application/merge-patch+json"}, false},
			{"teleport as JSON in UTF-16", "POST", tp, body, []string{"Content-Type", "application/json; charset=utf-16"}, false},
			{"teleport as a malformed type", "POST", tp, body, []string{"Content-Type", "application/json; ;"}, false},
			{"teleport as JSON", "POST", tp, body, []string{"Content-Type", "application/json"}, true},
			{"teleport as JSON with charset", "POST", tp, body, []string{"Content-Type", "Application/JSON; Charset=UTF-8"}, true},
			{"teleport with X-RTP-Request and no Content-Type", "POST", tp, body, []string{HeaderRequest, "1"}, true},
			{"teleport with X-RTP-Request as text/plain", "POST", tp, body, []string{HeaderRequest, "1", "Content-Type", "text/plain"}, false},
			{"teleport with an empty X-RTP-Request", "POST", tp, body, []string{HeaderRequest, ""}, false},
			{"complete without headers", "POST", "/v1/teleports/1/complete", "", nil, false},
			{"complete as text/plain", "POST", "/v1/teleports/1/complete", "", []string{"Content-Type", "text/plain"}, false},
			{"complete with X-RTP-Request", "POST", "/v1/teleports/1/complete", "", []string{HeaderRequest, "1"}, true},
			{"complete with any X-RTP-Request", "POST", "/v1/teleports/1/complete", "", []string{HeaderRequest, "yes"}, true},
			{"complete as JSON", "POST", "/v1/teleports/1/complete", "", []string{"Content-Type", "application/json"}, true},
			{"scan pause without headers", "POST", "/v1/admin/regions/r/scan/pause", "", nil, false},
			{"scan pause with X-RTP-Request", "POST", "/v1/admin/regions/r/scan/pause", "", []string{HeaderRequest, "1"}, true},
			{"join without headers", "POST", "/v1/regions/r/players/alice/join", "", nil, false},
			{"join as a form", "POST", "/v1/regions/r/players/alice/join", "", []string{"Content-Type", "application/x-www-form-urlencoded"}, false},
			{"join with X-RTP-Request", "POST", "/v1/regions/r/players/alice/join", "", []string{HeaderRequest, "1"}, true},
			{"cancel without headers", "DELETE", "/v1/teleports/1", "", nil, false},
			{"cancel with X-RTP-Request", "DELETE", "/v1/teleports/1", "", []string{HeaderRequest, "1"}, true},
			{"queue without headers", "PUT", "/v1/regions/r/players/alice/queue", "", nil, false},
			{"queue with X-RTP-Request", "PUT", "/v1/regions/r/players/alice/queue", "", []string{HeaderRequest, "1"}, true},
			{"reload without headers", "POST", "/v1/admin/reload", "", nil, false},
		} {
			what := tc.name + " (token " + map[bool]string{true: "set", false: "unset"}[token != ""] + ")"
			before := f.callCount()
			a := send(newHTTPRequest(t, tc.method, hs.URL+tc.path, tc.body, append(tc.header, auth...)...), tc.body)
			if tc.ok {
				if a.status >= 300 {
					t.Errorf("%s = %d %s, want it served", what, a.status, a.body)
				}
				continue
			}
			checkErrorAnswer(t, what, a, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
			if msg := a.errMessage(); !strings.Contains(msg, "application/json") {
				t.Errorf("%s: message %q does not say what to send", what, msg)
			}
			if f.callCount() != before {
				t.Errorf("%s reached the engine (%s)", what, f.lastCall())
			}
		}
		// Every mutating route, bodyless, without either header: 415; the
		// reading routes: served.
		for _, rt := range routes {
			c := callOf(rt)
			a := send(newHTTPRequest(t, c.method, hs.URL+c.path, c.body, auth...), c.body)
			if mutating(rt.method) {
				checkErrorAnswer(t, rt.pattern()+" without headers", a, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
				if !strings.Contains(a.errMessage(), HeaderRequest) {
					t.Errorf("%s: message %q does not name %s", rt.pattern(), a.errMessage(), HeaderRequest)
				}
			} else if a.status != http.StatusOK {
				t.Errorf("%s without headers = %d %s, want 200", rt.pattern(), a.status, a.body)
			}
		}
	}
}

// TestNoCORS checks that no answer carries a CORS header and that a
// preflight is refused.
func TestNoCORS(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	noCORS := func(what string, a answer) {
		t.Helper()
		for k := range a.header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: answer has %s: %s", what, k, a.header.Get(k))
			}
		}
	}
	for _, path := range []string{"/v1/regions/r/teleports", "/v1/teleports/1/complete", "/v1/admin/reload", "/v1/regions", "/nowhere"} {
		a := httpAnswer(t, newHTTPRequest(t, "OPTIONS", hs.URL+path, "",
			"Origin", "https://evil.example", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "content-type, x-rtp-request"))
		checkErrorAnswer(t, "OPTIONS "+path, a, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
		if _, ok := a.header["Allow"]; !ok {
			t.Errorf("OPTIONS %s: 405 without Allow", path)
		}
		noCORS("OPTIONS "+path, a)
	}
	for _, rt := range routes {
		c := callOf(rt)
		a := httpAnswer(t, newHTTPRequest(t, c.method, hs.URL+c.path, c.body, "Origin", "https://evil.example", "Content-Type", "application/json"))
		noCORS(rt.pattern(), a)
	}
}

// TestAllowedHosts checks the Host check of a configured list.
func TestAllowedHosts(t *testing.T) {
	f, s := newFakeServer(t, Options{AllowedHosts: []string{"RTP.example.com", "::1", "10.0.0.5", "[fe80::1]"}})
	h := s.Handler()
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"rtp.example.com", true},
		{"rtp.example.com:8080", true},
		{"RTP.Example.COM:8080", true},
		{"rtp.example.com.", true},
		{"[::1]:8080", true},
		{"[::1]", true},
		{"[0:0::1]:80", true},
		{"10.0.0.5:8080", true},
		{"[fe80::1]:1", true},
		{"evil.example", false},
		{"evil.example:8080", false},
		{"rtp.example.com.evil.example", false},
		{"127.0.0.1:8080", true}, // a list widens the loopback names
		{"localhost", true},
		{"localhost.evil.example", false},
		{"", false},
	} {
		for _, rc := range []routeCall{
			{"GET", "/healthz", ""},
			{"POST", "/v1/admin/regions/r/scan/pause", ""},
			{"GET", "/nowhere", ""},
		} {
			req := httptest.NewRequest(rc.method, rc.path, nil)
			req.Host = tc.host
			req.Header.Set(HeaderRequest, "1")
			before := f.callCount()
			a := doRequest(h, req)
			what := rc.method + " " + rc.path + " for host " + tc.host
			if tc.ok {
				if a.status == http.StatusMisdirectedRequest {
					t.Errorf("%s = %d %s, want it served", what, a.status, a.body)
				}
				continue
			}
			checkErrorAnswer(t, what, a, http.StatusMisdirectedRequest, CodeMisdirected)
			if f.callCount() != before {
				t.Errorf("%s reached the engine", what)
			}
		}
	}
	for _, bad := range [][]string{{"rtp.example.com:8080"}, {"a/b"}, {""}, {"http://rtp.example.com"}, {"a b"}} {
		if _, err := New(f, Options{AllowedHosts: bad}); err == nil || !strings.HasPrefix(err.Error(), "server: ") {
			t.Errorf("New with AllowedHosts %q = %v, want a server: error", bad, err)
		}
	}
	// Handler alone, without a list, answers any host.
	_, open := newFakeServer(t, Options{})
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "evil.example"
	if a := doRequest(open.Handler(), req); a.status != http.StatusOK {
		t.Errorf("no list, Handler alone: host evil.example = %d %s, want 200", a.status, a.body)
	}
}

// TestServeLoopbackHosts checks the default of a loopback listener: only
// loopback names, unless the list says otherwise.
func TestServeLoopbackHosts(t *testing.T) {
	get := func(base, host string) int {
		t.Helper()
		req := newHTTPRequest(t, "POST", base+"/v1/admin/regions/r/scan/pause", "", HeaderRequest, "1")
		req.Host = host
		return httpAnswer(t, req).status
	}
	_, s := newFakeServer(t, Options{})
	base, _ := serve(t, s, Timeouts{})
	port := base[strings.LastIndexByte(base, ':'):]
	for _, tc := range []struct {
		host string
		want int
	}{
		{"127.0.0.1" + port, http.StatusNoContent},
		{"localhost" + port, http.StatusNoContent},
		{"LOCALHOST", http.StatusNoContent},
		{"rtp.localhost" + port, http.StatusNoContent},
		{"[::1]" + port, http.StatusNoContent},
		{"127.0.0.2", http.StatusNoContent},
		{"evil.example" + port, http.StatusMisdirectedRequest},
		{"localhost.evil.example", http.StatusMisdirectedRequest},
		{"10.0.0.1" + port, http.StatusMisdirectedRequest},
	} {
		if got := get(base, tc.host); got != tc.want {
			t.Errorf("loopback default, host %q = %d, want %d", tc.host, got, tc.want)
		}
	}
	// The default is the listener's: Handler alone still answers any host.
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "evil.example"
	if a := doRequest(s.Handler(), req); a.status != http.StatusOK {
		t.Errorf("Handler while Serve runs on loopback: host evil.example = %d, want 200", a.status)
	}
	// A refused host answers the API's error and is counted.
	a := httpAnswer(t, func() *http.Request {
		r := newHTTPRequest(t, "GET", base+"/v1/regions", "")
		r.Host = "evil.example"
		return r
	}())
	checkErrorAnswer(t, "loopback default, host evil.example", a, http.StatusMisdirectedRequest, CodeMisdirected)
	if m := string(do(t, s.Handler(), "GET", "/metrics", "").body); !strings.Contains(m, `rtp_http_requests_total{code="421",route="unmatched"} 4`) {
		t.Errorf("the 4 refused hosts are not counted:\n%s", m)
	}

	_, any := newFakeServer(t, Options{AllowedHosts: []string{"*"}})
	base, _ = serve(t, any, Timeouts{})
	if got := get(base, "evil.example"); got != http.StatusNoContent {
		t.Errorf(`AllowedHosts "*" on loopback: host evil.example = %d, want 204`, got)
	}
	_, listed := newFakeServer(t, Options{AllowedHosts: []string{"rtp.example.com"}})
	base, _ = serve(t, listed, Timeouts{})
	if got := get(base, "rtp.example.com"); got != http.StatusNoContent {
		t.Errorf("listed host on loopback = %d, want 204", got)
	}
	for _, host := range []string{"localhost", "127.0.0.1" + port, "[::1]"} {
		if got := get(base, host); got != http.StatusNoContent {
			t.Errorf("a list widens the loopback default: host %s = %d, want 204", host, got)
		}
	}
	if got := get(base, "evil.example"); got != http.StatusMisdirectedRequest {
		t.Errorf("listed on loopback: host evil.example = %d, want 421", got)
	}
}

// TestSetToken checks that SetToken replaces the token at once, and that
// "" opens the routes.
func TestSetToken(t *testing.T) {
	_, s := newFakeServer(t, Options{Token: "old-token-0123456789"})
	h := s.Handler()
	pause := func(tok string) int {
		t.Helper()
		return do(t, h, "POST", "/v1/admin/regions/r/scan/pause", "", "Authorization", "Bearer "+tok).status
	}
	if pause("old-token-0123456789") != 204 || pause("new-token-0123456789") != 401 {
		t.Fatal("before SetToken: want the old token only")
	}
	s.SetToken("new-token-0123456789")
	if got := pause("new-token-0123456789"); got != 204 {
		t.Errorf("new token after SetToken = %d, want 204", got)
	}
	if got := pause("old-token-0123456789"); got != 401 {
		t.Errorf("old token after SetToken = %d, want 401", got)
	}
	s.SetToken("")
	if got := do(t, h, "POST", "/v1/admin/regions/r/scan/pause", "").status; got != 204 {
		t.Errorf("no token after SetToken(\"\") = %d, want 204", got)
	}
	// SetToken while requests run (for the race detector).
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				if i == 0 {
					s.SetToken(strings.Repeat("t", j%3))
					continue
				}
				do(t, h, "POST", "/v1/admin/regions/r/scan/pause", "", "Authorization", "Bearer tt")
			}
		})
	}
	wg.Wait()
}

// TestReloadRotatesToken checks over HTTP that a reload applies the token
// ReloadToken reads: the new one accepted and the old refused after, the
// old kept when it cannot be read.
func TestReloadRotatesToken(t *testing.T) {
	const oldTok, newTok = "old-token-0123456789", "new-token-0123456789"
	var (
		mu        sync.Mutex
		file      = oldTok
		fileErr   error
		reloadErr error
		reads     atomic.Int32
	)
	var log lockedBuffer
	_, s := newFakeServer(t, Options{
		Token:  oldTok,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Reload: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			return reloadErr
		},
		ReloadToken: func() (string, error) {
			reads.Add(1)
			mu.Lock()
			defer mu.Unlock()
			return file, fileErr
		},
	})
	hs := httptest.NewServer(specChecked(t, s.Handler()))
	defer hs.Close()
	call := func(path, tok string) answer {
		t.Helper()
		return httpAnswer(t, newHTTPRequest(t, "POST", hs.URL+path, "", HeaderRequest, "1", "Authorization", "Bearer "+tok))
	}
	pause := func(tok string) int { t.Helper(); return call("/v1/admin/regions/r/scan/pause", tok).status }

	if got := pause(oldTok); got != 204 {
		t.Fatalf("old token before the rotation = %d, want 204", got)
	}
	if got := pause(newTok); got != 401 {
		t.Fatalf("new token before the rotation = %d, want 401", got)
	}

	// A reload that fails does not read the token.
	mu.Lock()
	file, reloadErr = newTok, errors.New("boom")
	mu.Unlock()
	if a := call("/v1/admin/reload", oldTok); a.status != 500 {
		t.Errorf("failing reload = %d %s, want 500", a.status, a.body)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("a failed reload read the token %d times", n)
	}
	if pause(oldTok) != 204 || pause(newTok) != 401 {
		t.Error("a failed reload changed the token")
	}

	// The rotation.
	mu.Lock()
	reloadErr = nil
	mu.Unlock()
	if a := call("/v1/admin/reload", oldTok); a.status != 204 {
		t.Fatalf("reload = %d %s, want 204", a.status, a.body)
	}
	if got := pause(newTok); got != 204 {
		t.Errorf("new token after the rotation = %d, want 204", got)
	}
	if got := pause(oldTok); got != 401 {
		t.Errorf("old token after the rotation = %d, want 401", got)
	}
	if !strings.Contains(log.String(), "replaced the admin token") {
		t.Errorf("the rotation is not logged:\n%s", log.String())
	}

	// A token that cannot be read: the old one stays, the answer says so
	// without the hook's detail.
	const detail = "token file unreadable: SECRET-DETAIL"
	mu.Lock()
	file, fileErr = "", errors.New(detail)
	mu.Unlock()
	a := call("/v1/admin/reload", newTok)
	checkErrorAnswer(t, "reload with an unreadable token", a, 500, CodeInternal)
	if msg := a.errMessage(); !strings.Contains(msg, "admin token") || !strings.Contains(msg, "previous token stays") {
		t.Errorf("reload with an unreadable token: message %q does not say so", msg)
	}
	if strings.Contains(string(a.body), "SECRET-DETAIL") {
		t.Errorf("the answer repeats the hook's error: %s", a.body)
	}
	if !strings.Contains(log.String(), "SECRET-DETAIL") {
		t.Errorf("the hook's error is not logged:\n%s", log.String())
	}
	if pause(newTok) != 204 || pause(oldTok) != 401 {
		t.Error("a token that cannot be read changed the token")
	}

	// A reload to no token opens the routes, with a warning.
	mu.Lock()
	file, fileErr = "", nil
	mu.Unlock()
	if a := call("/v1/admin/reload", newTok); a.status != 204 {
		t.Fatalf("reload to no token = %d %s", a.status, a.body)
	}
	if got := httpAnswer(t, newHTTPRequest(t, "POST", hs.URL+"/v1/admin/regions/r/scan/pause", "", HeaderRequest, "1")).status; got != 204 {
		t.Errorf("no token after the reload = %d, want 204", got)
	}
	if !strings.Contains(log.String(), "removed the admin token") {
		t.Errorf("removing the token is not logged as a warning:\n%s", log.String())
	}
	for _, tok := range []string{oldTok, newTok} {
		if strings.Contains(log.String(), tok) {
			t.Errorf("the log holds the token %q:\n%s", tok, log.String())
		}
	}
}

// TestSecretsNotEchoed checks that neither a bearer token (right or
// wrong), nor a header value, nor a network token in a path, shows in an
// answer or the log; a network token only as a short prefix.
func TestSecretsNotEchoed(t *testing.T) {
	const wrong = "WRONG-bearer-secret-7f3a9c"
	const netTok = "NETTOKEN0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN" // the length of a real one
	var log lockedBuffer
	f, s := newFakeServer(t, Options{
		Token:  testToken,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	var answers []answer
	send := func(method, path, body string, header ...string) answer {
		t.Helper()
		a := httpAnswer(t, newHTTPRequest(t, method, hs.URL+path, body, header...))
		answers = append(answers, a)
		return a
	}
	for _, rt := range routes {
		if !rt.needsAuth() {
			continue
		}
		c := callOf(rt)
		for _, h := range []string{"Bearer " + wrong, "Basic " + wrong, wrong} {
			a := send(c.method, c.path, c.body, HeaderRequest, "1", "Content-Type", "application/json", "Authorization", h)
			checkErrorAnswer(t, rt.pattern()+" with a wrong token", a, 401, CodeUnauthorized)
		}
	}
	// A header value in a refused Content-Type.
	a := send("POST", "/v1/regions/r/teleports", `{"player":"a"}`, HeaderRequest, "1", "Authorization", "Bearer "+testToken, "Content-Type", "text/plain; x="+wrong)
	checkErrorAnswer(t, "teleport as text/plain", a, 415, CodeUnsupportedMediaType)
	// Network tokens in paths: failing with a 500 (logged), with an engine
	// reason, and on a path no route matches.
	f.set(errors.New("disk on fire"), false)
	for _, p := range []string{"/v1/regions/r/network/reservations/" + netTok + "/redeem", "/v1/regions/r/network/reservations/" + netTok} {
		method := "POST"
		if !strings.HasSuffix(p, "/redeem") {
			method = "DELETE"
		}
		a := send(method, p, "", HeaderRequest, "1", "Authorization", "Bearer "+testToken)
		checkErrorAnswer(t, method+" with a network token", a, 500, CodeInternal)
	}
	f.set(nil, true) // a panic is logged with the path
	send("POST", "/v1/regions/r/network/reservations/"+netTok+"/redeem", "", HeaderRequest, "1", "Authorization", "Bearer "+testToken)
	f.set(nil, false)
	a = send("POST", "/v1/regions/r/network/reservations/"+netTok+"/redeemx", "", HeaderRequest, "1", "Authorization", "Bearer "+testToken)
	checkErrorAnswer(t, "unmatched path with a network token", a, 404, CodeNotFound)
	if !strings.Contains(a.errMessage(), netTok[:echoPrefix]+"…") {
		t.Errorf("unmatched path message %q lacks the token's prefix", a.errMessage())
	}
	a = send("GET", "/v1/regions/r/network/reservations/"+netTok+"/redeem", "")
	checkErrorAnswer(t, "GET of a redeem path", a, 405, CodeMethodNotAllowed)

	logText := log.String()
	if !strings.Contains(logText, "disk on fire") || !strings.Contains(logText, netTok[:echoPrefix]+"…") {
		t.Errorf("the failures are not logged with the path's prefix:\n%s", logText)
	}
	for _, secret := range []string{wrong, testToken, netTok, netTok[:echoPrefix+1]} {
		if strings.Contains(logText, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logText)
		}
		for _, a := range answers {
			if strings.Contains(string(a.body), secret) {
				t.Errorf("an answer holds %q: %s", secret, a.body)
			}
			for k, vs := range a.header {
				for _, v := range vs {
					if strings.Contains(v, secret) {
						t.Errorf("an answer's header %s holds %q", k, secret)
					}
				}
			}
		}
	}
}

func TestSafePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/v1/regions/r/teleports", "/v1/regions/r/teleports"},
		{"/a/" + strings.Repeat("x", 24) + "/b", "/a/" + strings.Repeat("x", 24) + "/b"},
		{"/a/" + strings.Repeat("x", 25) + "/b", "/a/xxxxxx…/b"},
		{"/" + strings.Repeat("é", 20), "/ééé…"},
		{"/" + "ab" + strings.Repeat("é", 20), "/abéé…"},
		{"/" + "a" + strings.Repeat("é", 20), "/aéé…"}, // a cut rune is dropped
	} {
		if got := safePath(tc.in); got != tc.want {
			t.Errorf("safePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestHostPolicy(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true}, {"localhost:1", true}, {"a.b.localhost", true}, {"localhost.", true},
		{"127.0.0.1", true}, {"127.255.0.9:80", true}, {"[::1]:80", true}, {"[::ffff:127.0.0.1]:80", true},
		{"", false}, {":80", false}, {"localhostx", false}, {"xlocalhost", false}, {"0.0.0.0", false},
		{"192.168.1.1", false}, {"[::]:80", false}, {"evil.example", false},
	} {
		if got := loopbackHosts.allows(tc.host); got != tc.ok {
			t.Errorf("loopback policy allows %q = %v, want %v", tc.host, got, tc.ok)
		}
	}
	p, err := newHostPolicy([]string{"*", "x"})
	if err != nil || p.restricted {
		t.Errorf(`newHostPolicy with "*" = %+v, %v; want any host`, p, err)
	}
	if _, err := newHostPolicy([]string{"*", "x:1"}); err == nil {
		t.Error(`newHostPolicy with "*" and a bad entry = nil error`)
	}
	if p, err := newHostPolicy(nil); p != nil || err != nil {
		t.Errorf("newHostPolicy(nil) = %v, %v; want nil, nil", p, err)
	}
}

func FuzzHostPolicy(f *testing.F) {
	for _, s := range []string{"localhost:8080", "[::1]:1", "127.0.0.1", "a.localhost", "evil.example", "", "[", "]:", "[::ffff:7f00:1]"} {
		f.Add(s)
	}
	listed, err := newHostPolicy([]string{"rtp.example.com", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		n := hostname.Normalize(hostOnly(host))
		if loopbackHosts.allows(host) && n != "localhost" && !strings.HasSuffix(n, ".localhost") && !strings.HasPrefix(n, "127.") && n != "::1" {
			t.Fatalf("loopback policy allows %q (%q)", host, n)
		}
		if listed.allows(host) != (n == "rtp.example.com" || n == "::1" || loopbackHosts.allows(host)) {
			t.Fatalf("listed policy allows %q (%q) = %v", host, n, listed.allows(host))
		}
	})
}

// FuzzContentType checks that jsonContentType accepts only one
// application/json type in UTF-8.
func FuzzContentType(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "application/json;", "application/json; charset=\"UTF-8\"", "a/b+json", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		h := http.Header{}
		h.Set("Content-Type", ct)
		present, ok := jsonContentType(h)
		if !present {
			t.Fatalf("%q: not present", ct)
		}
		if ok {
			mt, params, err := mime.ParseMediaType(ct)
			if err != nil || mt != "application/json" {
				t.Fatalf("%q accepted: %q, %v", ct, mt, err)
			}
			if cs, has := params["charset"]; has && !strings.EqualFold(cs, "utf-8") {
				t.Fatalf("%q accepted with charset %q", ct, cs)
			}
		}
	})
}

// FuzzSafePath checks that safePath leaves no segment longer than
// maxEchoSegment bytes, keeps short ones and valid UTF-8.
func FuzzSafePath(f *testing.F) {
	f.Add("/v1/regions/r/network/reservations/" + strings.Repeat("A", 58) + "/redeem")
	f.Add("/" + strings.Repeat("é", 30))
	f.Fuzz(func(t *testing.T, p string) {
		out := safePath(p)
		in := strings.Split(p, "/")
		segs := strings.Split(out, "/")
		if len(in) != len(segs) {
			t.Fatalf("safePath(%q) = %q: %d segments, want %d", p, out, len(segs), len(in))
		}
		for i, sg := range segs {
			if len(in[i]) <= maxEchoSegment {
				if sg != in[i] {
					t.Fatalf("safePath(%q) changed the short segment %q to %q", p, in[i], sg)
				}
				continue
			}
			if len(sg) > echoPrefix+len("…") || !strings.HasSuffix(sg, "…") {
				t.Fatalf("safePath(%q) = %q: segment %q not cut", p, out, sg)
			}
		}
		if utf8.ValidString(p) && !utf8.ValidString(out) {
			t.Fatalf("safePath(%q) = %q: not valid UTF-8", p, out)
		}
	})
}
