package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serve runs s.Serve on a loopback listener; the returned function stops
// it and returns Serve's error.
func serve(t *testing.T, s *Server, tt Timeouts) (base string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, tt) }()
	var serr error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serr = <-done
		}
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return "http://" + ln.Addr().String(), stop
}

// TestServeShutdownTimeout checks that Serve reports requests still
// running at the end of its shutdown timeout, and closes them.
func TestServeShutdownTimeout(t *testing.T) {
	f, s := newFakeServer(t, Options{})
	f.block = make(chan struct{})
	defer close(f.block)
	base, stop := serve(t, s, Timeouts{Shutdown: 100 * time.Millisecond})
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(base+"/v1/regions/r/teleports", "application/json", strings.NewReader(`{"player":"p"}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, 5*time.Second, "the request never started", func() bool { return inFlight(t, s) > 0 })
	begin := time.Now()
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "shutdown") {
		t.Errorf("Serve with a request stuck past the timeout = %v, want a shutdown error", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Serve took %v to give up", d)
	}
	if err := <-errc; err == nil {
		t.Error("the stuck request got an answer; want its connection closed")
	}
}

// TestServeListenerError checks that Serve returns the error of a
// listener that fails.
func TestServeListenerError(t *testing.T) {
	_, s := newFakeServer(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := s.Serve(t.Context(), ln, Timeouts{}); err == nil {
		t.Error("Serve on a closed listener = nil")
	}
}

// TestServeWarnsWithoutToken checks the warning of an open admin API
// beyond loopback.
func TestServeWarnsWithoutToken(t *testing.T) {
	for _, tc := range []struct {
		addr     net.Addr
		loopback bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, true},
		{&net.TCPAddr{IP: net.IPv6loopback}, true},
		{&net.TCPAddr{IP: net.IPv4zero}, false},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1)}, false},
		{&net.UnixAddr{Name: "/tmp/rtp.sock", Net: "unix"}, true},
	} {
		if got := isLoopback(tc.addr); got != tc.loopback {
			t.Errorf("isLoopback(%v) = %v, want %v", tc.addr, got, tc.loopback)
		}
	}
	var log lockedBuffer
	_, s := newFakeServer(t, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, stop := serve(t, s, Timeouts{})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "without an admin token") {
		t.Errorf("warning on loopback:\n%s", log.String())
	}
}

// TestClientGoneCancels checks that a location handed out after the
// client went away is given back with Cancel.
func TestClientGoneCancels(t *testing.T) {
	f, s := newFakeServer(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/regions/r/teleports", strings.NewReader(`{"player":"p","waitMs":0}`))
	req.Header.Set("Content-Type", "application/json")
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	if got := f.lastCall(); got != "Cancel" {
		t.Errorf("last engine call %q, want Cancel", got)
	}
}

// TestHandlerErrorsAreJSON checks that errors.Join messages come out on
// one line.
func TestHandlerErrorsAreJSON(t *testing.T) {
	f, s := newFakeServer(t, Options{})
	f.set(errors.New("a\nb"), false)
	a := do(t, s.Handler(), "GET", "/readyz", "")
	checkErrorAnswer(t, "readyz", a, 503, CodeNotReady)
	if a.errMessage() != "a; b" {
		t.Errorf("message %q, want one line", a.errMessage())
	}
}
