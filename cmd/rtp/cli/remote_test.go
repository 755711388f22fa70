package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtpengine/rtp/api"
)

const fakeToken = "fake-admin-token-0123456789"

// fakeAPI answers the routes the remote commands use, as the API contract
// documents them. Mutating and admin routes need fakeToken.
type fakeAPI struct {
	mu        sync.Mutex // protects ops
	ops       []string
	teleports atomic.Int64
	completes atomic.Int64
	joins     atomic.Int64
	login     atomic.Int64 // login reserve left
	missEvery int64        // every missEvery-th teleport misses (0: none)
	fullAfter int64        // the general sink is full from this stats call on (0: never)
	stats     atomic.Int64
	failEvery int64 // every failEvery-th teleport fails 500 (0: none)
}

func (f *fakeAPI) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	errorJSON := func(w http.ResponseWriter, status int, code, msg string) {
		if status == 503 {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, msg)
	}
	region := func(w http.ResponseWriter, r *http.Request) bool {
		if n := r.PathValue("region"); n != "default" && n != "east" {
			errorJSON(w, 404, "unknown-region", fmt.Sprintf("no region %q", n))
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/regions", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"regions":[{"name":"default","world":"world","paused":false},{"name":"east","world":"world","paused":true}]}`))
	})
	mux.HandleFunc("GET /v1/regions/{region}/stats", func(w http.ResponseWriter, r *http.Request) {
		if !region(w, r) {
			return
		}
		n := r.PathValue("region")
		general := 9
		if calls := f.stats.Add(1); f.fullAfter > 0 && calls >= f.fullAfter {
			general = 10
		}
		json.NewEncoder(w).Encode(map[string]any{
			"region": n, "world": "world", "paused": n == "east", "restored": 12,
			"latency": map[string]any{"count": 40, "p50Ms": 0.02, "p90Ms": 0.05, "p99Ms": 0.4, "maxMs": 3},
			"pipeline": map[string]any{
				"backlog": map[string]any{"fill": 5, "capacity": 256}, "cold": map[string]any{"fill": 700, "capacity": 4096},
				"sinks": []map[string]any{{"name": "general", "kind": "general", "fill": general, "capacity": 10, "quota": 10, "hits": 38},
					{"name": "login", "kind": "login", "fill": 20, "capacity": 20, "quota": 20}},
				"misses": 2, "screened": 900, "promotions": 60,
				"screenRejections": map[string]int{"water": 300, "lava": 20}, "promotionRejections": map[string]int{"claims": 7},
				"reservationFailures":  map[string]int{"unreadable": 4, "timeout": 1},
				"lastReservationError": "chunk(3, 4): anvil: region/r.0.0.mca: zlib: invalid header",
			},
			"unique":        map[string]any{"radiusBlocks": 2, "dropped": 6, "spotChunks": 31},
			"unknownBlocks": map[string]any{"names": 3, "rejections": 90},
			"watch": map[string]any{"polls": 50, "changedChunks": 8, "dropped": 5,
				"reader": map[string]any{"readErrors": 4, "tornRetries": 8, "damagedChunks": 2}},
			"memory":   map[string]any{"coverage": 0.123, "badFraction": 0.1, "activeRuns": 44, "topCause": "water", "topCauseShare": 0.8},
			"resident": map[string]any{"open": 3, "resident": 17},
		})
	})
	admin := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+fakeToken {
			w.Header().Set("WWW-Authenticate", "Bearer")
			errorJSON(w, 401, "unauthorized", "a bearer token is required")
			return false
		}
		return true
	}
	mux.HandleFunc("POST /v1/admin/regions/{region}/scan/{op}", func(w http.ResponseWriter, r *http.Request) {
		if !admin(w, r) || !region(w, r) {
			return
		}
		f.mu.Lock()
		f.ops = append(f.ops, r.PathValue("op")+" "+r.PathValue("region"))
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /v1/admin/regions/{region}/memory", func(w http.ResponseWriter, r *http.Request) {
		if !admin(w, r) || !region(w, r) {
			return
		}
		w.Write([]byte(`{"world":"world","len":100,"now":1,"active":[{"start":3,"len":2,"cause":"water","tier":"static"}],"probation":[]}` + "\n"))
	})
	mux.HandleFunc("POST /v1/regions/{region}/teleports", func(w http.ResponseWriter, r *http.Request) {
		if !admin(w, r) || !region(w, r) {
			return
		}
		var body struct {
			Player string `json:"player"`
			Sink   string `json:"sink"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		n := f.teleports.Add(1)
		switch {
		case body.Sink == "login" && f.login.Add(-1) < 0:
			errorJSON(w, 503, "no-location", "login reserve empty")
			return
		case body.Sink == "login":
		case f.missEvery > 0 && n%f.missEvery == 0:
			errorJSON(w, 503, "no-location", "no location ready")
			return
		case f.failEvery > 0 && n%f.failEvery == 0:
			errorJSON(w, 500, "internal", "internal error")
			return
		}
		fmt.Fprintf(w, `{"id":%d,"region":"default","world":"world","x":1,"y":70,"z":2,"biome":"plains","sink":"general","waitedMs":0}`, n)
	})
	mux.HandleFunc("POST /v1/teleports/{id}/complete", func(w http.ResponseWriter, r *http.Request) {
		if admin(w, r) {
			f.completes.Add(1)
			w.WriteHeader(204)
		}
	})
	mux.HandleFunc("POST /v1/regions/{region}/players/{player}/{event}", func(w http.ResponseWriter, r *http.Request) {
		if admin(w, r) && region(w, r) {
			if r.PathValue("event") == "join" {
				f.joins.Add(1)
			}
			w.WriteHeader(204)
		}
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestStatsCommand(t *testing.T) {
	f := &fakeAPI{}
	addr := f.start(t)
	out, stderr, err := run(t, "stats", "--addr", addr, "--region", "default")
	if err != nil {
		t.Fatalf("stats: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"region default on world \"world\"",
		"general 9/10, login 20/20",
		"cold:          700/4096 (backlog 5/256, restored at start 12)",
		"38 hits, 2 misses (5.00%)",
		"p50 20µs  p90 50µs  p99 400µs  max 3ms  (40 teleports)",
		"water 300, lava 20, claims 7",
		"coverage 12.3%, bad 10.0% in 44 runs",
		"top cause:     water (80.0% of bad)",
		"failures:      reserving a chunk: unreadable 4, timeout 1",
		"unreadable:    chunk(3, 4): anvil: region/r.0.0.mca: zlib: invalid header",
		"unknown:       3 block names (never landed on), 90 columns screened out",
		"unique:        radius 2, 31 chunks hold spots, 6 cached places dropped as too close",
		"world files:   50 polls, 8 chunks changed, 5 places dropped; 2 damaged chunks, 4 read errors, 8 torn reads retried",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
	// Every region, by a bare host:port.
	out, _, err = run(t, "stats", "--addr", strings.TrimPrefix(addr, "http://"))
	if err != nil || !strings.Contains(out, "region default") || !strings.Contains(out, "region east on world \"world\" (scan paused)") {
		t.Fatalf("stats of every region = %q, %v", out, err)
	}
	out, _, err = run(t, "stats", "--addr", addr, "--json")
	var all map[string]map[string]any
	if err != nil || json.Unmarshal([]byte(out), &all) != nil || all["east"]["paused"] != true || all["default"]["restored"] != 12.0 {
		t.Fatalf("stats --json = %q, %v", out, err)
	}
	out, _, err = run(t, "stats", "--addr", addr, "--region", "east", "--json")
	var one api.Stats
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err != nil || dec.Decode(&one) != nil || one.Region != "east" || one.Latency.P99Ms != 0.4 || one.Unique.RadiusBlocks != 2 {
		t.Fatalf("stats --region east --json = %q, %v", out, err)
	}
	// The API's shape, every key of it, whatever the server left out.
	var keys map[string]any
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"region", "world", "paused", "restored", "latency", "served", "pipeline", "memory",
		"resident", "unique", "unknownBlocks", "watch", "recovery", "handouts"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("stats --json lacks the key %q:\n%s", k, out)
		}
	}
	if sinks := keys["pipeline"].(map[string]any)["sinks"].([]any); len(sinks) != 2 || sinks[0].(map[string]any)["demandPerSecond"] == nil {
		t.Errorf("stats --json sinks = %v, want the API's sink shape", sinks)
	}
	_, _, err = run(t, "stats", "--addr", addr, "--region", "west")
	if err == nil || !strings.Contains(err.Error(), "unknown-region") || ExitCode(err) != 1 {
		t.Fatalf("stats of an unknown region = %v (exit %d)", err, ExitCode(err))
	}
	if _, _, err := run(t, "stats", "--addr", "ftp://x"); ExitCode(err) != 2 {
		t.Fatalf("stats with a bad address = %v, want a usage error", err)
	}
}

// TestStatsUntilFull: --until-full polls until every sink holds its
// quota, and fails naming the short sinks when the timeout passes first.
func TestStatsUntilFull(t *testing.T) {
	f := &fakeAPI{fullAfter: 3}
	addr := f.start(t)
	out, stderr, err := run(t, "stats", "--addr", addr, "--region", "default", "--until-full")
	if err != nil || !strings.Contains(out, "general 10/10") || f.stats.Load() != 3 {
		t.Fatalf("stats --until-full = %q, %v (%d polls)\n%s", out, err, f.stats.Load(), stderr)
	}
	never := &fakeAPI{}
	addr = never.start(t)
	_, _, err = run(t, "stats", "--addr", addr, "--region", "default", "--until-full", "--timeout", "600ms")
	if err == nil || !strings.Contains(err.Error(), "sinks not full after 600ms: default/general 9/10") {
		t.Fatalf("stats --until-full of a sink that stays short = %v", err)
	}
}

func TestScanCommand(t *testing.T) {
	f := &fakeAPI{}
	addr := f.start(t)
	_, _, err := run(t, "scan", "pause", "--addr", addr, "--region", "default")
	if err == nil || !strings.Contains(err.Error(), "401 unauthorized") {
		t.Fatalf("scan pause without a token = %v, want 401", err)
	}
	out, _, err := run(t, "scan", "pause", "--addr", addr, "--region", "default", "--token", fakeToken)
	if err != nil || out != "region default: scan paused\n" {
		t.Fatalf("scan pause = %q, %v", out, err)
	}
	t.Setenv(envToken, fakeToken)
	t.Setenv(envAddr, addr)
	for _, op := range []string{"resume", "reset"} {
		if _, _, err := run(t, "scan", op, "--region", "east"); err != nil {
			t.Fatalf("scan %s with the token from the environment: %v", op, err)
		}
	}
	f.mu.Lock()
	got := strings.Join(f.ops, ", ")
	f.mu.Unlock()
	if got != "pause default, resume east, reset east" {
		t.Fatalf("server saw %q", got)
	}
	if _, _, err := run(t, "scan", "reset"); ExitCode(err) != 2 {
		t.Fatalf("scan reset without --region = %v, want a usage error", err)
	}
	if _, _, err := run(t, "scan", "reset", "--region", "nowhere"); err == nil || !strings.Contains(err.Error(), "unknown-region") {
		t.Fatalf("scan reset of an unknown region = %v", err)
	}
}

func TestMemoryExportRemote(t *testing.T) {
	f := &fakeAPI{}
	addr := f.start(t)
	out, _, err := run(t, "memory", "export", "--addr", addr, "--token", fakeToken, "--region", "default")
	var exp struct {
		World  string
		Active []struct{ Cause string }
	}
	if err != nil || json.Unmarshal([]byte(out), &exp) != nil || exp.World != "world" || len(exp.Active) != 1 || exp.Active[0].Cause != "water" {
		t.Fatalf("memory export --addr = %q, %v", out, err)
	}
	if _, _, err := run(t, "memory", "export"); ExitCode(err) != 2 {
		t.Fatalf("memory export without FILE or --region = %v, want a usage error", err)
	}
}

func TestBenchHTTP(t *testing.T) {
	f := &fakeAPI{missEvery: 20}
	f.login.Store(25)
	addr := f.start(t)
	t.Setenv(envToken, fakeToken)
	out, stderr, err := run(t, "bench", "http", "--addr", addr, "--rate", "400", "--duration", "250ms", "--complete", "--joins", "30")
	if err != nil {
		t.Fatalf("bench http: %v\n%s", err, stderr)
	}
	flat := strings.Join(strings.Fields(out), " ") // the columns' widths vary
	for _, want := range []string{"100 sent, 95 ok, 0 errors, 5 misses", "latency:", "p99", "rate:",
		"join burst: 30 players, 30 joined (0 errors); 25 ok, 5 misses, 0 errors", "burst served by sink: general 25"} {
		if !strings.Contains(flat, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	if f.completes.Load() != 95+25 || f.joins.Load() != 30 {
		t.Errorf("server saw %d completions and %d joins, want 120 and 30", f.completes.Load(), f.joins.Load())
	}

	// Misses above a bound fail; --json prints the figures.
	f.login.Store(0)
	out, _, err = run(t, "bench", "http", "--addr", addr, "--rate", "200", "--duration", "100ms", "--max-misses", "0", "--json")
	if err == nil || !strings.Contains(err.Error(), "misses, more than 0") || ExitCode(err) != 1 {
		t.Fatalf("bench with misses and --max-misses 0 = %v", err)
	}
	var rep struct {
		Rate struct{ Sent, OK, Misses uint64 }
	}
	if json.Unmarshal([]byte(out), &rep) != nil || rep.Rate.Sent != 20 || rep.Rate.Misses != 1 {
		t.Fatalf("bench --json = %q", out)
	}

	// Errors fail the run, and so does a p99 above its bound.
	f2 := &fakeAPI{failEvery: 10}
	addr2 := f2.start(t)
	out, _, err = run(t, "bench", "http", "--addr", addr2, "--rate", "200", "--duration", "100ms")
	if err == nil || !strings.Contains(err.Error(), "2 errors") || !strings.Contains(out, "internal 2") {
		t.Fatalf("bench against a failing server = %v\n%s", err, out)
	}
	_, _, err = run(t, "bench", "http", "--addr", addr, "--rate", "100", "--duration", "50ms", "--max-p99", "1ns")
	if err == nil || !strings.Contains(err.Error(), "p99") {
		t.Fatalf("bench with --max-p99 1ns = %v", err)
	}
	for _, args := range [][]string{{"--rate", "-1"}, {"--rate", "0"}, {"--duration", "0"}, {"--concurrency", "0"}, {"--joins", "-3"}} {
		if _, _, err := run(t, append([]string{"bench", "http", "--addr", addr}, args...)...); ExitCode(err) != 2 {
			t.Errorf("bench http %v = %v, want a usage error", args, err)
		}
	}
}
