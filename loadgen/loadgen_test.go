package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fake is a controllable server: the n-th teleport (from 1) is answered as
// outcome(n) says, after delay(n).
type fake struct {
	outcome func(n int64) (status int, code string)
	delay   func(n int64) time.Duration
	joinErr func(player string) bool

	n, completes, joins, quits, conns atomic.Int64
	login                             atomic.Int64 // login reserve left

	mu       sync.Mutex // protects arrivals
	arrivals []time.Time
}

func (f *fake) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, status int, code string) {
		if status == 503 {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(status)
		if code != "" {
			fmt.Fprintf(w, `{"error":{"code":%q,"message":"fake"}}`, code)
		}
	}
	mux.HandleFunc("POST /v1/regions/default/teleports", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Player string `json:"player"`
			Sink   string `json:"sink"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Player == "" {
			fail(w, 400, "bad-request")
			return
		}
		n := f.n.Add(1)
		f.mu.Lock()
		f.arrivals = append(f.arrivals, time.Now())
		f.mu.Unlock()
		if f.delay != nil {
			time.Sleep(f.delay(n))
		}
		if body.Sink == "login" {
			if f.login.Add(-1) < 0 {
				fail(w, 503, "no-location")
				return
			}
		} else if f.outcome != nil {
			if status, code := f.outcome(n); status != 200 {
				fail(w, status, code)
				return
			}
		}
		fmt.Fprintf(w, `{"id":%d,"region":"default","world":"world","x":1,"y":64,"z":2,"biome":"plains","sink":"general","waitedMs":0}`, n)
	})
	mux.HandleFunc("POST /v1/teleports/{id}/complete", func(w http.ResponseWriter, r *http.Request) {
		f.completes.Add(1)
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /v1/regions/default/players/{player}/join", func(w http.ResponseWriter, r *http.Request) {
		if f.joinErr != nil && f.joinErr(r.PathValue("player")) {
			fail(w, 409, "sink-disabled")
			return
		}
		f.joins.Add(1)
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /v1/regions/default/players/{player}/quit", func(w http.ResponseWriter, r *http.Request) {
		f.quits.Add(1)
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRunCounts(t *testing.T) {
	f := &fake{outcome: func(n int64) (int, string) {
		switch {
		case n%10 == 3:
			return 503, "no-location"
		case n%25 == 7:
			return 500, "internal"
		case n%40 == 9:
			return 502, ""
		}
		return 200, ""
	}}
	url := f.start(t)
	res, err := Run(t.Context(), Config{BaseURL: url, Rate: 400, Duration: 250 * time.Millisecond, Complete: true, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	// Requests 1..100: misses 3, 13, ..., 93 (10); internal 7, 32, 57, 82
	// (4); 502 for 9, 49, 89 (3).
	if res.Sent != 100 || res.Misses != 10 || res.Errors != 7 || res.OK != 83 {
		t.Fatalf("Sent %d OK %d Misses %d Errors %d, want 100 83 10 7", res.Sent, res.OK, res.Misses, res.Errors)
	}
	if res.ErrorCodes["internal"] != 4 || res.ErrorCodes["http-502"] != 3 || len(res.ErrorCodes) != 2 {
		t.Fatalf("ErrorCodes = %v, want internal 4, http-502 3", res.ErrorCodes)
	}
	if res.Completed != 83 || res.CompleteErrors != 0 || f.completes.Load() != 83 {
		t.Fatalf("Completed %d (errors %d), server saw %d, want 83", res.Completed, res.CompleteErrors, f.completes.Load())
	}
	if res.Latency.Count() != 100 || res.Service.Count() != 100 {
		t.Fatalf("histograms hold %d and %d values, want 100", res.Latency.Count(), res.Service.Count())
	}
	if !(res.P50 <= res.P90 && res.P90 <= res.P99 && res.P99 <= res.Max && res.Max > 0) {
		t.Fatalf("percentiles out of order: %v %v %v %v", res.P50, res.P90, res.P99, res.Max)
	}
	if res.ServiceMax > res.Max {
		t.Fatalf("service max %v above latency max %v", res.ServiceMax, res.Max)
	}
}

// TestRunRate checks that the requests follow the timeline: the achieved
// rate is near the target and arrivals are spread, not bunched.
func TestRunRate(t *testing.T) {
	f := &fake{}
	url := f.start(t)
	res, err := Run(t.Context(), Config{BaseURL: url, Rate: 500, Duration: 600 * time.Millisecond, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 300 || res.OK != 300 {
		t.Fatalf("Sent %d OK %d, want 300", res.Sent, res.OK)
	}
	// The generator may fall behind its timeline only by as much as it
	// reports: its own timer's lateness (a loaded machine) and the
	// slowest answer.
	const timeline = 598 * time.Millisecond
	late := res.TimerLag + res.Max + 50*time.Millisecond
	if res.Achieved > 530 {
		t.Errorf("achieved %.0f/s, want about 500", res.Achieved)
	}
	if res.Elapsed < timeline-8*time.Millisecond {
		t.Errorf("elapsed %v, want at least the %v timeline", res.Elapsed, timeline)
	}
	if res.Elapsed > timeline+late {
		t.Errorf("elapsed %v: behind the %v timeline by more than its timer lag %v and slowest answer %v", res.Elapsed, timeline, res.TimerLag, res.Max)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	first := f.arrivals[0]
	early := 0
	for _, a := range f.arrivals {
		if a.Sub(first) < 200*time.Millisecond {
			early++
		}
	}
	// A third of the timeline should hold about 100 requests: never more
	// (nothing is sent before it is due), and fewer only by what the
	// generator's reported lateness held back.
	behind := int(500 * (res.TimerLag + res.Max).Seconds())
	if early < 70-behind || early > 130 {
		t.Errorf("%d of 300 requests arrived in the first 200 ms, want about 100 (timer lag %v)", early, res.TimerLag)
	}
	if c := f.conns.Load(); c > 8 {
		t.Errorf("300 requests at concurrency 4 opened %d connections, want at most 8 (keep-alive)", c)
	}
}

// TestCoordinatedOmission stalls one request while the schedule goes on:
// the requests due during the stall wait for the single worker, and their
// latency, measured from their due time, shows it; their service time does
// not.
func TestCoordinatedOmission(t *testing.T) {
	f := &fake{delay: func(n int64) time.Duration {
		if n == 2 {
			return 300 * time.Millisecond
		}
		return 0
	}}
	url := f.start(t)
	res, err := Run(t.Context(), Config{BaseURL: url, Rate: 100, Duration: 600 * time.Millisecond, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 60 || res.OK != 60 {
		t.Fatalf("Sent %d OK %d, want 60", res.Sent, res.OK)
	}
	if n := res.Service.CountAbove(200 * time.Millisecond); n != 1 {
		t.Errorf("%d service times above 200ms, want 1 (the stalled request)", n)
	}
	// Requests due 20..300 ms waited behind the stall: those due before
	// 230 ms waited more than 70 ms.
	if n := res.Latency.CountAbove(70 * time.Millisecond); n < 15 {
		t.Errorf("%d latencies above 70ms, want at least 15 (queued behind the stall)", n)
	}
	if res.MaxQueue < 200*time.Millisecond {
		t.Errorf("MaxQueue %v, want at least 200ms", res.MaxQueue)
	}
	if res.P99 < 200*time.Millisecond {
		t.Errorf("P99 %v hides the stall", res.P99)
	}
}

func TestRunCancel(t *testing.T) {
	f := &fake{}
	url := f.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Config{BaseURL: url, Rate: 100, Duration: 10 * time.Second, WarmConns: 2})
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run past its context = %v, want DeadlineExceeded", err)
	}
	// It stops with its context: it sends at most the requests due while
	// it ran (at 100/s, one per 10 ms from its start, and one more), not
	// the 1,000 of its 10 s plan. The bound follows the time it actually
	// ran, as a loaded machine may stall it past the deadline, and then
	// it catches up on the requests that fell due meanwhile.
	due := uint64(elapsed/(10*time.Millisecond)) + 2
	if res.Sent < 1 || res.Sent > due || res.Sent != res.OK+res.Misses+res.Errors {
		t.Fatalf("Sent %d (OK %d) in %v, want between 1 and the %d due while it ran, every one answered", res.Sent, res.OK, elapsed, due)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("Run returned %v after a 150ms deadline", elapsed)
	}
}

func TestRunTransportErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res, err := Run(t.Context(), Config{BaseURL: "http://" + addr, Rate: 200, Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 10 || res.Errors != 10 || res.ErrorCodes["transport"] != 10 {
		t.Fatalf("Sent %d Errors %d codes %v, want 10 transport errors", res.Sent, res.Errors, res.ErrorCodes)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Rate: 1, Duration: time.Second},
		{BaseURL: "http://x", Rate: 0, Duration: time.Second},
		{BaseURL: "http://x", Rate: -1, Duration: time.Second},
		{BaseURL: "http://x", Rate: 1, Duration: 0},
		{BaseURL: "http://x", Rate: 1e9, Duration: time.Hour},
		{BaseURL: "http://x", Rate: 1, Duration: time.Second, Concurrency: -1},
		{BaseURL: "x:y", Rate: 1, Duration: time.Second},
	} {
		if _, err := Run(t.Context(), c); err == nil {
			t.Errorf("Run(%+v) = nil error", c)
		}
	}
	for _, c := range []BurstConfig{{Players: 1}, {BaseURL: "http://x"}, {BaseURL: "http://x", Players: 1_000_000}} {
		if _, err := Burst(t.Context(), c); err == nil {
			t.Errorf("Burst(%+v) = nil error", c)
		}
	}
}

func TestBurst(t *testing.T) {
	f := &fake{joinErr: func(p string) bool {
		i, _ := strconv.Atoi(strings.TrimPrefix(p, "join-"))
		return i%17 == 16
	}}
	f.login.Store(30)
	url := f.start(t)
	res, err := Burst(t.Context(), BurstConfig{BaseURL: url, Players: 40, Complete: true, Quit: true})
	if err != nil {
		t.Fatal(err)
	}
	// join-16 and join-33 fail to join; 38 teleports take a reserve of 30.
	if res.Joined != 38 || res.JoinErrors != 2 || res.OK != 30 || res.Misses != 8 || res.Errors != 0 {
		t.Fatalf("burst = %+v, want 38 joined, 2 join errors, 30 OK, 8 misses", res)
	}
	if res.BySink["general"] != 30 || len(res.BySink) != 1 {
		t.Fatalf("BySink = %v, want general 30 (the fake names every sink general)", res.BySink)
	}
	if res.ErrorCodes["join sink-disabled"] != 2 {
		t.Fatalf("ErrorCodes = %v", res.ErrorCodes)
	}
	if res.Completed != 30 || f.completes.Load() != 30 || res.Quits != 40 || f.quits.Load() != 40 {
		t.Fatalf("completed %d (server %d), quits %d (server %d), want 30 and 40",
			res.Completed, f.completes.Load(), res.Quits, f.quits.Load())
	}
	if res.Max <= 0 || res.P50 > res.P99 || res.P99 > res.Max || res.Elapsed < res.Max {
		t.Fatalf("latencies %v %v %v over %v", res.P50, res.P99, res.Max, res.Elapsed)
	}
}
