package client

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestStatsDecoding serves package api's golden stats answer and checks
// that Stats decodes every key of it: the strict decoding of the same
// bytes (unknown keys refused) equals what the client returns, and the
// durations are there as time.Duration.
func TestStatsDecoding(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "api", "testdata", "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want Stats
	dec := json.NewDecoder(bytes.NewReader(golden))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("the golden stats do not decode strictly: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/regions/r/stats" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(golden)
	}))
	defer srv.Close()
	c := New(srv.URL, Options{})
	got, err := c.Stats(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Stats = %+v\nwant %+v", got, want)
	}
	if got.Region != "r" || got.Pipeline.Sinks[0].DemandPerSecond != 1.5 || got.Memory.LastRebuild == nil ||
		got.Watch == nil || got.Watch.Reader.WarningsSuppressed != 100 || got.Handouts.Refused != 109 {
		t.Errorf("Stats lost fields: %+v", got)
	}
	if got.Latency.Max() != 10*time.Millisecond || got.Watch.Period() != 5*time.Second {
		t.Errorf("durations: max %v, watch period %v", got.Latency.Max(), got.Watch.Period())
	}
	raw, err := c.StatsRaw(t.Context(), "r")
	if err != nil || !bytes.Equal(raw, bytes.TrimSpace(golden)) && !bytes.Equal(raw, golden) {
		t.Errorf("StatsRaw = %s, %v; want the answer as served", raw, err)
	}
}
