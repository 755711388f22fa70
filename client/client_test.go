package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testToken = "0123456789abcdef-token"

func newTest(t *testing.T, token string) (*fakeServer, *Client) {
	t.Helper()
	f := newFake(testToken)
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return f, New(srv.URL, Options{Token: token, HTTPClient: srv.Client()})
}

// wantCode checks that err is an *APIError of that status and code.
func wantCode(t *testing.T, what string, err error, status int, code string) *APIError {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: err = %v, want an *APIError %d %s", what, err, status, code)
	}
	if ae.Status != status || ae.Code != code {
		t.Fatalf("%s: err = %d %q, want %d %q (%v)", what, ae.Status, ae.Code, status, code, err)
	}
	if Code(err) != code {
		t.Fatalf("%s: Code(err) = %q, want %q", what, Code(err), code)
	}
	return ae
}

func TestTeleportCompleteCancel(t *testing.T) {
	ctx := t.Context()
	f, c := newTest(t, testToken)
	f.hot = 2
	tp, err := c.Teleport(ctx, "default", TeleportRequest{Player: "alex"})
	if err != nil {
		t.Fatal(err)
	}
	want := Teleport{ID: 1, Region: "default", World: "world", X: 101, Y: 64, Z: -5, Biome: "plains",
		Sink: "general", WaitedMs: 1.5}
	if tp != want {
		t.Fatalf("Teleport = %+v, want %+v", tp, want)
	}
	if tp.Waited() != 1500*time.Microsecond {
		t.Errorf("Teleport.Waited() = %v, want 1.5ms", tp.Waited())
	}
	if _, ok := f.lastBody["waitMs"]; ok {
		t.Errorf("Teleport without Wait sent waitMs %v, want none", f.lastBody["waitMs"])
	}
	tp2, err := c.Teleport(ctx, "default", TeleportRequest{Player: "steve", Wait: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if f.lastBody["waitMs"] != 250 {
		t.Errorf("Wait 250ms sent waitMs %v, want 250", f.lastBody["waitMs"])
	}
	_, err = c.Teleport(ctx, "default", TeleportRequest{Player: "late", Wait: -1})
	ae := wantCode(t, "Teleport on an empty sink", err, 503, CodeNoLocation)
	if ae.RetryAfter != time.Second {
		t.Errorf("RetryAfter = %v, want 1s", ae.RetryAfter)
	}
	if f.lastBody["waitMs"] != 0 {
		t.Errorf("Wait -1 sent waitMs %v, want 0", f.lastBody["waitMs"])
	}
	if !strings.Contains(err.Error(), "POST /v1/regions/default/teleports: 503 no-location") {
		t.Errorf("error text %q lacks the request and code", err)
	}
	if err := c.Complete(ctx, tp.ID); err != nil {
		t.Fatalf("Complete(%d) = %v", tp.ID, err)
	}
	wantCode(t, "Complete twice", c.Complete(ctx, tp.ID), 404, CodeUnknownID)
	if err := c.Cancel(ctx, tp2.ID); err != nil {
		t.Fatalf("Cancel(%d) = %v", tp2.ID, err)
	}
	wantCode(t, "Cancel twice", c.Cancel(ctx, tp2.ID), 404, CodeUnknownID)
	if len(f.out) != 0 {
		t.Errorf("fake still holds %d teleports", len(f.out))
	}
}

func TestTeleportErrors(t *testing.T) {
	ctx := t.Context()
	_, c := newTest(t, testToken)
	_, err := c.Teleport(ctx, "nowhere", TeleportRequest{Player: "p"})
	wantCode(t, "unknown region", err, 404, CodeUnknownRegion)
	_, err = c.Teleport(ctx, "default", TeleportRequest{Player: ""})
	ae := wantCode(t, "empty player", err, 400, CodeBadRequest)
	if !strings.Contains(ae.Message, "player") {
		t.Errorf("message %q does not name the field", ae.Message)
	}
	_, err = c.Teleport(ctx, "default", TeleportRequest{Player: "p", Sink: "vip"})
	wantCode(t, "unknown sink", err, 400, CodeUnknownSink)
	_, err = c.Teleport(ctx, "default", TeleportRequest{Player: strings.Repeat("p", 2000)})
	wantCode(t, "body too large", err, 413, CodeTooLarge)
}

func TestAuth(t *testing.T) {
	ctx := t.Context()
	_, open := newTest(t, "")
	_, err := open.Teleport(ctx, "default", TeleportRequest{Player: "p"})
	wantCode(t, "teleport without a token", err, 401, CodeUnauthorized)
	wantCode(t, "scan pause without a token", open.ScanPause(ctx, "default"), 401, CodeUnauthorized)
	// Reads stay open.
	if _, err := open.Regions(ctx); err != nil {
		t.Fatalf("Regions without a token = %v", err)
	}
	_, wrong := newTest(t, "not-the-token-at-all")
	wantCode(t, "wrong token", wrong.ScanReset(ctx, "default"), 401, CodeUnauthorized)
}

func TestPlayersAndQueues(t *testing.T) {
	ctx := t.Context()
	f, c := newTest(t, testToken)
	if err := c.Join(ctx, "default", "alex"); err != nil {
		t.Fatal(err)
	}
	if !f.joined["alex"] {
		t.Fatal("Join did not reach the server")
	}
	tp, err := c.Teleport(ctx, "default", TeleportRequest{Player: "alex", Sink: "login"})
	if err != nil || tp.Sink != "login" {
		t.Fatalf("login teleport = %+v, %v", tp, err)
	}
	if err := c.Quit(ctx, "default", "alex"); err != nil || f.joined["alex"] {
		t.Fatalf("Quit = %v, joined %v", err, f.joined["alex"])
	}
	wantCode(t, "join in an unknown region", c.Join(ctx, "x", "alex"), 404, CodeUnknownRegion)
	if err := c.OpenQueue(ctx, "default", "alex", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.OpenQueue(ctx, "default", "bob", 0); err != nil {
		t.Fatal(err)
	}
	if f.queues["alex"] != 3 || f.queues["bob"] != -1 {
		t.Fatalf("queues = %v, want alex 3 and bob without a capacity", f.queues)
	}
	if err := c.CloseQueue(ctx, "default", "alex"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.queues["alex"]; ok {
		t.Fatal("CloseQueue did not reach the server")
	}
}

func TestNetworkReservations(t *testing.T) {
	ctx := t.Context()
	f, c := newTest(t, testToken)
	r, err := c.Reserve(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Token != "tok-1" || r.Location.Biome != "forest" || r.Location.Sink != "network" ||
		!r.Expires.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("Reserve = %+v", r)
	}
	tp, err := c.Redeem(ctx, "default", r.Token)
	if err != nil || tp.ID == 0 {
		t.Fatalf("Redeem = %+v, %v", tp, err)
	}
	_, err = c.Redeem(ctx, "default", r.Token)
	wantCode(t, "Redeem twice", err, 409, CodeTokenRedeemed)
	r2, err := c.Reserve(ctx, "default", "mine/ä")
	if err != nil || r2.Token != "mine/ä" {
		t.Fatalf("Reserve with a token = %+v, %v", r2, err)
	}
	if _, ok := f.lastBody["waitMs"]; ok {
		t.Errorf("Reserve sent waitMs %v, want none (the server's default)", f.lastBody["waitMs"])
	}
	for _, tc := range []struct {
		wait time.Duration
		want any // waitMs sent; nil for none
	}{
		{0, nil}, {-1, int64(0)}, {1500 * time.Millisecond, int64(1500)}, {time.Microsecond, int64(1)},
	} {
		if _, err := c.ReserveWait(ctx, "default", "w", tc.wait); err != nil {
			t.Fatal(err)
		}
		if got := f.lastBody["waitMs"]; got != tc.want {
			t.Errorf("ReserveWait(%v) sent waitMs %v, want %v", tc.wait, got, tc.want)
		}
	}
	if err := c.Release(ctx, "default", "mine/ä"); err != nil {
		t.Fatalf("Release of a token with a slash = %v", err)
	}
	wantCode(t, "Release twice", c.Release(ctx, "default", "mine/ä"), 404, CodeUnknownToken)
	if _, err := c.Redeem(ctx, "default", ""); err == nil {
		t.Fatal("Redeem of an empty token succeeded")
	}
}

func TestRegionsStats(t *testing.T) {
	ctx := t.Context()
	_, c := newTest(t, testToken)
	regs, err := c.Regions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 2 || regs[0].Name != "a b/c" || regs[1] != (Region{Name: "default", World: "world"}) {
		t.Fatalf("Regions = %+v", regs)
	}
	// A region name that needs escaping reaches the server intact.
	s, err := c.Stats(ctx, "a b/c")
	if err != nil {
		t.Fatal(err)
	}
	if s.Region != "a b/c" || s.Restored != 3 || s.Pipeline.Cold.Fill != 20 || len(s.Pipeline.Sinks) != 2 ||
		s.Pipeline.Sinks[0].Capacity != 10 || s.Pipeline.Misses != 2 || s.Pipeline.ScreenRejections["water"] != 4 ||
		s.Memory.TopCause != "water" || s.Memory.Coverage != 0.25 || s.Resident.Open != 4 || s.Resident.Resident != 12 {
		t.Fatalf("Stats = %+v", s)
	}
	wantLat := Latency{Count: 9, P50Ms: 0.012, P90Ms: 0.5, P99Ms: 1.5, MaxMs: 2000}
	if s.Latency != wantLat {
		t.Fatalf("Stats latency = %+v, want %+v", s.Latency, wantLat)
	}
	l := s.Latency
	if l.P50() != 12*time.Microsecond || l.P90() != 500*time.Microsecond || l.P99() != 1500*time.Microsecond || l.Max() != 2*time.Second {
		t.Errorf("Stats latency durations = %v %v %v %v", l.P50(), l.P90(), l.P99(), l.Max())
	}
	raw, err := c.StatsRaw(ctx, "a b/c")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["future"] != "kept in Raw" {
		t.Fatalf("StatsRaw = %s (%v), want the key a newer server added", raw, err)
	}
	_, err = c.Stats(ctx, "nowhere")
	wantCode(t, "stats of an unknown region", err, 404, CodeUnknownRegion)
}

func TestReportChanges(t *testing.T) {
	ctx := t.Context()
	f, c := newTest(t, testToken)
	got, err := c.ReportChanges(ctx, "world", [][2]int64{{1, -2}, {3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got != (Changes{Chunks: 2, Held: 2}) {
		t.Fatalf("ReportChanges = %+v", got)
	}
	f.mu.Lock()
	sent := f.changed
	f.mu.Unlock()
	if fmt.Sprint(sent) != "[[1 -2] [3 4]]" {
		t.Fatalf("the server got chunks %v, want [[1 -2] [3 4]]", sent)
	}
	_, err = c.ReportChanges(ctx, "mars", nil)
	wantCode(t, "changes of an unknown world", err, 404, "unknown-world")
}

func TestClaims(t *testing.T) {
	ctx := t.Context()
	_, c := newTest(t, testToken)
	cl, err := c.AddClaim(ctx, "world", NewClaim{Owner: "town", MinX: -10, MinZ: -20, MaxX: 10, MaxZ: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := Claim{ID: 1, World: "world", Owner: "town", MinX: -10, MinZ: -20, MaxX: 10, MaxZ: 20,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if cl != want {
		t.Fatalf("AddClaim = %+v, want %+v", cl, want)
	}
	_, err = c.AddClaim(ctx, "world", NewClaim{Owner: "town", MinX: 10, MaxX: -10})
	wantCode(t, "inverted claim", err, 400, CodeInvalid)
	list, err := c.Claims(ctx, "world")
	if err != nil || len(list) != 1 || list[0] != want {
		t.Fatalf("Claims = %+v, %v", list, err)
	}
	_, err = c.Claims(ctx, "mars")
	wantCode(t, "claims of an unknown world", err, 404, CodeUnknownWorld)
	if err := c.RemoveClaim(ctx, "world", 1); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "remove twice", c.RemoveClaim(ctx, "world", 1), 404, CodeUnknownClaim)
	if list, err := c.Claims(ctx, "world"); err != nil || len(list) != 0 {
		t.Fatalf("Claims after remove = %+v, %v", list, err)
	}
}

func TestAdmin(t *testing.T) {
	ctx := t.Context()
	f, c := newTest(t, testToken)
	f.hot = 0
	if err := c.ScanPause(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Teleport(ctx, "default", TeleportRequest{Player: "p"})
	wantCode(t, "teleport while paused", err, 503, CodePaused)
	regs, _ := c.Regions(ctx)
	if !regs[1].Paused {
		t.Fatal("Regions does not show the pause")
	}
	if err := c.ScanResume(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if err := c.ScanReset(ctx, "default"); err != nil || f.resets != 1 {
		t.Fatalf("ScanReset = %v, resets %d", err, f.resets)
	}
	wantCode(t, "reset of an unknown region", c.ScanReset(ctx, "x"), 404, CodeUnknownRegion)
	var buf bytes.Buffer
	if err := c.ExportMemory(ctx, "default", &buf); err != nil {
		t.Fatal(err)
	}
	var exp map[string]any
	if err := json.Unmarshal(buf.Bytes(), &exp); err != nil || exp["region"] != "default" {
		t.Fatalf("ExportMemory wrote %q (%v)", buf.String(), err)
	}
	if err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	f.restart = true
	ae := wantCode(t, "reload of a changed world", c.Reload(ctx), 409, CodeRestartNeeded)
	if !strings.Contains(ae.Message, "regions.default.world") {
		t.Errorf("restart-needed message %q", ae.Message)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Readyz(ctx); err != nil {
		t.Fatal(err)
	}
	f.ready = false
	ae = wantCode(t, "Readyz", c.Readyz(ctx), 503, CodeNotReady)
	if !strings.Contains(ae.Message, "cold cache") {
		t.Errorf("not-ready message %q", ae.Message)
	}
}

func TestBoundedBodies(t *testing.T) {
	ctx := t.Context()
	big := strings.Repeat("y", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/regions":
			w.Write([]byte(`{"regions":[{"name":"` + big + `"}]}`))
		case "/v1/admin/regions/default/memory":
			w.Write([]byte(big))
		default: // an HTML error page from a proxy
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>\n\x01bad gateway " + big + "</html>"))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, Options{MaxResponseBytes: 1024, MaxExportBytes: 1000})
	if _, err := c.Regions(ctx); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Regions of a 4 KiB body with a 1 KiB bound = %v, want ErrTooLarge", err)
	}
	var buf bytes.Buffer
	if err := c.ExportMemory(ctx, "default", &buf); !errors.Is(err, ErrTooLarge) || buf.Len() != 1000 {
		t.Fatalf("ExportMemory past the bound = %v after %d bytes, want ErrTooLarge after 1000", err, buf.Len())
	}
	c = New(srv.URL, Options{MaxExportBytes: 4096})
	buf.Reset()
	if err := c.ExportMemory(ctx, "default", &buf); err != nil || buf.Len() != 4096 {
		t.Fatalf("ExportMemory of exactly the bound = %v, %d bytes", err, buf.Len())
	}
	err := c.Healthz(ctx)
	ae := wantCode(t, "proxy error page", err, 502, "")
	if !strings.HasPrefix(ae.Message, "<html> \uFFFDbad gateway") || len([]rune(ae.Message)) > 257 {
		t.Fatalf("proxy error message = %q", ae.Message)
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host/", "http://", "http://user:pw@host/", "http://[::1"} {
		c := New(u, Options{})
		if c.Err() == nil {
			t.Errorf("New(%q).Err() = nil, want an error", u)
			continue
		}
		if err := c.Healthz(t.Context()); err == nil {
			t.Errorf("New(%q).Healthz() = nil, want the URL's error", u)
		}
	}
	if c := New("http://127.0.0.1:1/prefix/", Options{}); c.Err() != nil || c.BaseURL() != "http://127.0.0.1:1/prefix" {
		t.Errorf("New with a prefix: Err %v, BaseURL %q", c.Err(), c.BaseURL())
	}
}

func TestPathPrefix(t *testing.T) {
	f := newFake("")
	mux := http.NewServeMux()
	mux.Handle("/rtp/", http.StripPrefix("/rtp", f.handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(srv.URL+"/rtp/", Options{})
	if _, err := c.Stats(t.Context(), "a b/c"); err != nil {
		t.Fatalf("Stats under a path prefix = %v", err)
	}
}

func TestContextCancel(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := New(srv.URL, Options{}).Teleport(ctx, "default", TeleportRequest{Player: "p"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Teleport past its deadline = %v, want DeadlineExceeded", err)
	}
}

// TestKeepAlive checks that answers of every kind (JSON, 204, errors) leave
// the connection reusable: 60 calls over one client open one connection.
func TestKeepAlive(t *testing.T) {
	f := newFake(testToken)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(f.handler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, Options{Token: testToken, HTTPClient: srv.Client()})
	ctx := t.Context()
	f.hot = 1000
	for range 20 {
		tp, err := c.Teleport(ctx, "default", TeleportRequest{Player: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Complete(ctx, tp.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.Complete(ctx, tp.ID); Code(err) != CodeUnknownID {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("60 sequential calls opened %d connections, want 1", n)
	}
}
