package server

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
)

// exhaustedFake is the fake engine with one exhausted region.
type exhaustedFake struct{ *fakeEngine }

func (exhaustedFake) Exhausted() []string { return []string{"r (vert 900, ungenerated 124)"} }

// An exhausted region: teleports are answered 503 region-exhausted with
// Retry-After 30, /readyz stays 200 and names the region, and the stats
// carry the state, all as the OpenAPI document says.
func TestExhaustedAnswers(t *testing.T) {
	f := newFake(t)
	s, err := New(exhaustedFake{f}, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := specChecked(t, s.Handler())
	f.set(&engine.Error{Region: "r", Sink: "general", Reason: engine.ReasonExhausted,
		Err: errors.New("no safe place left in 1024 cells: vert 900, ungenerated 124")}, false)
	a := do(t, h, "POST", "/v1/regions/r/teleports", `{"player":"alice"}`)
	checkErrorAnswer(t, "teleport in an exhausted region", a, 503, engine.ReasonExhausted)
	if ra := a.header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30", ra)
	}
	f.set(nil, false)
	a = do(t, h, "GET", "/readyz", "")
	var st api.Status
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatal(err)
	}
	if a.status != 200 || st.Status != "ready" || len(st.Exhausted) != 1 || st.Exhausted[0] != "r (vert 900, ungenerated 124)" {
		t.Errorf("readyz = %d %s, want ready naming r", a.status, a.body)
	}

	since := time.Date(2026, 12, 4, 14, 0, 0, 0, time.FixedZone("x", 3600))
	f.stats = &engine.Stats{Region: "r", World: "w",
		Exhaustion: engine.ExhaustionStats{Exhausted: true, Since: since, ByCause: map[string]int64{"vert": 900}, Times: 2}}
	a = do(t, h, "GET", "/v1/regions/r/stats", "")
	var rs api.Stats
	if err := json.Unmarshal(a.body, &rs); err != nil {
		t.Fatal(err)
	}
	x := rs.Exhaustion
	if !x.Exhausted || x.Since == nil || !x.Since.Equal(since) || x.Since.Location() != time.UTC || x.ByCause["vert"] != 900 || x.Times != 2 {
		t.Errorf("stats exhaustion = %+v (%s)", x, a.body)
	}
}
