package httpverify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/httpverify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const name = "GameSide"

var here = verify.Location{World: "overworld", X: -1200, Y: 71, Z: 388}

// server starts a loopback server running h and a verifier posting to it.
func server(t *testing.T, h http.HandlerFunc, opts httpverify.Options) (*httptest.Server, *httpverify.Verifier) {
	t.Helper()
	srv := httptest.NewServer(h)
	v, err := httpverify.New(name, srv.URL+"/rtp/check", opts)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		v.Close()
		srv.Close()
	})
	return srv, v
}

func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func registry(t *testing.T, v *httpverify.Verifier, timeout time.Duration) *verify.Registry {
	t.Helper()
	reg := verify.New(verify.Options{Timeout: timeout})
	if err := v.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// The request is a POST of the location as JSON with the configured
// headers; the answer decides.
func TestProtocol(t *testing.T) {
	type seen struct {
		method, path, ctype, accept, auth string
		body                              map[string]any
	}
	got := make(chan seen, 1)
	_, v := server(t, func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.Path, ctype: r.Header.Get("Content-Type"),
			accept: r.Header.Get("Accept"), auth: r.Header.Get("Authorization")}
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&s.body); err != nil {
			t.Errorf("request body: %v", err)
		}
		got <- s
		io.WriteString(w, `{"allowed": true, "reason": "unclaimed"}`)
	}, httpverify.Options{Header: http.Header{"Authorization": {"Bearer s3cret"}}})

	loc := verify.Location{World: `ünï "q"`, X: -5, Y: 64, Z: 1 << 40}
	ok, err := v.Verify(context.Background(), loc)
	if !ok || err != nil {
		t.Fatalf("Verify = %v, %v; want true", ok, err)
	}
	s := <-got
	want := seen{method: "POST", path: "/rtp/check", ctype: "application/json", accept: "application/json", auth: "Bearer s3cret",
		body: map[string]any{"world": `ünï "q"`, "x": json.Number("-5"), "y": json.Number("64"), "z": json.Number("1099511627776")}}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("request\n got %+v\nwant %+v", s, want)
	}
	if v.Name() != name || !v.Extrinsic() {
		t.Errorf("Name() = %q, Extrinsic() = %v; want %q, true", v.Name(), v.Extrinsic(), name)
	}
}

// Through the registry: an allowed place passes; a denied one is rejected,
// attributed to the configured name, with no error (a real answer).
func TestAllowedDenied(t *testing.T) {
	_, v := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ X int64 }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"allowed": %t}`, req.X%2 == 0) // even x is free
	}, httpverify.Options{})
	reg := registry(t, v, time.Minute)
	for x := int64(-3); x <= 3; x++ {
		loc := verify.Location{World: "w", X: x, Y: 70, Z: 9}
		got := reg.Check(context.Background(), loc)
		want := verify.Result{Passed: true}
		if x%2 != 0 {
			want = verify.Result{Source: name}
		}
		if got != want {
			t.Errorf("Check(x=%d) = %+v, want %+v", x, got, want)
		}
	}
}

// Every answer that is not {"allowed": bool} with a 2xx status is an
// error, never an answer; through the registry it is a rejection carrying
// the error.
func TestErrors(t *testing.T) {
	huge := strings.Repeat(" ", 100<<10) + `{"allowed": true}`
	tests := []struct {
		name string
		h    http.HandlerFunc
		is   func(error) bool
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "database down", http.StatusInternalServerError)
		}, func(err error) bool {
			var se *httpverify.StatusError
			return errors.As(err, &se) && se.Code == 500 && strings.Contains(se.Body, "database down")
		}},
		{"403", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) },
			func(err error) bool { var se *httpverify.StatusError; return errors.As(err, &se) && se.Code == 403 }},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, func(err error) bool { var se *httpverify.StatusError; return errors.As(err, &se) && se.Code == 307 }},
		{"garbage", answer(`<html>oops</html>`), isBad},
		{"truncated", answer(`{"allowed": tr`), isBad},
		{"trailing garbage", answer(`{"allowed": true} x`), isBad},
		{"empty body", answer(``), isBad},
		{"missing", answer(`{"ok": true}`), isBad},
		{"wrong case", answer(`{"Allowed": true}`), isBad},
		{"null", answer(`{"allowed": null}`), isBad},
		{"string", answer(`{"allowed": "true"}`), isBad},
		{"number", answer(`{"allowed": 1}`), isBad},
		{"array", answer(`[true]`), isBad},
		{"top-level null", answer(`null`), isBad},
		{"huge, chunked", func(w http.ResponseWriter, r *http.Request) {
			for range 100 {
				io.WriteString(w, strings.Repeat(" ", 1<<10))
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, `{"allowed": true}`)
		}, isTooLarge},
		{"huge, announced", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
			io.WriteString(w, huge)
		}, isTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, v := server(t, tc.h, httpverify.Options{})
			ok, err := v.Verify(context.Background(), here)
			if ok || err == nil || !tc.is(err) {
				t.Fatalf("Verify = %v, %v (%T); want the right error", ok, err, err)
			}
			if !strings.HasPrefix(err.Error(), "httpverify: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			got := registry(t, v, time.Minute).Check(context.Background(), here)
			if got.Passed || got.Source != name || !tc.is(got.Err) {
				t.Errorf("Check = %+v, want a rejection by %s carrying the error", got, name)
			}
		})
	}
}

func isBad(err error) bool      { return errors.Is(err, httpverify.ErrBadResponse) }
func isTooLarge(err error) bool { return errors.Is(err, httpverify.ErrResponseTooLarge) }

// The size limit is exact: a body of MaxResponseBytes is read, one byte
// more is refused.
func TestMaxResponseBytes(t *testing.T) {
	body := `{"allowed": false}`
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{int64(len(body)), true}, {int64(len(body)) - 1, false}} {
		_, v := server(t, answer(body), httpverify.Options{MaxResponseBytes: tc.limit})
		allowed, err := v.Verify(context.Background(), here)
		if tc.ok && (allowed || err != nil) || !tc.ok && !isTooLarge(err) {
			t.Errorf("limit %d, body %d bytes: Verify = %v, %v", tc.limit, len(body), allowed, err)
		}
	}
}

// slow is a server that answers only when released or when the client
// goes away, and counts how its requests ended.
type slow struct {
	started, gone, answered atomic.Int32
}

// slowServer starts a slow server and a verifier posting to it.
func slowServer(t *testing.T, opts httpverify.Options) (*httpverify.Verifier, *slow) {
	t.Helper()
	s := &slow{}
	release := make(chan struct{})
	_, v := server(t, func(w http.ResponseWriter, r *http.Request) {
		s.started.Add(1)
		// Read the body: only then does the server watch the connection
		// and cancel r.Context() when the client goes away.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
			s.gone.Add(1)
		case <-release:
			io.WriteString(w, `{"allowed": true}`)
			s.answered.Add(1)
		}
	}, opts)
	t.Cleanup(func() { close(release) })
	return v, s
}

// waitGone checks that every request the server received was dropped by
// the client, not left waiting. (Under load a request may be dropped
// before the server even reads it; then there is nothing to see.)
func (s *slow) waitGone(t *testing.T) {
	t.Helper()
	eventually.Within(10*time.Second, func() bool { return s.gone.Load() == s.started.Load() })
	if g, st, a := s.gone.Load(), s.started.Load(), s.answered.Load(); g != st || a != 0 {
		t.Errorf("server: %d requests started, %d dropped by the client, %d answered; want all dropped", st, g, a)
	}
}

// A server slower than Options.Timeout: the call gives up at the timeout,
// with an error matching verify.ErrTimeout, and drops the request.
func TestTimeout(t *testing.T) {
	const timeout = 150 * time.Millisecond
	v, srv := slowServer(t, httpverify.Options{Timeout: timeout})
	start := time.Now()
	ok, err := v.Verify(context.Background(), here)
	elapsed := time.Since(start)
	if ok || !errors.Is(err, verify.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Verify = %v, %v; want a timeout", ok, err)
	}
	if elapsed < timeout || elapsed > timeout+3*time.Second {
		t.Errorf("Verify took %v, want about %v", elapsed, timeout)
	}

	// Through a registry with a longer timeout: the verifier's own
	// timeout ends the check, attributed to it.
	got := registry(t, v, time.Minute).Check(context.Background(), here)
	if got.Passed || got.Source != name || !errors.Is(got.Err, verify.ErrTimeout) {
		t.Errorf("Check = %+v, want %s timed out", got, name)
	}
	srv.waitGone(t)
}

// The registry's deadline, or the caller's cancellation, ends the call
// too; the error says which.
func TestCallerContext(t *testing.T) {
	v, srv := slowServer(t, httpverify.Options{Timeout: time.Minute})

	start := time.Now()
	got := registry(t, v, 100*time.Millisecond).Check(context.Background(), here)
	if got.Passed || got.Source != name || !errors.Is(got.Err, verify.ErrTimeout) {
		t.Errorf("Check under a 100ms registry timeout = %+v, want %s timed out", got, name)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Check took %v under a 100ms registry timeout", elapsed)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	ok, err := v.Verify(ctx, here)
	if ok || !errors.Is(err, context.Canceled) || errors.Is(err, verify.ErrTimeout) {
		t.Errorf("Verify with a cancelled context = %v, %v; want Canceled, not a timeout", ok, err)
	}
	srv.waitGone(t)
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(answer(`{"allowed": true}`))
	addr := srv.URL
	srv.Close()
	v, err := httpverify.New(name, addr, httpverify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ok, err := v.Verify(context.Background(), here)
	if ok || err == nil || errors.Is(err, verify.ErrTimeout) {
		t.Fatalf("Verify to a closed port = %v, %v; want a transport error", ok, err)
	}
}

func TestNew(t *testing.T) {
	v, err := httpverify.New("Game", "https://user:pw@example.com/check", httpverify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v.URL(), "pw") {
		t.Errorf("URL() = %q shows the password", v.URL())
	}

	tests := []struct {
		name, url string
		opts      httpverify.Options
		want      []string
	}{
		{"", "http://h/", httpverify.Options{}, []string{"name"}},
		{"Game Side", "http://h/", httpverify.Options{}, []string{"whitespace"}},
		{"G", "ftp://h/", httpverify.Options{}, []string{"scheme"}},
		{"G", "/relative", httpverify.Options{}, []string{"scheme"}},
		{"G", "http:///nohost", httpverify.Options{}, []string{"no host"}},
		{"G", "http://h/%zz", httpverify.Options{}, []string{"URL"}},
		{"G", "http://h/", httpverify.Options{Timeout: -1}, []string{"Timeout"}},
		{"G", "http://h/", httpverify.Options{MaxResponseBytes: -1}, []string{"MaxResponseBytes"}},
		{"G", "http://h/", httpverify.Options{Header: http.Header{"Bad Name": {"x"}}}, []string{"header name"}},
		{"G", "http://h/", httpverify.Options{Header: http.Header{"X-Token": {"a\r\nInjected: 1"}}}, []string{"line break"}},
		{"", "gopher://h/", httpverify.Options{Timeout: -1, MaxResponseBytes: -1},
			[]string{"name", "scheme", "Timeout", "MaxResponseBytes"}},
	}
	for _, tc := range tests {
		v, err := httpverify.New(tc.name, tc.url, tc.opts)
		if err == nil {
			v.Close()
			t.Errorf("New(%q, %q, %+v) succeeded", tc.name, tc.url, tc.opts)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%q, %q, %+v) = %v; does not mention %q", tc.name, tc.url, tc.opts, err, w)
			}
		}
	}
	if _, err := httpverify.New("", "http://h/", httpverify.Options{}); !errors.Is(err, verify.ErrInvalidSource) {
		t.Errorf("New with an empty name = %v, want verify.ErrInvalidSource", err)
	}
}

// The configured headers are copied at New: changing the map later does
// not change the requests.
func TestHeaderCopied(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer one"}}
	auth := make(chan string, 1)
	_, v := server(t, func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		io.WriteString(w, `{"allowed": true}`)
	}, httpverify.Options{Header: h})
	h.Set("Authorization", "Bearer two")
	if _, err := v.Verify(context.Background(), here); err != nil {
		t.Fatal(err)
	}
	if got := <-auth; got != "Bearer one" {
		t.Errorf("Authorization = %q, want the value at New", got)
	}
}

// A caller's client is used as given.
func TestCustomClient(t *testing.T) {
	srv := httptest.NewServer(answer(`{"allowed": false}`))
	defer srv.Close()
	var calls atomic.Int32
	base := srv.Client().Transport
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return base.RoundTrip(r)
	})}
	v, err := httpverify.New(name, srv.URL, httpverify.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ok, err := v.Verify(context.Background(), here)
	if ok || err != nil || calls.Load() != 1 {
		t.Fatalf("Verify = %v, %v after %d round trips through the client; want false after 1", ok, err, calls.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Many checks at once, some answered, some denied, some timing out and
// some failing: every answer is right, and once the verifier and server
// are closed no goroutine is left.
func TestConcurrentNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ X int64 }
		json.NewDecoder(r.Body).Decode(&req)
		switch req.X % 4 {
		case 0:
			io.WriteString(w, `{"allowed": true}`)
		case 1:
			io.WriteString(w, `{"allowed": false}`)
		case 2:
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done() // slower than the timeout
		default:
			http.Error(w, "no", http.StatusBadGateway)
		}
	}))
	v, err := httpverify.New(name, srv.URL, httpverify.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, v, time.Minute)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 12 {
				x := int64(g*12 + i)
				got := reg.Check(context.Background(), verify.Location{World: "w", X: x})
				var ok bool
				switch x % 4 {
				case 0:
					ok = got.Passed
				case 1:
					ok = !got.Passed && got.Source == name && got.Err == nil
				case 2:
					ok = !got.Passed && got.Source == name && errors.Is(got.Err, verify.ErrTimeout)
				default:
					var se *httpverify.StatusError
					ok = !got.Passed && got.Source == name && errors.As(got.Err, &se) && se.Code == 502
				}
				if !ok {
					t.Errorf("Check(x=%d) = %+v", x, got)
				}
			}
		})
	}
	wg.Wait()
	v.Close()
	srv.Close()
	goleak.VerifyNone(t, before)
}

// BenchmarkVerify: one check over loopback HTTP, connection reused.
func BenchmarkVerify(b *testing.B) {
	srv := httptest.NewServer(answer(`{"allowed": true}`))
	defer srv.Close()
	v, err := httpverify.New(name, srv.URL, httpverify.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := v.Verify(ctx, here); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
