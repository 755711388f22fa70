package engine_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/internal/landcheck"
	"github.com/rtpengine/rtp/pipeline"
)

// players returns n player names with the given prefix.
func players(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// groupTeleport asks for a group in the default region, waiting up to 30 s.
func groupTeleport(t *testing.T, e *engine.Engine, names []string) []engine.GroupPlace {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ps, err := e.GroupTeleport(ctx, config.DefaultRegionName, engine.GroupRequest{Players: names})
	if err != nil {
		t.Fatalf("GroupTeleport(%d players): %v", len(names), err)
	}
	return ps
}

// checkGroup asserts what every group placed must be: one place per
// player in the order given, distinct IDs and columns, one world, every
// place within radius blocks of the places' centroid (computed here, from
// the answer alone).
func checkGroup(t *testing.T, names []string, ps []engine.GroupPlace, radius int) {
	t.Helper()
	if len(ps) != len(names) {
		t.Fatalf("%d places for %d players", len(ps), len(names))
	}
	ids := map[uint64]bool{}
	cols := map[[2]int64]bool{}
	var cx, cz float64
	for i, p := range ps {
		if p.Player != names[i] {
			t.Fatalf("place %d is for %q, want %q (the order given)", i, p.Player, names[i])
		}
		if ids[p.ID] || cols[[2]int64{p.X, p.Z}] {
			t.Fatalf("place %d (%d at %d, %d) repeats an ID or a column", i, p.ID, p.X, p.Z)
		}
		ids[p.ID], cols[[2]int64{p.X, p.Z}] = true, true
		if p.World != ps[0].World || p.Region != config.DefaultRegionName || !strings.HasPrefix(p.Sink, "group/") {
			t.Fatalf("place %d: %+v", i, p.Location)
		}
		cx += float64(p.X)
		cz += float64(p.Z)
	}
	cx /= float64(len(ps))
	cz /= float64(len(ps))
	for _, p := range ps {
		if d := math.Hypot(float64(p.X)-cx, float64(p.Z)-cz); d > float64(radius)+1e-9 {
			t.Fatalf("place %d, %d is %.2f blocks from the group's centre %.2f, %.2f; radius %d", p.X, p.Z, d, cx, cz, radius)
		}
	}
}

// TestGroupTeleport: groups of every size up to the profile's are placed
// (distinct, within the radius), each place completes or cancels on its
// own by its ID, and bad requests fail with their reason, handing out
// nothing.
func TestGroupTeleport(t *testing.T) {
	cfg := testConfig(t)
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Sinks.Group = config.GroupSink{Enabled: true, MaxSize: 6, Radius: 10, Capacity: 2}
	cfg.Regions[config.DefaultRegionName] = rc
	plain := smallRegion(512)
	plain.Sinks.Group.Enabled = false
	cfg.Regions["plain"] = plain
	e := newEngine(t, cfg)
	run(t, e)

	var ids []uint64
	for k := 6; k >= 1; k-- {
		names := players(fmt.Sprintf("g%d-", k), k)
		ps := groupTeleport(t, e, names)
		checkGroup(t, names, ps, 10)
		for _, p := range ps {
			ids = append(ids, p.ID)
		}
	}
	st, err := e.Stats(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Served["group/6@10"]; got != 21 {
		t.Errorf("served by the group sink: %d, want 21", got)
	}
	var gs *pipeline.GroupStats
	for _, s := range st.Pipeline.Sinks {
		if s.Group != nil {
			gs = s.Group
		}
	}
	if gs == nil || gs.Groups != 6 || gs.Players != 21 || gs.Trimmed != 15 || gs.Size != 6 || gs.Radius != 10 {
		t.Errorf("group sink stats %+v; want 6 groups, 21 players, 15 places trimmed", gs)
	}
	if st.Handouts.Open != 21 {
		t.Errorf("open handouts %d, want 21", st.Handouts.Open)
	}

	// Each place is a handout of its own.
	if err := e.Complete(ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.Cancel(ids[1]); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:2] {
		if err := e.Complete(id); reason(err) != engine.ReasonUnknownID {
			t.Errorf("Complete of a closed place: %v", err)
		}
	}
	if err := e.Complete(ids[2]); err != nil {
		t.Errorf("Complete of the third place of the group: %v", err)
	}
	st, _ = e.Stats(config.DefaultRegionName)
	if st.Handouts.Completed != 2 || st.Handouts.Cancelled != 1 || st.Handouts.Open != 18 {
		t.Errorf("handouts %+v; want 2 completed, 1 cancelled, 18 open", st.Handouts)
	}

	// A player's new place replaces their old one, whether single or
	// of a group.
	again := groupTeleport(t, e, []string{"g6-3", "newcomer"})
	if err := e.Complete(ids[3]); reason(err) != engine.ReasonUnknownID {
		t.Errorf("the replaced place of g6-3 still completes: %v", err)
	}
	for _, p := range again {
		if err := e.Complete(p.ID); err != nil {
			t.Error(err)
		}
	}

	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		region  string
		players []string
		want    string
	}{
		{"no players", config.DefaultRegionName, nil, engine.ReasonInvalid},
		{"a player twice", config.DefaultRegionName, []string{"a", "b", "a"}, engine.ReasonInvalid},
		{"an empty name", config.DefaultRegionName, []string{"a", ""}, engine.ReasonInvalid},
		{"too many for the profile", config.DefaultRegionName, players("x", 7), engine.ReasonGroupTooLarge},
		{"too many for any profile", config.DefaultRegionName, players("x", engine.MaxGroupPlayers+1), engine.ReasonInvalid},
		{"unknown region", "nowhere", []string{"a"}, engine.ReasonUnknownRegion},
		{"no group sink", "plain", []string{"a"}, engine.ReasonNoSink},
	} {
		open := openHandouts(t, e)
		_, err := e.GroupTeleport(ctx, tc.region, engine.GroupRequest{Players: tc.players})
		if reason(err) != tc.want {
			t.Errorf("%s: GroupTeleport = %v, want reason %s", tc.name, err, tc.want)
		}
		if now := openHandouts(t, e); now != open {
			t.Errorf("%s: the failed request left %d handouts open, %d before", tc.name, now, open)
		}
	}
}

// openHandouts is the number of open handouts over every region of e.
func openHandouts(t *testing.T, e *engine.Engine) int64 {
	t.Helper()
	var n int64
	for _, name := range e.Regions() {
		st, err := e.Stats(name)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Handouts.Open
	}
	return n
}

// TestGroupLandingsIndependentlySafe places groups on Minecraft saves (the
// synthetic one with buildings, and a real fixture) and judges every
// place with package landcheck, which reads the region files itself: no
// place may fail, stand on a block one falls through, repeat another of
// its group or lie outside the group radius.
func TestGroupLandingsIndependentlySafe(t *testing.T) {
	saves := syntheticSaves(t)[:1] // builds
	for _, s := range fixtureSaves(t) {
		if strings.Contains(s.name, "1.16") {
			saves = append(saves, s)
			break
		}
	}
	for _, s := range saves {
		t.Run(s.name, func(t *testing.T) { testGroupLandings(t, s) })
	}
}

func testGroupLandings(t *testing.T, s landingSave) {
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: s.dir, Dimension: s.dim}}
	rc := smallRegion(0)
	rc.World = "mc"
	rc.Shape = s.shape
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	checker, err := landcheck.Open(s.dir, landcheckDim(s.dim))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cfg)
	run(t, e)
	radius := rc.Sinks.Group.Radius
	checked, groups := 0, 0
	deadline := time.Now().Add(landingSaveBudget)
	for size := 1; groups < 16 && time.Now().Before(deadline); size = size%rc.Sinks.Group.MaxSize + 1 {
		names := players(fmt.Sprintf("r%d-", groups), size)
		ctx, cancel := context.WithTimeout(t.Context(), landingFirstBudget)
		ps, err := e.GroupTeleport(ctx, config.DefaultRegionName, engine.GroupRequest{Players: names})
		cancel()
		if err != nil {
			t.Fatalf("group %d of %d players: %v", groups, size, err)
		}
		groups++
		checkGroup(t, names, ps, radius)
		for _, p := range ps {
			checked++
			if err := checker.Check(p.X, p.Y, p.Z); err != nil {
				t.Errorf("group place %d, %d, %d: %v", p.X, p.Y, p.Z, err)
			}
			if s.builds {
				if ground, _, _, err := checker.Blocks(p.X, p.Y, p.Z); err == nil && fallThrough(ground) {
					t.Errorf("group place %d, %d, %d stands on %s", p.X, p.Y, p.Z, ground)
				}
			}
			if err := e.Complete(p.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%s: %d groups, %d places checked", s.name, groups, checked)
	if groups < 16 {
		t.Errorf("%d groups placed within %v, want 16", groups, landingSaveBudget)
	}
}

// TestGroupCachedLocations: the pipeline's listing of the places it holds
// (read by the map's cached-locations layer) numbers the places of each
// group subspace together, hot, of the group sink, with the sink's radius,
// every subspace fitting it.
func TestGroupCachedLocations(t *testing.T) {
	cfg := testConfig(t)
	e := newEngine(t, cfg)
	run(t, e)
	g := cfg.Regions[config.DefaultRegionName].Sinks.Group
	sink := fmt.Sprintf("group/%d@%d", g.MaxSize, g.Radius)
	waitFor(t, "a full group sink", func() bool { return fill(stats(t, e, config.DefaultRegionName), sink) == g.Capacity })
	locs, _ := e.Region(config.DefaultRegionName).Pipeline().Locations(10000)
	byGroup := map[int][]pipeline.CachedLocation{}
	for _, l := range locs {
		switch {
		case l.Group > 0:
			if !l.Hot || l.Sink != sink || l.Radius != g.Radius {
				t.Errorf("group place listed as %+v", l)
			}
			byGroup[l.Group] = append(byGroup[l.Group], l)
		case l.Radius != 0 || strings.HasPrefix(l.Sink, "group/"):
			t.Errorf("a place of no subspace listed as %+v", l)
		}
	}
	if len(byGroup) < g.Capacity {
		t.Fatalf("%d subspaces listed, the sink holds %d", len(byGroup), g.Capacity)
	}
	for id, ls := range byGroup {
		if len(ls) != g.MaxSize {
			t.Errorf("subspace %d listed with %d places, want %d", id, len(ls), g.MaxSize)
		}
		var cx, cz float64
		for _, l := range ls {
			cx += float64(l.X) / float64(len(ls))
			cz += float64(l.Z) / float64(len(ls))
		}
		for _, l := range ls {
			if d := math.Hypot(float64(l.X)-cx, float64(l.Z)-cz); d > float64(g.Radius)+1e-9 {
				t.Errorf("subspace %d: place %d, %d is %.2f blocks from its centre", id, l.X, l.Z, d)
			}
		}
	}
}
