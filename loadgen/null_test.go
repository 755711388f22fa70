package loadgen

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/api"
)

// TestNullHandlerServesTheGenerator: a run and a burst against the null
// handler succeed in full, through the client's strict decoding of every
// answer.
func TestNullHandlerServesTheGenerator(t *testing.T) {
	srv := httptest.NewServer(NullHandler())
	defer srv.Close()
	res, err := Run(t.Context(), Config{BaseURL: srv.URL, Rate: 500, Duration: 200 * time.Millisecond, Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 100 || res.OK != 100 || res.Errors != 0 || res.Misses != 0 || res.Completed != 100 || res.CompleteErrors != 0 {
		t.Fatalf("Run = %+v, want 100 sent, ok and completed", res)
	}
	br, err := Burst(t.Context(), BurstConfig{BaseURL: srv.URL, Players: 20, Sink: "login"})
	if err != nil {
		t.Fatal(err)
	}
	if br.Joined != 20 || br.OK != 20 || br.BySink["login"] != 20 || br.Errors != 0 || br.JoinErrors != 0 {
		t.Fatalf("Burst = %+v, want 20 joined and served by login", br)
	}
}

func TestNullHandlerAnswers(t *testing.T) {
	srv := httptest.NewServer(NullHandler())
	defer srv.Close()
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	for i, sink := range []string{"", "login"} {
		code, b := do("POST", "/v1/regions/east/teleports", `{"player":"ann","sink":"`+sink+`"}`)
		var tp api.Teleport
		if code != 200 || json.Unmarshal(b, &tp) != nil {
			t.Fatalf("teleport: %d %s", code, b)
		}
		want := sink
		if want == "" {
			want = "general"
		}
		if tp.ID != uint64(i+1) || tp.Region != "east" || tp.Sink != want {
			t.Errorf("teleport %d = %+v, want id %d, region east, sink %s", i, tp, i+1, want)
		}
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		errCode            string
	}{
		{"POST", "/v1/regions/east/teleports", `{"sink":"login"}`, 400, "bad-request"},
		{"POST", "/v1/regions/east/teleports", `[1`, 400, "bad-request"},
		{"POST", "/v1/teleports/7/complete", "", 204, ""},
		{"POST", "/v1/teleports/seven/complete", "", 400, "bad-request"},
		{"DELETE", "/v1/teleports/7", "", 204, ""},
		{"POST", "/v1/regions/east/players/ann/join", "", 204, ""},
		{"POST", "/v1/regions/east/players/ann/quit", "", 204, ""},
		{"GET", "/healthz", "", 200, ""},
		{"GET", "/v1/regions", "", 404, ""},
	} {
		code, b := do(tc.method, tc.path, tc.body)
		if code != tc.code {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, b, tc.code)
			continue
		}
		if tc.errCode != "" {
			var e api.Error
			if json.Unmarshal(b, &e) != nil || e.Error.Code != tc.errCode || e.Error.Message == "" {
				t.Errorf("%s %s: body %s, want an API error %q", tc.method, tc.path, b, tc.errCode)
			}
		}
	}
}

// TestRunGetTiles runs the generator's GET mode against the null server's
// tiles: every request served, and the body the size asked for.
func TestRunGetTiles(t *testing.T) {
	srv := httptest.NewServer(NullHandlerWith(NullOptions{TileBytes: 5000}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/worlds/world/tiles/0/1/-2.png")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 5000 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("tile = %d, %d bytes, %q; want 200, 5000 bytes, image/png", resp.StatusCode, len(body), resp.Header.Get("Content-Type"))
	}
	res, err := Run(t.Context(), Config{BaseURL: srv.URL, Rate: 400, Duration: 250 * time.Millisecond, Get: "/v1/worlds/world/tiles/0/0/0.png"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 100 || res.OK != 100 || res.Errors != 0 {
		t.Fatalf("GET run: sent %d, ok %d, errors %d (%v); want 100 served", res.Sent, res.OK, res.Errors, res.ErrorCodes)
	}
	res, err = Run(t.Context(), Config{BaseURL: srv.URL, Rate: 400, Duration: 50 * time.Millisecond, Get: "/v1/worlds/world/nothing"})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Errors != res.Sent {
		t.Fatalf("GET of a missing path: ok %d, errors %d of %d; want every one an error", res.OK, res.Errors, res.Sent)
	}
}
