package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// TestGroupTeleportsOverHTTP drives POST
// /v1/regions/{region}/group-teleports against a running engine: a group
// is placed (one safe place per player, in order, distinct, within the
// radius of the centre), each place completes or cancels by its id, bad
// bodies are 400 naming the field, and stats and metrics show the group
// sink. Every answer is checked against api/openapi.yaml.
func TestGroupTeleportsOverHTTP(t *testing.T) {
	cfg := smallConfig(t)
	plain := cfg.Regions[config.DefaultRegionName]
	plain.Sinks.Group.Enabled = false
	cfg.Regions["plain"] = plain
	ev := start(t, cfg, envOptions{token: testToken})
	const path = "/v1/regions/default/group-teleports"

	names := []string{"ann", "bob", "cy", "dee", "eve"}
	body, _ := json.Marshal(map[string]any{"players": names, "waitMs": 20000})
	a := ev.call("POST", path, string(body))
	if a.status != 200 {
		t.Fatalf("group teleport = %d %s", a.status, a.body)
	}
	var g api.GroupTeleport
	if err := json.Unmarshal(a.body, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Locations) != len(names) {
		t.Fatalf("%d places for %d players: %s", len(g.Locations), len(names), a.body)
	}
	radius := cfg.Regions[config.DefaultRegionName].Sinks.Group.Radius
	var cx, cz float64
	cols, ids := map[[2]int64]bool{}, map[uint64]bool{}
	for i, p := range g.Locations {
		if p.Player != names[i] || !strings.HasPrefix(p.Sink, "group/") || p.Region != "default" {
			t.Errorf("place %d: %+v", i, p)
		}
		if cols[[2]int64{p.X, p.Z}] || ids[p.ID] {
			t.Errorf("place %d repeats a column or an id: %+v", i, p)
		}
		cols[[2]int64{p.X, p.Z}], ids[p.ID] = true, true
		checkSafe(t, cfg, p.Teleport)
		cx += float64(p.X) / float64(len(names))
		cz += float64(p.Z) / float64(len(names))
	}
	for _, p := range g.Locations {
		if d := math.Hypot(float64(p.X)-cx, float64(p.Z)-cz); d > float64(radius)+1e-9 {
			t.Errorf("place %d, %d is %.2f blocks from the group's centre, radius %d", p.X, p.Z, d, radius)
		}
	}

	// Each place is a teleport of its own.
	id := func(i int) string { return strconv.FormatUint(g.Locations[i].ID, 10) }
	if a := ev.call("POST", "/v1/teleports/"+id(0)+"/complete", ""); a.status != 204 {
		t.Errorf("complete ann's place = %d %s", a.status, a.body)
	}
	if a := ev.call("DELETE", "/v1/teleports/"+id(1), ""); a.status != 204 {
		t.Errorf("cancel bob's place = %d %s", a.status, a.body)
	}
	for i := range 2 {
		a := ev.call("POST", "/v1/teleports/"+id(i)+"/complete", "")
		checkErrorAnswer(t, "completing a closed place again", a, 404, engine.ReasonUnknownID)
	}
	for i := 2; i < len(names); i++ {
		if a := ev.call("POST", "/v1/teleports/"+id(i)+"/complete", ""); a.status != 204 {
			t.Errorf("complete place %d = %d %s", i, a.status, a.body)
		}
	}

	nine := make([]string, 9)
	for i := range nine {
		nine[i] = fmt.Sprintf("%q", fmt.Sprint("p", i))
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, message    string
	}{
		{"no body", path, ``, 400, CodeBadRequest, `field "players": required`},
		{"no players", path, `{"players":[]}`, 400, CodeBadRequest, `field "players": empty`},
		{"a player twice", path, `{"players":["a","b","a"]}`, 400, CodeBadRequest, `names "a" again`},
		{"an empty name", path, `{"players":["a",""]}`, 400, CodeBadRequest, `element 1: empty`},
		{"not a list", path, `{"players":"a"}`, 400, CodeBadRequest, `want an array of strings`},
		{"an unknown field", path, `{"players":["a"],"sink":"general"}`, 400, CodeBadRequest, `field "sink": unknown`},
		{"more than the region's size", path, `{"players":[` + strings.Join(nine, ",") + `]}`, 400, engine.ReasonGroupTooLarge, "at most 8"},
		{"unknown region", "/v1/regions/nowhere/group-teleports", `{"players":["a"]}`, 404, engine.ReasonUnknownRegion, ""},
		{"no group sink", "/v1/regions/plain/group-teleports", `{"players":["a"]}`, 409, engine.ReasonNoSink, ""},
	} {
		a := ev.call("POST", tc.path, tc.body)
		checkErrorAnswer(t, tc.name, a, tc.status, tc.code)
		if !strings.Contains(a.errMessage(), tc.message) {
			t.Errorf("%s: message %q, want it to say %q", tc.name, a.errMessage(), tc.message)
		}
	}
	if a := ev.callAuth("POST", path, `{"players":["x"]}`, ""); a.status != 401 {
		t.Errorf("without the token: %d %s", a.status, a.body)
	}

	st := ev.stats("default")
	var gs *api.SinkStats
	for i := range st.Pipeline.Sinks {
		if st.Pipeline.Sinks[i].Kind == "group" {
			gs = &st.Pipeline.Sinks[i]
		}
	}
	if gs == nil || gs.Group == nil || gs.Group.Size != 8 || gs.Group.Radius != 8 || gs.Group.Groups != 1 || gs.Group.Players != 5 || gs.Group.Trimmed != 3 {
		t.Fatalf("group sink in stats: %+v", gs)
	}
	if st.Served[gs.Name] != 5 || st.Handouts.Completed != 4 || st.Handouts.Cancelled != 1 {
		t.Errorf("served %v, handouts %+v", st.Served, st.Handouts)
	}
	m := ev.call("GET", "/metrics", "")
	for series, want := range map[string]float64{
		`rtp_group_teleports_total{region="default",sink="group/8@8"}`:      1,
		`rtp_group_players_total{region="default",sink="group/8@8"}`:        5,
		`rtp_group_trimmed_places_total{region="default",sink="group/8@8"}`: 3,
		`rtp_group_size{region="default",sink="group/8@8"}`:                 8,
	} {
		if got := metricValue(string(m.body), series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
