package engine_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/verify/claims"
)

// TestHTTPVerifier configures an http verifier whose server rejects the
// rectangle x < 0: no location there is delivered, the rejections are
// remembered as safetyExternal attributed to the verifier's configured
// name, and the region's sinks are marked extrinsic.
func TestHTTPVerifier(t *testing.T) {
	var calls, rejected atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var loc struct {
			World   string
			X, Y, Z *int64
		}
		if err := json.NewDecoder(r.Body).Decode(&loc); err != nil || loc.X == nil || loc.Z == nil || loc.World != config.DefaultWorldName {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		allowed := !(*loc.X < 0 && *loc.X >= -1000 && *loc.Z >= -1000 && *loc.Z <= 1000)
		if !allowed {
			rejected.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]bool{"allowed": allowed})
	}))
	defer ts.Close()

	cfg := testConfig(t)
	cfg.Verifiers = []config.Verifier{{Name: "GriefPrevention", Kind: config.KindHTTP, URL: ts.URL + "/verify", Timeout: 5 * time.Second}}
	e := newEngine(t, cfg)
	r := e.Region(region)
	if got := r.Verifiers().Sources(); !slices.Equal(got, []string{"GriefPrevention"}) {
		t.Errorf("verifier sources %v, want [GriefPrevention] (no claims: only an http verifier is configured)", got)
	}
	if !r.Pipeline().General().HasExtrinsicVerifier() {
		t.Error("the general sink of a region with an http verifier is not extrinsic")
	}
	stop := run(t, e)
	// Teleport until the verifier has rejected a place: the refill
	// promotes a location for each one handed out, so the demand keeps it
	// drawing candidates, half of them from the rejected half of the
	// circle. Six teleports and then a wait once saw no rejection in 30 s
	// under CI load: once the sinks are full the refill draws nothing more,
	// so whether it had met the rejected half was left to chance.
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; n < 6 || stats(t, e, region).Memory.Rejections["safetyExternal[GriefPrevention]"] == 0; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("no rejection by the verifier in memory after %d teleports (server: %d calls, %d rejections); stats %+v",
				n, calls.Load(), rejected.Load(), stats(t, e, region))
		}
		loc := teleport(t, e, engine.Request{Player: "p"})
		if loc.X < 0 {
			t.Errorf("location %+v lies in the rectangle the verifier rejects", loc)
		}
		if n < 6 {
			independentCheck(t, cfg, loc)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Error(err)
		}
	}
	waitFor(t, "the rejection in memory", func() bool { return stats(t, e, region).Memory.ByCause["safetyExternal"] > 0 })
	if calls.Load() == 0 || rejected.Load() == 0 {
		t.Errorf("verifier server: %d calls, %d rejections; want some of each", calls.Load(), rejected.Load())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestClaimExpires proves that a removed claim needs no reset: while the
// claim is in force no location inside it is delivered and memory
// remembers the claimed places under safetyExternal[claims]; once it is
// removed and the clock passes the claims TTL, the places are selectable
// again and locations inside the former claim are delivered.
func TestClaimExpires(t *testing.T) {
	clock := new(fakeClock)
	cfg := testConfig(t)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "ttl.yml"), []byte("verifiers:\n  claims: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngineOpts(t, cfg, engine.Options{Clock: clock.Now})
	claim, err := e.Claims().Add(t.Context(), claims.Claim{World: config.DefaultWorldName, Owner: "town", MinX: 0, MinZ: -1000, MaxX: 1000, MaxZ: 1000})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e)
	inside := func(l engine.Location) bool { return l.X >= 0 }
	for range 8 {
		loc := teleport(t, e, engine.Request{Player: "p"})
		if inside(loc) {
			t.Errorf("location %+v delivered inside the claim", loc)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Error(err)
		}
	}
	waitFor(t, "claimed places in memory", func() bool {
		st := stats(t, e, region)
		return st.Memory.Rejections["safetyExternal[claims]"] > 0 && st.Memory.ByCause["safetyExternal"] > 0
	})
	// The claimed chunks memory holds as bad, from the export.
	mem := e.Region(region).Memory()
	var buf bytes.Buffer
	if err := e.ExportMemory(region, &buf); err != nil {
		t.Fatal(err)
	}
	var ex memory.Export
	if err := json.Unmarshal(buf.Bytes(), &ex); err != nil {
		t.Fatal(err)
	}
	var claimed []int64
	for _, run := range ex.Active {
		if run.Cause != "safetyExternal" {
			continue
		}
		if run.Expires-ex.Now > 3600 || run.Tier != "dynamic" {
			t.Errorf("claims run %+v (now %d): want dynamic, expiring within 1h", run, ex.Now)
		}
		for i := run.Start; i < run.Start+run.Len; i++ {
			if geom.ChunkAt(e.Region(region).Shape(), i).Origin().X >= 0 {
				claimed = append(claimed, i)
			}
		}
	}
	if len(claimed) == 0 {
		t.Fatalf("no claimed chunk in memory: %+v", ex.Active)
	}

	if ok, err := e.Claims().Remove(t.Context(), claim.ID); err != nil || !ok {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	clock.Advance(time.Hour + time.Minute)
	waitFor(t, "the claimed places on probation", func() bool {
		for _, i := range claimed {
			if mem.IsBad(i) {
				return false
			}
		}
		return stats(t, e, region).Memory.ByCause["safetyExternal"] == 0
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		loc := teleport(t, e, engine.Request{Player: "p"})
		if err := e.Complete(loc.ID); err != nil {
			t.Error(err)
		}
		if inside(loc) {
			independentCheck(t, cfg, loc)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no location inside the former claim delivered within 30s")
		}
	}
}
