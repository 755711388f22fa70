package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBlockBeforeSkipNotCounted records a trace in which an HTTP
// goroutine blocks on a lock, wakes before the measured stretch, waits
// for its connection's next request and serves it after: the block must
// not be counted, let alone from its start to the next request.
func TestBlockBeforeSkipNotCounted(t *testing.T) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lock" {
			mu.Lock()
			defer mu.Unlock()
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client := srv.Client() // one keep-alive connection: one serving goroutine
	get := func(path string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get("/") // open the connection before the trace

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	go func() {
		time.Sleep(30 * time.Millisecond)
		mu.Unlock()
	}()
	get("/lock") // blocks some 30 ms on mu, near the trace's start
	time.Sleep(400 * time.Millisecond)
	get("/") // after the skip: no block at all
	trace.Stop()

	res, err := analyze(&buf, 200*time.Microsecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for site, b := range res.blocks {
		if strings.Contains(site, "Mutex") && b.n > 0 {
			t.Errorf("%s: %d blocks counted, longest %v; the only one ended before the measured stretch", site, b.n, time.Duration(b.max))
		}
	}
	if len(res.waits) == 0 {
		t.Errorf("no HTTP goroutine's wait found: the request after the skip was not seen")
	}
}
