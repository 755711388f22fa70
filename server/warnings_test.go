package server

import (
	"encoding/json"
	"testing"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
)

// warningFake is the fake engine with a warning to give.
type warningFake struct{ *fakeEngine }

func (warningFake) Warnings() []string {
	return []string{`region "r": the locations database rtp.db was new or empty at start`}
}

// A warning of the engine (a locations database found lost at start) is
// in /readyz's answer, which stays 200, and in the region's stats, as the
// OpenAPI document says.
func TestWarningsAnswered(t *testing.T) {
	f := newFake(t)
	s, err := New(warningFake{f}, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := specChecked(t, s.Handler())
	a := do(t, h, "GET", "/readyz", "")
	var st api.Status
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatal(err)
	}
	if a.status != 200 || len(st.Warnings) != 1 || st.Warnings[0] != (warningFake{}).Warnings()[0] {
		t.Errorf("readyz = %d %s, want ready with the warning", a.status, a.body)
	}
	f.stats = &engine.Stats{Region: "r", World: "w", Recovery: engine.RecoveryStats{LostDatabase: "the locations database rtp.db was new"}}
	a = do(t, h, "GET", "/v1/regions/r/stats", "")
	var rs api.Stats
	if err := json.Unmarshal(a.body, &rs); err != nil {
		t.Fatal(err)
	}
	if rs.Recovery.LostDatabase != "the locations database rtp.db was new" {
		t.Errorf("stats recovery = %+v (%s), want the warning", rs.Recovery, a.body)
	}
}
