package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// testClock is the engine's clock in these tests: the real time plus an
// offset the test moves forward.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// smallConfig is the default configuration with a small region (a square
// of 32 x 32 chunks), a fast pulse and memory rebuild, and every sink
// enabled, its data in a temporary folder.
func smallConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 256}
	rc.Pulse = 10 * time.Millisecond
	rc.Memory.RebuildInterval = 100 * time.Millisecond
	rc.Sinks.Login.Enabled = true
	rc.Sinks.Network.Enabled = true
	rc.Sinks.Personal.Enabled = true
	cfg.Regions[config.DefaultRegionName] = rc
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// env is a running engine and server on a real listener.
type env struct {
	t      *testing.T
	cfg    *config.Config
	e      *engine.Engine
	srv    *Server
	base   string
	client *http.Client
	token  string

	stopServe  func() error // stops Serve and returns its error
	stopEngine func() error // stops Run and returns its error
}

type envOptions struct {
	token   string
	clock   *testClock
	norun   bool // do not Run the engine (env.run does)
	timeout time.Duration
	reload  func(ctx context.Context) error
}

// start opens an engine over cfg, runs it (unless o.norun) and serves it
// on 127.0.0.1:0. Cleanup stops both.
func start(t *testing.T, cfg *config.Config, o envOptions) *env {
	t.Helper()
	eopts := engine.Options{Logger: quietLogger(), SaveInterval: 50 * time.Millisecond}
	if o.clock != nil {
		eopts.Clock = o.clock.Now
	}
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatalf("config.Spec: %v", err)
	}
	e, err := engine.New(t.Context(), spec, eopts)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ev := &env{t: t, cfg: cfg, e: e, token: o.token, client: &http.Client{Timeout: 40 * time.Second}}
	ev.stopEngine = func() error { return e.Close(context.Background()) }
	if !o.norun {
		ev.run()
	}
	ev.srv, err = New(e, Options{Logger: quietLogger(), Token: AdminToken(o.token), Reload: o.reload})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ev.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var tt Timeouts
	if o.timeout > 0 {
		tt.Shutdown = o.timeout
	}
	go func() { done <- ev.srv.Serve(ctx, ln, tt) }()
	var serveErr error
	stopped := false
	ev.stopServe = func() error {
		if !stopped {
			stopped = true
			cancel()
			serveErr = <-done
		}
		return serveErr
	}
	t.Cleanup(func() { _ = ev.stopServe() })
	return ev
}

// run starts the engine's Run; stopEngine then stops it.
func (ev *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ev.e.Run(ctx) }()
	var runErr error
	stopped := false
	ev.stopEngine = func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	ev.t.Cleanup(func() { _ = ev.stopEngine() })
}

// call sends a request to the server, with the token if the env has one,
// and checks the answer against api/openapi.yaml.
func (ev *env) call(method, path, body string) answer {
	ev.t.Helper()
	return ev.callAuth(method, path, body, ev.token)
}

func (ev *env) callAuth(method, path, body, token string) answer {
	ev.t.Helper()
	req, err := http.NewRequest(method, ev.base+path, strings.NewReader(body))
	if err != nil {
		ev.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if mutating(method) {
		req.Header.Set(HeaderRequest, "1")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ev.client.Do(req)
	if err != nil {
		ev.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		ev.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	checkSpec(ev.t, req, []byte(body), resp.StatusCode, resp.Header, data)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// teleport asks for a location of region and decodes it.
func (ev *env) teleport(region, body string) (api.Teleport, answer) {
	ev.t.Helper()
	a := ev.call("POST", "/v1/regions/"+region+"/teleports", body)
	var tp api.Teleport
	if a.status == 200 {
		if err := json.Unmarshal(a.body, &tp); err != nil {
			ev.t.Fatalf("teleport answer %s: %v", a.body, err)
		}
	}
	return tp, a
}

func (ev *env) stats(region string) api.Stats {
	ev.t.Helper()
	a := ev.call("GET", "/v1/regions/"+region+"/stats", "")
	if a.status != 200 {
		ev.t.Fatalf("stats = %d %s", a.status, a.body)
	}
	var st api.Stats
	if err := json.Unmarshal(a.body, &st); err != nil {
		ev.t.Fatal(err)
	}
	return st
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, d, what, cond)
}

// checkSafe checks a location independently of the engine: it loads the
// chunk from a procedural world of its own, built as the engine builds it
// but without an archive, and reads the landing column's blocks: solid
// ground (not air-like, no fluid, not unsafe) right under the feet and two
// free blocks (air, or air-like such as grass or flowers, no fluid) where
// the feet and head go; the region's safety rules must accept the same y.
// The location must lie in the region's shape.
func checkSafe(t *testing.T, cfg *config.Config, tp api.Teleport) {
	t.Helper()
	gen, err := procgen.New(cfg.Worlds[tp.World].Procedural.Params())
	if err != nil {
		t.Fatal(err)
	}
	pw, err := procworld.New(gen, procworld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	airLike, err := safety.ParseMatcher("#air_like")
	if err != nil {
		t.Fatal(err)
	}
	unsafe, err := safety.ParseMatcher("#unsafe")
	if err != nil {
		t.Fatal(err)
	}
	b := geom.Block{X: tp.X, Z: tp.Z}
	ch, err := pw.Load(t.Context(), b.Chunk())
	if err != nil {
		t.Fatalf("Load(%v): %v", b.Chunk(), err)
	}
	x, z := b.Local()
	col := ch.Column(x, z)
	ground, above := col.Ground, col.Above
	if ch.Blocks != nil { // the full blocks, where the source keeps them
		y := int(tp.Y)
		ground = ch.Blocks.Block(x, y-1, z)
		above = [2]world.BlockID{ch.Blocks.Block(x, y, z), ch.Blocks.Block(x, y+1, z)}
	} else if int64(col.Top)+1 != tp.Y {
		t.Errorf("location %+v: the column's top is at y %d, want the feet at y %d", tp, col.Top, col.Top+1)
	}
	if g := ground.String(); ground.IsAir() || airLike.Match(g) || unsafe.Match(g) || world.IsFluid(ground) {
		t.Errorf("location %+v: ground %s is not solid and safe", tp, g)
	}
	for i, bl := range above {
		if n := bl.String(); !(bl.IsAir() || airLike.Match(n)) || unsafe.Match(n) || world.IsFluid(bl) {
			t.Errorf("location %+v: block %d above the ground is %s, want free space", tp, i+1, n)
		}
	}
	checker, err := safety.New(cfg.Regions[tp.Region].Safety)
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := checker.CheckColumn(ch, x, z); !ok || int64(res.Y) != tp.Y {
		t.Errorf("location %+v: CheckColumn = %+v, %v; want accepted at y %d", tp, res, ok, tp.Y)
	}
	shape, err := cfg.Regions[tp.Region].BuildShape()
	if err != nil {
		t.Fatal(err)
	}
	if !shape.Contains(b.Chunk()) {
		t.Errorf("location %+v outside the region's shape", tp)
	}
}

// TestEndToEnd drives every route over HTTP against a running engine on
// the procedural world. One engine serves the whole test, since filling a
// region under the race detector takes seconds.
func TestEndToEnd(t *testing.T) {
	cfg := smallConfig(t)
	var reloads atomic.Int32
	var ev *env
	ev = start(t, cfg, envOptions{token: testToken, reload: func(ctx context.Context) error {
		reloads.Add(1)
		spec, err := cfg.Spec()
		if err != nil {
			return &engine.Error{Reason: engine.ReasonInvalid, Err: err}
		}
		return ev.e.Reload(ctx, spec)
	}})
	const region = config.DefaultRegionName
	world := config.DefaultWorldName
	e := ev.e

	t.Run("regions", func(t *testing.T) {
		a := ev.call("GET", "/v1/regions", "")
		var got api.Regions
		if err := json.Unmarshal(a.body, &got); err != nil || a.status != 200 {
			t.Fatalf("regions = %d %s (%v)", a.status, a.body, err)
		}
		if len(got.Regions) != 1 || got.Regions[0] != (api.Region{Name: region, World: world}) {
			t.Errorf("regions = %+v", got.Regions)
		}
	})

	var claimID int64
	t.Run("claims", func(t *testing.T) {
		a := ev.call("POST", "/v1/worlds/"+world+"/claims", `{"owner":"town","minX":0,"minZ":-5000,"maxX":5000,"maxZ":5000}`)
		if a.status != 201 {
			t.Fatalf("add claim = %d %s", a.status, a.body)
		}
		var c api.Claim
		if err := json.Unmarshal(a.body, &c); err != nil {
			t.Fatal(err)
		}
		claimID = c.ID
		if c.ID <= 0 || c.World != world || c.Owner != "town" || c.MinX != 0 || c.MaxZ != 5000 || c.Created.IsZero() {
			t.Errorf("claim = %+v", c)
		}
		if loc := a.header.Get("Location"); loc != fmt.Sprintf("/v1/worlds/%s/claims/%d", world, c.ID) {
			t.Errorf("Location = %q", loc)
		}
		a = ev.call("GET", "/v1/worlds/"+world+"/claims", "")
		var list api.Claims
		if err := json.Unmarshal(a.body, &list); err != nil || len(list.Claims) != 1 || list.Claims[0].ID != c.ID {
			t.Errorf("claims list = %s (%v)", a.body, err)
		}
		if !e.Claims().Claimed(world, 10, 10) {
			t.Error("the claim is not in force in the engine's store")
		}
	})

	t.Run("teleports", func(t *testing.T) {
		seen := map[uint64]bool{}
		for i := range 5 {
			tp, a := ev.teleport(region, fmt.Sprintf(`{"player":"p%d","waitMs":30000}`, i))
			if a.status != 200 {
				t.Fatalf("teleport = %d %s", a.status, a.body)
			}
			if seen[tp.ID] {
				t.Errorf("id %d handed out twice", tp.ID)
			}
			seen[tp.ID] = true
			if tp.Region != region || tp.World != world || tp.Sink == "" || tp.WaitedMs < 0 {
				t.Errorf("teleport %+v", tp)
			}
			checkSafe(t, cfg, tp)
			if tp.X >= 0 {
				t.Errorf("teleport %+v lies inside the claim x >= 0", tp)
			}
			path := fmt.Sprintf("/v1/teleports/%d/complete", tp.ID)
			if a := ev.call("POST", path, ""); a.status != 204 {
				t.Errorf("complete = %d %s", a.status, a.body)
			}
			checkErrorAnswer(t, "second complete", ev.call("POST", path, ""), 404, engine.ReasonUnknownID)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, a := ev.teleport("nowhere", `{"player":"p"}`)
		checkErrorAnswer(t, "unknown region", a, 404, engine.ReasonUnknownRegion)
		_, a = ev.teleport(region, `{"player":"p","sink":"nosuch"}`)
		checkErrorAnswer(t, "unknown sink", a, 400, engine.ReasonUnknownSink)
		checkErrorAnswer(t, "unknown region stats", ev.call("GET", "/v1/regions/nowhere/stats", ""), 404, engine.ReasonUnknownRegion)
		checkErrorAnswer(t, "complete unknown", ev.call("POST", "/v1/teleports/987654/complete", ""), 404, engine.ReasonUnknownID)
		checkErrorAnswer(t, "unknown world", ev.call("GET", "/v1/worlds/nether/claims", ""), 404, CodeUnknownWorld)
		checkErrorAnswer(t, "unknown claim", ev.call("DELETE", "/v1/worlds/"+world+"/claims/987654", ""), 404, CodeUnknownClaim)
		checkErrorAnswer(t, "no token", ev.callAuth("POST", "/v1/regions/"+region+"/teleports", `{"player":"p"}`, ""), 401, CodeUnauthorized)
		checkErrorAnswer(t, "wrong token", ev.callAuth("POST", "/v1/admin/regions/"+region+"/scan/pause", "", testToken+"!"), 401, CodeUnauthorized)
		checkErrorAnswer(t, "too large", ev.call("POST", "/v1/regions/"+region+"/teleports", `{"player":"`+strings.Repeat("x", DefaultMaxBodyBytes)+`"}`), 413, CodeTooLarge)
		checkErrorAnswer(t, "malformed", ev.call("POST", "/v1/regions/"+region+"/teleports", `{"player":`), 400, CodeBadRequest)
		checkErrorAnswer(t, "unknown field", ev.call("POST", "/v1/regions/"+region+"/teleports", `{"player":"p","x":1}`), 400, CodeBadRequest)
		checkErrorAnswer(t, "wrong type", ev.call("POST", "/v1/regions/"+region+"/teleports", `{"player":["p"]}`), 400, CodeBadRequest)
	})

	t.Run("stats", func(t *testing.T) {
		waitFor(t, 30*time.Second, "no rejection attributed to the claim", func() bool {
			return ev.stats(region).Memory.Rejections["safetyExternal[claims]"] > 0
		})
		st := ev.stats(region)
		if st.Region != region || st.World != world || st.Memory.Len == 0 || len(st.Pipeline.Sinks) == 0 {
			t.Errorf("stats %+v", st)
		}
		if st.Latency.Count < 5 {
			t.Errorf("latency count %d, want >= 5 teleports", st.Latency.Count)
		}
		if st.Resident.Opened == 0 {
			t.Errorf("resident stats %+v: no reservation opened", st.Resident)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		a := ev.call("GET", "/metrics", "")
		if a.status != 200 {
			t.Fatalf("metrics = %d", a.status)
		}
		text := string(a.body)
		for _, want := range []string{
			`rtp_http_requests_total{code="200",route="POST /v1/regions/{region}/teleports"}`,
			`rtp_http_requests_total{code="404",route="POST /v1/regions/{region}/teleports"} 1`,
			`rtp_http_request_duration_seconds_bucket{route="POST /v1/teleports/{id}/complete",le="0.001"}`,
			`rtp_sink_fill{kind="general",region="default",sink="general"}`,
			`rtp_sink_capacity{kind="general",region="default",sink="general"} ` + strconv.Itoa(engine.DefaultGeneralCapacity),
			`rtp_memory_rejections_total{cause="safetyExternal",region="default",source="claims"}`,
			`rtp_memory_coverage{region="default"}`,
			`rtp_resident_reservations_open{world="world"}`,
			`rtp_archive_generations_total{world="world"}`,
			`rtp_teleport_latency_seconds_bucket{region="default",le="+Inf"}`,
			`rtp_teleport_latency_seconds_count{region="default"}`,
			`rtp_teleports_total{region="default"}`,
			`rtp_region_paused{region="default"} 0`,
			`rtp_claims 1`,
			`rtp_refill_lanes `,
			`rtp_refill_rests_total `,
			`go_goroutines`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		// Every teleport of the test is counted under its route.
		if n := metricValue(text, `rtp_http_requests_total{code="200",route="POST /v1/regions/{region}/teleports"}`); n < 5 {
			t.Errorf("teleports counted 200: %v, want >= 5", n)
		}
	})

	t.Run("health", func(t *testing.T) {
		if a := ev.call("GET", "/healthz", ""); a.status != 200 {
			t.Errorf("healthz = %d %s", a.status, a.body)
		}
		if a := ev.call("GET", "/readyz", ""); a.status != 200 {
			t.Errorf("readyz = %d %s", a.status, a.body)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		tp, a := ev.teleport(region, `{"player":"quitter","waitMs":30000}`)
		if a.status != 200 {
			t.Fatalf("teleport = %d %s", a.status, a.body)
		}
		path := fmt.Sprintf("/v1/teleports/%d", tp.ID)
		if a := ev.call("DELETE", path, ""); a.status != 204 {
			t.Errorf("cancel = %d %s", a.status, a.body)
		}
		checkErrorAnswer(t, "second cancel", ev.call("DELETE", path, ""), 404, engine.ReasonUnknownID)
		checkErrorAnswer(t, "complete after cancel", ev.call("POST", path+"/complete", ""), 404, engine.ReasonUnknownID)
	})

	t.Run("players", func(t *testing.T) {
		base := "/v1/regions/" + region + "/players/alice"
		if a := ev.call("POST", base+"/join", ""); a.status != 204 {
			t.Errorf("join = %d %s", a.status, a.body)
		}
		if a := ev.call("POST", base+"/quit", ""); a.status != 204 {
			t.Errorf("quit = %d %s", a.status, a.body)
		}
		checkErrorAnswer(t, "join in an unknown region", ev.call("POST", "/v1/regions/nowhere/players/alice/join", ""), 404, engine.ReasonUnknownRegion)
		if a := ev.call("PUT", base+"/queue", `{"capacity":1}`); a.status != 204 {
			t.Errorf("open queue = %d %s", a.status, a.body)
		}
		if a := ev.call("DELETE", base+"/queue", ""); a.status != 204 {
			t.Errorf("close queue = %d %s", a.status, a.body)
		}
	})

	t.Run("network", func(t *testing.T) {
		base := "/v1/regions/" + region + "/network/reservations"
		reserve := func() api.Reservation {
			t.Helper()
			var res api.Reservation
			waitFor(t, 30*time.Second, "no network reservation", func() bool {
				a := ev.call("POST", base, "")
				if a.status == 503 {
					return false
				}
				if a.status != 201 {
					t.Fatalf("reserve = %d %s", a.status, a.body)
				}
				if err := json.Unmarshal(a.body, &res); err != nil {
					t.Fatal(err)
				}
				return true
			})
			if res.Token == "" || res.Expires.IsZero() {
				t.Errorf("reservation %+v", res)
			}
			return res
		}
		res := reserve()
		checkSafe(t, cfg, res.Location)
		a := ev.call("POST", base+"/"+res.Token+"/redeem", "")
		if a.status != 200 {
			t.Fatalf("redeem = %d %s", a.status, a.body)
		}
		var tp api.Teleport
		if err := json.Unmarshal(a.body, &tp); err != nil {
			t.Fatal(err)
		}
		if tp.X != res.Location.X || tp.Z != res.Location.Z {
			t.Errorf("redeemed %+v, reserved %+v", tp, res.Location)
		}
		checkErrorAnswer(t, "second redeem", ev.call("POST", base+"/"+res.Token+"/redeem", ""), 409, engine.ReasonRedeemed)
		checkErrorAnswer(t, "garbage token", ev.call("POST", base+"/garbage/redeem", ""), 400, engine.ReasonInvalidToken)
		_ = ev.call("POST", fmt.Sprintf("/v1/teleports/%d/complete", tp.ID), "")
		res = reserve()
		if a := ev.call("DELETE", base+"/"+res.Token, ""); a.status != 204 {
			t.Errorf("release = %d %s", a.status, a.body)
		}
	})

	t.Run("memory export", func(t *testing.T) {
		a := ev.call("GET", "/v1/admin/regions/"+region+"/memory", "")
		if a.status != 200 {
			t.Fatalf("memory export = %d %s", a.status, a.body)
		}
		var ex struct {
			Len    int64             `json:"len"`
			Active []json.RawMessage `json:"active"`
		}
		if err := json.Unmarshal(a.body, &ex); err != nil || ex.Len == 0 || len(ex.Active) == 0 {
			t.Errorf("memory export %.200s: len %d, %d active runs (%v)", a.body, ex.Len, len(ex.Active), err)
		}
		checkErrorAnswer(t, "export of an unknown region", ev.call("GET", "/v1/admin/regions/nowhere/memory", ""), 404, engine.ReasonUnknownRegion)
	})

	t.Run("scan", func(t *testing.T) {
		admin := "/v1/admin/regions/" + region + "/scan/"
		if a := ev.call("POST", admin+"pause", ""); a.status != 204 {
			t.Fatalf("pause = %d %s", a.status, a.body)
		}
		if st := ev.stats(region); !st.Paused {
			t.Error("stats after pause: paused false")
		}
		if a := ev.call("GET", "/v1/regions", ""); !strings.Contains(string(a.body), `"paused":true`) {
			t.Errorf("regions after pause: %s", a.body)
		}
		if a := ev.call("POST", admin+"resume", ""); a.status != 204 {
			t.Errorf("resume = %d %s", a.status, a.body)
		}
		if st := ev.stats(region); st.Paused {
			t.Error("stats after resume: paused true")
		}
		if a := ev.call("POST", admin+"reset", ""); a.status != 204 {
			t.Errorf("reset = %d %s", a.status, a.body)
		}
		checkErrorAnswer(t, "pause of an unknown region", ev.call("POST", "/v1/admin/regions/nowhere/scan/pause", ""), 404, engine.ReasonUnknownRegion)
	})

	t.Run("reload", func(t *testing.T) {
		before := reloads.Load()
		if a := ev.call("POST", "/v1/admin/reload", ""); a.status != 204 {
			t.Errorf("reload = %d %s", a.status, a.body)
		}
		if reloads.Load() != before+1 {
			t.Error("the reload function was not called")
		}
	})

	t.Run("remove claim", func(t *testing.T) {
		path := fmt.Sprintf("/v1/worlds/%s/claims/%d", world, claimID)
		if a := ev.call("DELETE", path, ""); a.status != 204 {
			t.Errorf("remove claim = %d %s", a.status, a.body)
		}
		checkErrorAnswer(t, "second remove", ev.call("DELETE", path, ""), 404, CodeUnknownClaim)
		if e.Claims().Claimed(world, 10, 10) {
			t.Error("the removed claim is still in force")
		}
	})
}

// metricValue returns the value of the sample line that starts with
// series, or -1.
func metricValue(text, series string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// TestClaimComesBackAfterExpiry claims a whole small region, lets the
// engine learn that every place is bad, removes the claim and checks that
// teleports still find nothing (the memory keeps the rejections: no reset)
// until the injected clock passes the claims' TTL; then the places come
// back and teleports land there.
func TestClaimComesBackAfterExpiry(t *testing.T) {
	cfg := smallConfig(t)
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 64} // 8 x 8 chunks
	rc.Memory.PendingThreshold = 1
	cfg.Regions[config.DefaultRegionName] = rc
	clock := &testClock{}
	ev := start(t, cfg, envOptions{clock: clock, norun: true})
	const region = config.DefaultRegionName
	world := config.DefaultWorldName

	// The claim covers every chunk of the shape (blocks -64..64 are the
	// chunks -4..4), in force before the first pulse.
	a := ev.call("POST", "/v1/worlds/"+world+"/claims", `{"owner":"everything","minX":-64,"minZ":-64,"maxX":79,"maxZ":79}`)
	if a.status != 201 {
		t.Fatalf("add claim = %d %s", a.status, a.body)
	}
	var c api.Claim
	if err := json.Unmarshal(a.body, &c); err != nil {
		t.Fatal(err)
	}
	ev.run()
	// Every cell ends up known bad: by the claim, or for good (water and
	// the like).
	waitFor(t, 40*time.Second, "memory never covered the whole claimed region", func() bool {
		m := ev.stats(region).Memory
		return m.Len > 0 && m.BadCount == m.Len
	})
	// The count by cause is taken once no work is in flight: a screening
	// or promotion that started before the claim may still record its
	// chunk under a cause of its own (water), in place of the claim's.
	waitFor(t, 30*time.Second, "the pipeline never went quiet before the count", func() bool {
		p := ev.stats(region).Pipeline
		return p.Screening == 0 && p.Promoting == 0
	})
	st := ev.stats(region)
	claimed := st.Memory.ByCause["safetyExternal"]
	if claimed == 0 {
		t.Fatalf("no cell is bad because of the claim: %v", st.Memory.ByCause)
	}
	// Nothing is left to draw: the region is exhausted, and says so at
	// once once the pipeline has let go of what it held.
	waitFor(t, 30*time.Second, "the region never became exhausted", func() bool {
		return ev.stats(region).Exhaustion.Exhausted
	})
	_, a = ev.teleport(region, `{"player":"p","waitMs":200}`)
	checkErrorAnswer(t, "teleport into a fully claimed region", a, 503, engine.ReasonExhausted)
	if ra := a.header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After = %q, want 30", ra)
	}
	if !strings.Contains(a.errMessage(), "safetyExternal") {
		t.Errorf("message %q does not count the claimed cells", a.errMessage())
	}

	if a := ev.call("DELETE", fmt.Sprintf("/v1/worlds/%s/claims/%d", world, c.ID), ""); a.status != 204 {
		t.Fatalf("remove claim = %d %s", a.status, a.body)
	}
	// The claim is gone but the memory of it stays: still nothing.
	_, a = ev.teleport(region, `{"player":"p","waitMs":300}`)
	checkErrorAnswer(t, "teleport after the removal, before expiry", a, 503, engine.ReasonExhausted)
	if m := ev.stats(region).Memory; m.ByCause["safetyExternal"] != claimed {
		t.Errorf("before expiry: %d cells bad for the claim, want %d", m.ByCause["safetyExternal"], claimed)
	}

	// Past the TTL of claims rejections (14 days by default), the runs go
	// on probation: selectable again.
	// Let the work in flight end first: a promotion whose chunk
	// reservation outlives a 15-day jump of the clock is force-closed by
	// the resident store's watchdog under it, which production clocks
	// never do.
	waitFor(t, 30*time.Second, "the pipeline never went quiet", func() bool {
		p := ev.stats(region).Pipeline
		return p.Screening == 0 && p.Promoting == 0 && p.Backlog.Fill == 0 && p.Cold.Fill == 0
	})
	clock.Advance(15 * 24 * time.Hour)
	// The region refills from nothing: ask until a place is ready (each
	// answer within the server's write timeout), for at most a minute.
	var tp api.Teleport
	deadline := time.Now().Add(time.Minute)
	for {
		tp, a = ev.teleport(region, `{"player":"p","waitMs":5000}`)
		if a.status == 200 {
			break
		}
		if a.status != 503 || time.Now().After(deadline) {
			est, _ := ev.e.Stats(region)
			t.Fatalf("teleport after expiry = %d %s; held %d, duplicates %d, known bad %d, memory len %d bad %d probation %d by cause %v; screen %v promote %v",
				a.status, a.body, est.Pipeline.Held, est.Pipeline.Duplicates, est.Pipeline.KnownBad, est.Memory.Len, est.Memory.BadCount, est.Memory.Probation, est.Memory.ByCause,
				est.Pipeline.ScreenRejections, est.Pipeline.PromotionRejections)
		}
	}
	checkSafe(t, cfg, tp)
	if tp.X < -64 || tp.X > 79 || tp.Z < -64 || tp.Z > 79 {
		t.Errorf("teleport %+v outside the formerly claimed region", tp)
	}
	if m := ev.stats(region).Memory; m.ByCause["safetyExternal"] >= claimed {
		t.Errorf("after expiry: %d cells still bad for the claim, want fewer than %d", m.ByCause["safetyExternal"], claimed)
	}
}

// TestShutdownAndRestart stops the server and the engine with a location
// handed out and not completed: Serve returns nil, and once the engine has
// shut down every reservation is closed. A new engine on the same data
// folder then restores the cold locations and the memory.
func TestShutdownAndRestart(t *testing.T) {
	cfg := smallConfig(t)
	ev := start(t, cfg, envOptions{})
	const region = config.DefaultRegionName

	tp, a := ev.teleport(region, `{"player":"holder","waitMs":30000}`)
	if a.status != 200 {
		t.Fatalf("teleport = %d %s", a.status, a.body)
	}
	checkSafe(t, cfg, tp)
	waitFor(t, 40*time.Second, "no cold locations, rejections and saved memory", func() bool {
		st := ev.stats(region)
		return st.Pipeline.Cold.Fill >= 4 && st.Memory.BadCount > 0
	})
	st := ev.stats(region)
	if st.Resident.Open == 0 {
		t.Fatalf("resident stats %+v: want the held reservation open", st.Resident)
	}

	if err := ev.stopServe(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if _, err := http.Get(ev.base + "/healthz"); err == nil {
		t.Error("the server still answers after Serve returned")
	}
	if err := ev.stopEngine(); err != nil {
		t.Errorf("engine Run = %v", err)
	}
	after, err := ev.e.Stats(region)
	if err != nil {
		t.Fatal(err)
	}
	if r := after.Resident; r.Open != 0 || r.Opened == 0 || r.Opened != r.Closed {
		t.Errorf("after shutdown: resident %+v, want every reservation closed", r)
	}
	if r := after.Pipeline.Reservations; r.DoubleReleases != 0 {
		t.Errorf("after shutdown: pipeline reservations %+v", r)
	}

	ev2 := start(t, cfg, envOptions{norun: true})
	st2 := ev2.stats(region)
	if st2.Restored == 0 || st2.Pipeline.Cold.Fill != st2.Restored {
		t.Errorf("restart: restored %d, cold %d; want > 0 and equal", st2.Restored, st2.Pipeline.Cold.Fill)
	}
	if st2.Memory.BadCount != after.Memory.BadCount || st2.Memory.ActiveRuns != after.Memory.ActiveRuns {
		t.Errorf("restart: memory bad %d in %d runs, want %d in %d (saved at shutdown)",
			st2.Memory.BadCount, st2.Memory.ActiveRuns, after.Memory.BadCount, after.Memory.ActiveRuns)
	}
}

// TestDrain checks that a teleport waiting on a miss when Serve shuts down
// is answered 503 shutdown at once, and that Serve then returns nil.
func TestDrain(t *testing.T) {
	cfg := smallConfig(t)
	ev := start(t, cfg, envOptions{norun: true}) // nothing is ever ready
	const region = config.DefaultRegionName

	_, a := ev.teleport(region, `{"player":"p","waitMs":50}`)
	checkErrorAnswer(t, "teleport of an engine not running", a, 503, engine.ReasonNoLocation)

	waiting := make(chan answer, 1)
	go func() {
		_, a := ev.teleport(region, `{"player":"p","waitMs":30000}`)
		waiting <- a
	}()
	waitFor(t, 10*time.Second, "the teleport never started waiting", func() bool {
		return inFlight(t, ev.srv) > 0
	})
	begin := time.Now()
	if err := ev.stopServe(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	a = <-waiting
	checkErrorAnswer(t, "waiting teleport at shutdown", a, 503, engine.ReasonShutdown)
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("shutdown took %v with a waiting teleport", d)
	}

	// After the engine closes, the routes answer shutdown.
	if err := ev.e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := specChecked(t, ev.srv.Handler())
	checkErrorAnswer(t, "teleport after Close", do(t, h, "POST", "/v1/regions/"+region+"/teleports", `{"player":"p"}`), 503, engine.ReasonShutdown)
	checkErrorAnswer(t, "claims after Close", do(t, h, "POST", "/v1/worlds/world/claims", `{"owner":"o","minX":0,"minZ":0,"maxX":1,"maxZ":1}`), 503, engine.ReasonShutdown)
}

// inFlight returns the server's rtp_http_requests_in_flight.
func inFlight(t *testing.T, s *Server) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.inFlight.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestEngineErrorsOverHTTP produces, with a real engine, the errors a
// region's configuration and state cause: sinks a region lacks, a paused
// scan, a network lease past its end.
func TestEngineErrorsOverHTTP(t *testing.T) {
	cfg := smallConfig(t)
	plain := config.DefaultRegion() // no login, network nor personal sink
	plain.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, CenterX: 4096, Radius: 64}
	plain.Pulse = 10 * time.Millisecond
	cfg.Regions["plain"] = plain
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{}
	ev := start(t, cfg, envOptions{clock: clock})
	const region = config.DefaultRegionName

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/regions/plain/players/alice/join", ""},
		{"PUT", "/v1/regions/plain/players/alice/queue", `{"capacity":1}`},
		{"DELETE", "/v1/regions/plain/players/alice/queue", ""},
		{"POST", "/v1/regions/plain/network/reservations", ""},
	} {
		checkErrorAnswer(t, c.method+" "+c.path, ev.call(c.method, c.path, c.body), 409, engine.ReasonNoSink)
	}
	_, a := ev.teleport("plain", `{"player":"p","sink":"login"}`)
	checkErrorAnswer(t, "teleport from a login sink the region lacks", a, 409, engine.ReasonNoSink)
	// The server and the engine count characters alike (the engine's
	// count is tested in package engine): 65 are refused.
	checkErrorAnswer(t, "player name too long", ev.call("POST", "/v1/regions/"+region+"/players/"+strings.Repeat("e", 65)+"/join", ""), 400, CodeBadRequest)

	// A network lease that ends before it is redeemed.
	base := "/v1/regions/" + region + "/network/reservations"
	var res api.Reservation
	waitFor(t, 30*time.Second, "no network reservation", func() bool {
		a := ev.call("POST", base, "")
		if a.status != 201 {
			return false
		}
		return json.Unmarshal(a.body, &res) == nil
	})
	// Past its end (the paused region still ends leases), the redeem is
	// told the lease expired.
	if a := ev.call("POST", "/v1/admin/regions/"+region+"/scan/pause", ""); a.status != 204 {
		t.Fatalf("pause = %d %s", a.status, a.body)
	}
	clock.Advance(cfg.Regions[region].Sinks.Network.Lease * 3 / 2) // past its end, within the next lease TTL
	checkErrorAnswer(t, "redeem past the lease", ev.call("POST", base+"/"+res.Token+"/redeem", ""), 410, engine.ReasonLeaseExpired)

	// A paused region with nothing ready for the asker.
	waitFor(t, 10*time.Second, "the paused region kept locations ready", func() bool {
		_, a := ev.teleport(region, `{"player":"p","waitMs":0}`)
		if a.status == 200 {
			return false // drain what was ready before the pause
		}
		checkErrorAnswer(t, "teleport in a paused region", a, 503, engine.ReasonPaused)
		return true
	})
}

// TestAttacksOverHTTP replays what an attacker tried: a stale teleport id
// from before a restart, and respelled or replayed network tokens.
func TestAttacksOverHTTP(t *testing.T) {
	cfg := smallConfig(t)
	const region = config.DefaultRegionName
	ev := start(t, cfg, envOptions{})
	old, a := ev.teleport(region, `{"player":"before","waitMs":30000}`)
	if a.status != 200 {
		t.Fatalf("teleport = %d %s", a.status, a.body)
	}
	if err := ev.stopServe(); err != nil {
		t.Fatal(err)
	}
	if err := ev.stopEngine(); err != nil {
		t.Fatal(err)
	}

	// After a restart on the same data: another player's teleport is
	// open, and the stale id names nothing.
	ev2 := start(t, cfg, envOptions{})
	fresh, a := ev2.teleport(region, `{"player":"after","waitMs":30000}`)
	if a.status != 200 {
		t.Fatalf("teleport after restart = %d %s", a.status, a.body)
	}
	if fresh.ID == old.ID {
		t.Fatalf("the restarted server reused id %d", old.ID)
	}
	for _, id := range []uint64{old.ID, 1, 2, 3} {
		if id == fresh.ID {
			continue
		}
		checkErrorAnswer(t, fmt.Sprintf("stale DELETE of %d", id), ev2.call("DELETE", fmt.Sprintf("/v1/teleports/%d", id), ""), 404, engine.ReasonUnknownID)
	}
	if st := ev2.stats(region); st.Handouts.Open != 1 || st.Handouts.Cancelled != 0 {
		t.Errorf("after stale DELETEs: handouts %+v, want the new player's one open, none cancelled", st.Handouts)
	}

	// A token redeemed once is never redeemed again, however spelled.
	base := "/v1/regions/" + region + "/network/reservations"
	var res api.Reservation
	waitFor(t, 30*time.Second, "no network reservation", func() bool {
		a := ev2.call("POST", base, "")
		if a.status == 503 {
			return false
		}
		if a.status != 201 || json.Unmarshal(a.body, &res) != nil {
			t.Fatalf("reserve = %d %s", a.status, a.body)
		}
		return true
	})
	redeem := func(tok string) answer { return ev2.call("POST", base+"/"+url.PathEscape(tok)+"/redeem", "") }
	if a := redeem(res.Token); a.status != 200 {
		t.Fatalf("redeem = %d %s", a.status, a.body)
	}
	checkErrorAnswer(t, "replayed token", redeem(res.Token), 409, engine.ReasonRedeemed)
	flipped := []byte(res.Token)
	flipped[len(flipped)/2] ^= 1
	for name, tok := range map[string]string{
		"token and newline": res.Token + "\n",
		"newline inside":    res.Token[:10] + "\n" + res.Token[10:],
		"padded":            res.Token + "=",
		"one bit flipped":   string(flipped),
		"truncated":         res.Token[:len(res.Token)-1],
	} {
		checkErrorAnswer(t, name, redeem(tok), 400, engine.ReasonInvalidToken)
	}
}

// TestReservationWaits: a network reservation made while the network sink
// is still empty waits (waitMs) for the refill and succeeds, as a
// teleport does; with waitMs 0 it is answered at once with no-location.
func TestReservationWaits(t *testing.T) {
	cfg := smallConfig(t)
	// The engine does not run yet: nothing is screened or promoted.
	ev := start(t, cfg, envOptions{norun: true})
	base := "/v1/regions/" + config.DefaultRegionName + "/network/reservations"
	checkErrorAnswer(t, "a reservation that does not wait, the sink empty", ev.call("POST", base, `{"waitMs":0}`), 503, engine.ReasonNoLocation)

	answered := make(chan answer, 1)
	go func() { answered <- ev.call("POST", base, `{"waitMs":30000}`) }()
	// The request waits in the server before the refill begins.
	waitFor(t, 10*time.Second, "the reservation in flight", func() bool { return inFlight(t, ev.srv) >= 1 })
	select {
	case a := <-answered:
		t.Fatalf("a reservation with waitMs answered %d %s before any location was ready", a.status, a.body)
	default:
	}
	ev.run()
	a := <-answered
	if a.status != 201 {
		t.Fatalf("a reservation waiting for the refill: %d %s, want 201", a.status, a.body)
	}
	var res api.Reservation
	if err := json.Unmarshal(a.body, &res); err != nil || res.Token == "" || res.Location.Sink != "network" {
		t.Fatalf("reservation %s: %+v, %v", a.body, res, err)
	}
	if st := ev.stats(config.DefaultRegionName); st.Pipeline.Misses != 2 {
		t.Errorf("misses %d, want 2 (the reservation that did not wait, and the waiting one once)", st.Pipeline.Misses)
	}
	checkErrorAnswer(t, "waitMs out of range", ev.call("POST", base, `{"waitMs":30001}`), 400, CodeBadRequest)
}
