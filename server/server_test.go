package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtpengine/rtp/engine"
)

const testToken = "0123456789abcdef-admin"

func newFakeServer(t *testing.T, opts Options) (*fakeEngine, *Server) {
	t.Helper()
	f := newFake(t)
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s, err := New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// routeCall is a request that reaches the route's engine method.
type routeCall struct {
	method, path, body string
}

// callOf returns a request of rt with valid path segments and body.
func callOf(rt route) routeCall {
	p := strings.NewReplacer("{region}", "r", "{world}", "w", "{player}", "alice", "{token}", "tok", "{id}", "1").Replace(rt.path)
	body := ""
	switch rt.pattern() {
	case "POST /v1/regions/{region}/teleports":
		body = `{"player":"alice"}`
	case "POST /v1/regions/{region}/group-teleports":
		body = `{"players":["alice","bob"]}`
	case "POST /v1/worlds/{world}/claims":
		body = `{"owner":"o","minX":0,"minZ":0,"maxX":1,"maxZ":1}`
	case "PUT /v1/regions/{region}/players/{player}/queue":
		body = `{"capacity":2}`
	case "POST /v1/worlds/{world}/changes":
		body = `{"chunks":[[1,-2]]}`
	}
	return routeCall{rt.method, p, body}
}

// TestErrorMapping makes the fake engine fail every route with every
// reason: each answer must carry the reason as its code with the status of
// the contract (and Retry-After on 503).
func TestErrorMapping(t *testing.T) {
	want := map[string]int{
		engine.ReasonUnknownRegion: 404, engine.ReasonUnknownID: 404, engine.ReasonUnknownToken: 404,
		engine.ReasonUnknownWorld: 404, engine.ReasonNotWatched: 409,
		engine.ReasonUnknownSink: 400, engine.ReasonInvalid: 400, engine.ReasonInvalidToken: 400,
		engine.ReasonGroupTooLarge: 400,
		engine.ReasonNoSink:        409, engine.ReasonRedeemed: 409, engine.ReasonRestartNeeded: 409,
		engine.ReasonLeaseExpired: 410,
		engine.ReasonNoLocation:   503, engine.ReasonPaused: 503, engine.ReasonShutdown: 503,
		engine.ReasonTooManyOpen:       503,
		engine.ReasonExhausted:         503,
		engine.ReasonLeasesUnavailable: 503,
	}
	if len(want) != len(reasonStatus) {
		t.Errorf("reasonStatus has %d reasons, the test %d", len(reasonStatus), len(want))
	}
	var reloadErr error
	f, s := newFakeServer(t, Options{Reload: func(ctx context.Context) error { return reloadErr }})
	h := s.Handler()
	for reason, status := range want {
		err := &engine.Error{Region: "r", Reason: reason, Err: errors.New("detail")}
		f.set(err, false)
		reloadErr = err
		for _, rt := range routes {
			switch rt.path {
			case "/metrics", "/healthz", "/v1/regions", "/readyz", "/v1/worlds/{world}/claims", "/v1/worlds/{world}/claims/{id}":
				continue // no engine call that can fail this way
			}
			c := callOf(rt)
			a := do(t, h, c.method, c.path, c.body)
			checkErrorAnswer(t, fmt.Sprintf("%s %s with reason %s", c.method, c.path, reason), a, status, reason)
		}
	}
	f.set(nil, false)
	reloadErr = nil
	// Every route succeeds when the engine does, as the spec says.
	h = specChecked(t, s.Handler())
	for _, rt := range routes {
		c := callOf(rt)
		a := do(t, h, c.method, c.path, c.body)
		if a.status >= 300 {
			t.Errorf("%s %s = %d %s, want success", c.method, c.path, a.status, a.body)
		}
	}
}

// TestTooManyOpenPerClient checks that a teleport names its caller's
// address to the engine (which bounds its open handouts) and that a
// refusal's Retry-After is the engine's, in whole seconds rounded up.
func TestTooManyOpenPerClient(t *testing.T) {
	f, s := newFakeServer(t, Options{})
	h := s.Handler()
	req := httptest.NewRequest("POST", "/v1/regions/r/teleports", strings.NewReader(`{"player":"alice"}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "192.0.2.7:51234"
	if a := doRequest(h, req); a.status != 200 {
		t.Fatalf("teleport = %d %s", a.status, a.body)
	}
	if got := f.lastCall(); !strings.HasSuffix(got, " client=192.0.2.7") {
		t.Errorf("engine call %q, want the client address 192.0.2.7 without its port", got)
	}
	f.set(&engine.Error{Region: "r", Reason: engine.ReasonTooManyOpen, RetryAfter: 241*time.Second + time.Millisecond}, false)
	a := do(t, h, "POST", "/v1/regions/r/teleports", `{"player":"alice"}`)
	checkErrorAnswer(t, "teleport past the client's cap", a, 503, engine.ReasonTooManyOpen)
	if got := a.header.Get("Retry-After"); got != "242" {
		t.Errorf("Retry-After = %q, want 242 (241.001 s rounded up)", got)
	}
}

// TestUnknownErrorIs500 checks that an error that is no *engine.Error is
// answered 500 with a generic message and logged with its detail.
func TestUnknownErrorIs500(t *testing.T) {
	var log lockedBuffer
	f, s := newFakeServer(t, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	f.set(errors.New("disk on fire"), false)
	a := do(t, s.Handler(), "POST", "/v1/teleports/3/complete", "")
	checkErrorAnswer(t, "complete with an unknown error", a, 500, CodeInternal)
	if strings.Contains(string(a.body), "disk on fire") {
		t.Errorf("500 body %s shows the detail", a.body)
	}
	if !strings.Contains(log.String(), "disk on fire") {
		t.Errorf("log lacks the detail:\n%s", log.String())
	}
	// An *engine.Error of ReasonInternal, or of a reason the server does
	// not know, is no better.
	for _, reason := range []string{engine.ReasonInternal, "brand-new-reason"} {
		f.set(&engine.Error{Reason: reason, Err: errors.New("secret detail")}, false)
		a = do(t, s.Handler(), "POST", "/v1/teleports/3/complete", "")
		checkErrorAnswer(t, "complete with reason "+reason, a, 500, CodeInternal)
		if strings.Contains(string(a.body), "secret detail") {
			t.Errorf("500 body %s shows the detail", a.body)
		}
	}
}

// TestPanicRecovered checks that a panicking handler is answered with a
// JSON 500 and logged with its stack, and that the server goes on.
func TestPanicRecovered(t *testing.T) {
	var log lockedBuffer
	f, s := newFakeServer(t, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	f.set(nil, true)
	a := do(t, s.Handler(), "POST", "/v1/regions/r/teleports", `{"player":"p"}`)
	checkErrorAnswer(t, "panicking teleport", a, 500, CodeInternal)
	if !strings.Contains(log.String(), "fake engine: Teleport") || !strings.Contains(log.String(), "stack=") {
		t.Errorf("log lacks the panic and its stack:\n%s", log.String())
	}
	f.set(nil, false)
	if a := do(t, s.Handler(), "POST", "/v1/regions/r/teleports", `{"player":"p"}`); a.status != 200 {
		t.Errorf("teleport after a panic = %d %s", a.status, a.body)
	}
}

func TestAuth(t *testing.T) {
	f, s := newFakeServer(t, Options{Token: testToken})
	h := specChecked(t, s.Handler())
	for _, rt := range routes {
		c := callOf(rt)
		for _, tc := range []struct {
			name, header string
			ok           bool
		}{
			{"no token", "", !rt.needsAuth()},
			{"wrong token", "Bearer " + testToken + "x", !rt.needsAuth()},
			{"prefix of the token", "Bearer " + testToken[:8], !rt.needsAuth()},
			{"basic scheme", "Basic " + testToken, !rt.needsAuth()},
			{"right token", "Bearer " + testToken, true},
			{"scheme in lower case", "bearer " + testToken, true},
		} {
			before := f.callCount()
			var a answer
			if tc.header == "" {
				a = do(t, h, c.method, c.path, c.body)
			} else {
				a = do(t, h, c.method, c.path, c.body, "Authorization", tc.header)
			}
			what := fmt.Sprintf("%s %s with %s", c.method, c.path, tc.name)
			if tc.ok {
				if a.status == 401 {
					t.Errorf("%s = %d %s, want it let through", what, a.status, a.body)
				}
				continue
			}
			checkErrorAnswer(t, what, a, 401, CodeUnauthorized)
			if f.callCount() != before {
				t.Errorf("%s reached the engine (%s)", what, f.lastCall())
			}
		}
	}
	// The routes that must stay open.
	for _, p := range []string{"/v1/regions", "/v1/regions/r/stats", "/v1/worlds/w/claims", "/metrics", "/healthz", "/readyz"} {
		if a := do(t, h, "GET", p, ""); a.status != 200 {
			t.Errorf("GET %s without a token = %d %s, want 200", p, a.status, a.body)
		}
	}
	// Every admin route and every mutating route needs the token.
	for _, rt := range routes {
		admin := strings.HasPrefix(rt.path, "/v1/admin/")
		if (rt.method != "GET" || admin) != rt.needsAuth() {
			t.Errorf("%s: needsAuth = %v", rt.pattern(), rt.needsAuth())
		}
	}
}

func TestNoTokenLeavesRoutesOpen(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	if a := do(t, s.Handler(), "POST", "/v1/admin/regions/r/scan/pause", ""); a.status != 204 {
		t.Errorf("scan pause without a configured token = %d %s, want 204", a.status, a.body)
	}
}

// TestBodies checks the strict decoding of request bodies, through the
// handler.
func TestBodies(t *testing.T) {
	f, s := newFakeServer(t, Options{MaxBodyBytes: 256})
	h := specChecked(t, s.Handler())
	tp := "/v1/regions/r/teleports"
	for _, tc := range []struct {
		name, path, body, ct string
		status               int
		code, msgHas         string
	}{
		{"ok", tp, `{"player":"alice","sink":"general","waitMs":0}`, "", 200, "", ""},
		{"ok with white space", tp, " \n{ \"player\" : \"alice\" }\n ", "", 200, "", ""},
		{"too large", tp, `{"player":"` + strings.Repeat("a", 300) + `"}`, "", 413, CodeTooLarge, "256"},
		{"malformed", tp, `{"player":`, "", 400, CodeBadRequest, "cut short"},
		{"syntax", tp, `{"player" "alice"}`, "", 400, CodeBadRequest, "malformed JSON"},
		{"not an object", tp, `["player"]`, "", 400, CodeBadRequest, "want a JSON object"},
		{"null", tp, `null`, "", 400, CodeBadRequest, "want a JSON object"},
		{"unknown field", tp, `{"player":"a","speed":3}`, "", 400, CodeBadRequest, `"speed"`},
		{"wrong case", tp, `{"Player":"a"}`, "", 400, CodeBadRequest, `did you mean "player"`},
		{"repeated", tp, `{"player":"a","player":"b"}`, "", 400, CodeBadRequest, "more than once"},
		{"wrong type", tp, `{"player":42}`, "", 400, CodeBadRequest, `field "player": want a string`},
		{"fraction", tp, `{"player":"a","waitMs":1.5}`, "", 400, CodeBadRequest, `field "waitMs": want an integer`},
		{"string number", tp, `{"player":"a","waitMs":"5"}`, "", 400, CodeBadRequest, `field "waitMs"`},
		{"missing player", tp, `{"sink":"general"}`, "", 400, CodeBadRequest, `field "player": required`},
		{"empty body", tp, ``, "", 400, CodeBadRequest, `field "player": required`},
		{"empty player", tp, `{"player":""}`, "", 400, CodeBadRequest, `field "player": empty`},
		{"long player", tp, `{"player":"` + strings.Repeat("é", 65) + `"}`, "", 400, CodeBadRequest, "65 characters"},
		{"control character", tp, `{"player":"a\u0007"}`, "", 400, CodeBadRequest, "control"},
		{"negative wait", tp, `{"player":"a","waitMs":-1}`, "", 400, CodeBadRequest, `field "waitMs": -1 is outside`},
		{"long wait", tp, `{"player":"a","waitMs":30001}`, "", 400, CodeBadRequest, `field "waitMs"`},
		{"trailing data", tp, `{"player":"a"}{}`, "", 400, CodeBadRequest, "after the JSON object"},
		{"trailing garbage", tp, `{"player":"a"} x`, "", 400, CodeBadRequest, "after the JSON object"},
		{"form content type", tp, `{"player":"a"}`, "application/x-www-form-urlencoded", 415, CodeUnsupportedMediaType, "Content-Type: application/json"},
		{"text content type", tp, `{"player":"a"}`, "text/plain", 415, CodeUnsupportedMediaType, "Content-Type: application/json"},
		{"json charset", tp, `{"player":"a"}`, "application/json; charset=utf-8", 200, "", ""},
		{"queue negative", "/v1/regions/r/players/alice/queue", `{"capacity":-1}`, "", 400, CodeBadRequest, `field "capacity"`},
		{"queue empty body", "/v1/regions/r/players/alice/queue", ``, "", 204, "", ""},
		{"reservation empty", "/v1/regions/r/network/reservations", ``, "", 201, "", ""},
		{"reservation token type", "/v1/regions/r/network/reservations", `{"token":1}`, "", 400, CodeBadRequest, `field "token"`},
		{"claim missing corner", "/v1/worlds/w/claims", `{"owner":"o","minX":0,"minZ":0,"maxX":1}`, "", 400, CodeBadRequest, `field "maxZ": required`},
		{"claim inverted", "/v1/worlds/w/claims", `{"owner":"o","minX":5,"minZ":0,"maxX":1,"maxZ":1}`, "", 400, CodeBadRequest, `field "minX"`},
		{"claim too wide", "/v1/worlds/w/claims", `{"owner":"o","minX":0,"minZ":0,"maxX":100000,"maxZ":1}`, "", 400, engine.ReasonInvalid, "exceeds the limit"},
		{"claim unknown world", "/v1/worlds/nowhere/claims", `{"owner":"o","minX":0,"minZ":0,"maxX":1,"maxZ":1}`, "", 404, CodeUnknownWorld, `"nowhere"`},
	} {
		method := "POST"
		if strings.HasSuffix(tc.path, "/queue") {
			method = "PUT"
		}
		var hdr []string
		if tc.ct != "" {
			hdr = []string{"Content-Type", tc.ct}
		}
		a := do(t, h, method, tc.path, tc.body, hdr...)
		if tc.code == "" {
			if a.status != tc.status {
				t.Errorf("%s: %s %s = %d %s, want %d", tc.name, method, tc.path, a.status, a.body, tc.status)
			}
			continue
		}
		checkErrorAnswer(t, tc.name, a, tc.status, tc.code)
		if !strings.Contains(a.errMessage(), tc.msgHas) {
			t.Errorf("%s: message %q lacks %q", tc.name, a.errMessage(), tc.msgHas)
		}
	}
	if got := f.lastCall(); strings.Contains(got, "Teleport") && !strings.Contains(got, "alice") {
		t.Errorf("last teleport %q", got)
	}
}

// TestPathSegments checks the validation of path segments.
func TestPathSegments(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	h := specChecked(t, s.Handler())
	for _, tc := range []struct {
		method, path, msgHas string
	}{
		{"POST", "/v1/teleports/abc/complete", `"id"`},
		{"POST", "/v1/teleports/-1/complete", `"id"`},
		{"DELETE", "/v1/teleports/18446744073709551616", `"id"`},
		{"DELETE", "/v1/worlds/w/claims/0", `"id"`},
		{"DELETE", "/v1/worlds/w/claims/x", `"id"`},
		{"POST", "/v1/regions/r/players/" + strings.Repeat("p", 65) + "/join", `"player"`},
		{"POST", "/v1/regions/r/players/%FF/join", "UTF-8"},
	} {
		a := do(t, h, tc.method, tc.path, "")
		checkErrorAnswer(t, tc.method+" "+tc.path, a, 400, CodeBadRequest)
		if !strings.Contains(a.errMessage(), tc.msgHas) {
			t.Errorf("%s %s: message %q lacks %q", tc.method, tc.path, a.errMessage(), tc.msgHas)
		}
	}
	checkErrorAnswer(t, "unknown claim", do(t, h, "DELETE", "/v1/worlds/w/claims/99", ""), 404, CodeUnknownClaim)
}

func TestUnmatched(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	h := s.Handler()
	checkErrorAnswer(t, "GET /nowhere", do(t, h, "GET", "/nowhere", ""), 404, CodeNotFound)
	checkErrorAnswer(t, "GET /v1/regions/r", do(t, h, "GET", "/v1/regions/r", ""), 404, CodeNotFound)
	a := do(t, h, "DELETE", "/v1/regions", "")
	checkErrorAnswer(t, "DELETE /v1/regions", a, 405, CodeMethodNotAllowed)
	if got := a.header.Get("Allow"); got != "GET, HEAD" {
		t.Errorf("Allow = %q, want GET, HEAD", got)
	}
	a = do(t, h, "GET", "/v1/regions/r/players/p/queue", "")
	checkErrorAnswer(t, "GET queue", a, 405, CodeMethodNotAllowed)
	if got := a.header.Get("Allow"); got != "PUT, DELETE" {
		t.Errorf("Allow = %q, want PUT, DELETE", got)
	}
}

func TestReloadWithoutFile(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	checkErrorAnswer(t, "reload without a Reload func", do(t, specChecked(t, s.Handler()), "POST", "/v1/admin/reload", ""), 409, engine.ReasonRestartNeeded)
}

func TestReadyz(t *testing.T) {
	f, s := newFakeServer(t, Options{})
	if a := do(t, s.Handler(), "GET", "/readyz", ""); a.status != 200 || !strings.Contains(string(a.body), `"ready"`) {
		t.Errorf("readyz = %d %s", a.status, a.body)
	}
	f.set(errors.New("regions still restoring"), false)
	a := do(t, s.Handler(), "GET", "/readyz", "")
	checkErrorAnswer(t, "readyz not ready", a, 503, CodeNotReady)
	if !strings.Contains(a.errMessage(), "restoring") {
		t.Errorf("readyz message %q does not say why", a.errMessage())
	}
	if a := do(t, s.Handler(), "GET", "/healthz", ""); a.status != 200 || !strings.Contains(string(a.body), `"ok"`) {
		t.Errorf("healthz = %d %s", a.status, a.body)
	}
}

func TestOptions(t *testing.T) {
	f := newFake(t)
	for _, o := range []Options{
		{MaxBodyBytes: -1},
		{DefaultWait: -time.Second},
		{DefaultWait: MaxWait + 1},
		{Registerer: prometheus.NewRegistry()},
	} {
		if _, err := New(f, o); err == nil {
			t.Errorf("New with %+v = nil error", o)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) = nil error")
	}
	// Two servers on one registry clash.
	reg := prometheus.NewRegistry()
	if _, err := New(f, Options{Registerer: reg, Gatherer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(f, Options{Registerer: reg, Gatherer: reg}); err == nil {
		t.Error("a second server on the same registry = nil error")
	}
	s, err := New(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.MaxBodyBytes != DefaultMaxBodyBytes || s.opts.DefaultWait != DefaultWait || s.opts.Logger == nil || s.opts.Clock == nil {
		t.Errorf("defaults: %+v", s.opts)
	}
}

// TestTeleportJSON checks the shape of a teleport answer.
func TestTeleportJSON(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	a := do(t, specChecked(t, s.Handler()), "POST", "/v1/regions/r/teleports", `{"player":"p"}`)
	var got map[string]any
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "region", "world", "x", "y", "z", "standY", "biome", "sink", "waitedMs"} {
		if _, ok := got[k]; !ok {
			t.Errorf("teleport answer %s lacks %q", a.body, k)
		}
	}
	if len(got) != 10 {
		t.Errorf("teleport answer %s has %d keys, want 10", a.body, len(got))
	}
}

// TestMapMounted checks that the map's handler gets GET and HEAD requests
// under its prefixes, with their full paths, and nothing else.
func TestMapMounted(t *testing.T) {
	var paths []string
	m := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
	_, s := newFakeServer(t, Options{Map: m})
	h := s.Handler()
	for _, p := range []string{"/map/", "/map/static/app.js", "/v1/map/regions", "/v1/worlds/world/tiles/0/0/0.png"} {
		if a := do(t, h, "GET", p, ""); a.status != http.StatusTeapot {
			t.Errorf("GET %s = %d, want the map's answer", p, a.status)
		}
	}
	if a := do(t, h, "HEAD", "/map/", ""); a.status != http.StatusTeapot {
		t.Errorf("HEAD /map/ = %d, want the map's answer", a.status)
	}
	if a := do(t, h, "POST", "/v1/map/regions", "", "X-RTP-Request", "1"); a.status == http.StatusTeapot {
		t.Errorf("POST reached the map")
	}
	if a := do(t, h, "GET", "/v1/regions", ""); a.status == http.StatusTeapot {
		t.Errorf("GET /v1/regions reached the map")
	}
	want := []string{"GET /map/", "GET /map/static/app.js", "GET /v1/map/regions", "GET /v1/worlds/world/tiles/0/0/0.png", "HEAD /map/"}
	if !slices.Equal(paths, want) {
		t.Errorf("the map saw %q, want %q", paths, want)
	}
}
