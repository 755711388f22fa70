package client_test

import (
	"time"

	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/rtpengine/rtp/client"
)

// openAPIRoutes reads "METHOD /path" of every operation in
// api/openapi.yaml (paths at two spaces of indent, methods at four).
func openAPIRoutes(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "api", "openapi.yaml"))
	if err != nil {
		t.Skipf("no API description to compare with: %v", err)
	}
	defer f.Close()
	var routes []string
	var path string
	inPaths := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && len(line) > 0 && line[0] != ' ' && line[0] != '#':
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			switch m {
			case "get", "post", "put", "delete", "patch":
				routes = append(routes, strings.ToUpper(m)+" "+path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(routes)
	return routes
}

// TestCoversOpenAPI calls every method of the client against a recorder
// and checks that together they use every route of api/openapi.yaml
// (but /metrics, which is for Prometheus), and no other.
func TestCoversOpenAPI(t *testing.T) {
	want := openAPIRoutes(t)
	want = slices.DeleteFunc(want, func(r string) bool { return r == "GET /metrics" })
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Put the placeholders back in the path to name the route.
		p := r.URL.Path
		for _, ph := range []string{"region", "player", "token", "world", "id"} {
			p = strings.ReplaceAll(p, "/"+strings.ToUpper(ph)+"-x", "/{"+ph+"}")
		}
		p = strings.NewReplacer("/teleports/7", "/teleports/{id}", "/claims/9", "/claims/{id}").Replace(p)
		mu.Lock()
		seen[r.Method+" "+p] = true
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusTeapot) // every call fails; only the route matters
	}))
	defer srv.Close()
	c := client.New(srv.URL, client.Options{})
	ctx := context.Background()
	R, P, T, W := "REGION-x", "PLAYER-x", "TOKEN-x", "WORLD-x"
	c.Regions(ctx)
	c.Stats(ctx, R)
	c.Teleport(ctx, R, client.TeleportRequest{Player: "p"})
	c.GroupTeleport(ctx, R, client.GroupTeleportRequest{Players: []string{"p", "q"}})
	c.Complete(ctx, 7)
	c.Cancel(ctx, 7)
	c.Join(ctx, R, P)
	c.Quit(ctx, R, P)
	c.OpenQueue(ctx, R, P, 1)
	c.CloseQueue(ctx, R, P)
	c.Reserve(ctx, R, "")
	c.ReserveWait(ctx, R, "", time.Second)
	c.Redeem(ctx, R, T)
	c.Release(ctx, R, T)
	c.Claims(ctx, W)
	c.AddClaim(ctx, W, client.NewClaim{})
	c.RemoveClaim(ctx, W, 9)
	c.ReportChanges(ctx, W, [][2]int64{{1, 2}})
	c.ScanReset(ctx, R)
	c.ScanPause(ctx, R)
	c.ScanResume(ctx, R)
	c.ExportMemory(ctx, R, io.Discard)
	c.Reload(ctx)
	c.Healthz(ctx)
	c.Readyz(ctx)
	var got []string
	for r := range seen {
		got = append(got, r)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the client's routes:\n  %s\nthe API's:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestOpenAPIStatsShape checks the stats the client decodes against the
// Stats schema of api/openapi.yaml: the API's golden answer validates,
// and so does the client's Stats encoded again (nothing lost or renamed on
// the way through the client's types).
func TestOpenAPIStatsShape(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["Stats"]
	if schema == nil {
		t.Fatal("api/openapi.yaml has no Stats schema")
	}
	golden, err := os.ReadFile(filepath.Join("..", "api", "testdata", "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(what string, data []byte) {
		t.Helper()
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.Value.VisitJSON(v); err != nil {
			t.Errorf("%s does not validate against the Stats schema: %v", what, err)
		}
	}
	validate("the golden stats", golden)
	var s client.Stats
	if err := json.Unmarshal(golden, &s); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	validate("client.Stats encoded again", again)
	// A key the schema does not know is refused: the check has teeth.
	var m map[string]any
	if err := json.Unmarshal(golden, &m); err != nil {
		t.Fatal(err)
	}
	m["latency"].(map[string]any)["p50"] = 1
	if err := schema.Value.VisitJSON(m); err == nil {
		t.Error("the Stats schema accepts a latency key without its unit (p50)")
	}
}
