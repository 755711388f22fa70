package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

func TestFleetStatusUsage(t *testing.T) {
	clearServiceEnv(t)
	if _, _, err := run(t, "fleet", "status"); ExitCode(err) != 2 || !strings.Contains(err.Error(), "--config") {
		t.Errorf("rtp fleet status without --config: %v (exit %d), want a usage error naming --config", err, ExitCode(err))
	}
	if _, _, err := run(t, "fleet", "status", "--config", writeConfig(t, ""), "extra"); ExitCode(err) != 2 {
		t.Errorf("rtp fleet status with an argument: exit %d, want 2", ExitCode(err))
	}
	_, _, err := run(t, "fleet", "status", "--config", writeConfig(t, "database: {path: x.db}\n"))
	if ExitCode(err) != 1 || !strings.Contains(err.Error(), "names no fleet database: database.kind is sqlite") {
		t.Errorf("rtp fleet status of a sqlite config: %v, want an error saying it has no fleet database", err)
	}
	path := writeConfig(t, "database: {kind: postgres}\n")
	_, errOut, err := run(t, "fleet", "status", "--config", path)
	if ExitCode(err) != 1 || !strings.HasPrefix(errOut, path+":1: database.url: kind postgres needs a URL") {
		t.Errorf("rtp fleet status without a URL: %q, %v; want the config problem", errOut, err)
	}
	if out, _, err := run(t, "fleet", "--help"); err != nil || !strings.Contains(out, "status") {
		t.Errorf("rtp fleet --help = %q, %v", out, err)
	}
}

func TestFleetStatusUnreachable(t *testing.T) {
	clearServiceEnv(t)
	port := closedPort(t)
	path := writeConfig(t, fmt.Sprintf("database: {kind: postgres, url: 'postgres://rtp:hunter2@127.0.0.1:%d/rtp?sslmode=disable'}\n", port))
	_, _, err := run(t, "fleet", "status", "--config", path)
	want := fmt.Sprintf("fleet status: database postgres://rtp:xxxxx@127.0.0.1:%d/rtp?sslmode=disable: ", port)
	if ExitCode(err) != 1 || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("rtp fleet status of a closed port: %v; want an error starting %q without the password", err, want)
	}
}

func TestFleetStatusEmpty(t *testing.T) {
	clearServiceEnv(t)
	dsn, _ := testPostgres(t)
	t.Setenv(config.EnvDatabaseURL, dsn)
	path := writeConfig(t, "database: {kind: postgres}\n")
	if out, errOut, err := run(t, "fleet", "status", "--config", path); err != nil || out != "no nodes yet\n" || errOut != "" {
		t.Errorf("rtp fleet status of an empty schema = %q, %q, %v; want \"no nodes yet\"", out, errOut, err)
	}
	out, _, err := run(t, "fleet", "status", "--config", path, "--json")
	var got struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Nodes == nil || len(got.Nodes) != 0 {
		t.Errorf("rtp fleet status --json of an empty schema = %q, %v; want {\"nodes\": []}", out, err)
	}
}

func TestFleetStatusLists(t *testing.T) {
	clearServiceEnv(t)
	dsn, _ := testPostgres(t)
	ctx := context.Background()
	open := func(name, software string) *pgpersist.DB {
		db, err := pgpersist.Open(ctx, dsn, pgpersist.Options{Node: name, Software: software})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a := open("node-a", "rtp v1.0.0")
	ra, err := a.Region("north", "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Region("south", "k"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ra.Add(persisttest.Loc(i))
	}
	done := make(chan error, 1)
	ra.MarkHot(persisttest.Loc(1), true, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b := open("node-b", "")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, fmt.Sprintf("database: {kind: postgres, url: %q}\n", dsn))

	out, errOut, err := run(t, "fleet", "status", "--config", path)
	if err != nil || errOut != "" {
		t.Fatalf("rtp fleet status = %v, stderr %q", err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	rows := []*regexp.Regexp{
		regexp.MustCompile(`^NODE +STATE +LIVE +HEARTBEAT +LEASE +RUN +SOFTWARE +REGIONS +ROWS +HOT$`),
		regexp.MustCompile(`^node-a +running +yes +\d+(\.\d+)?m?s ago +ends in \d+(\.\d+)?m?s +1 +rtp v1\.0\.0 +north,south +3 +1$`),
		regexp.MustCompile(`^node-b +clean +no +\d+(\.\d+)?m?s ago +ended \d+(\.\d+)?m?s ago +1 +- +- +0 +0$`),
		regexp.MustCompile(`^2 nodes, 1 live$`),
	}
	if len(lines) != len(rows) {
		t.Fatalf("rtp fleet status:\n%s\nwant %d lines", out, len(rows))
	}
	for i, re := range rows {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}

	out, _, err = run(t, "fleet", "status", "--config", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Nodes []fleetNodeJSON `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if len(got.Nodes) != 2 {
		t.Fatalf("--json nodes %+v, want node-a and node-b", got.Nodes)
	}
	na, nb := got.Nodes[0], got.Nodes[1]
	if na.Name != "node-a" || na.State != "running" || !na.Live || na.Run != 1 || na.Software != "rtp v1.0.0" ||
		!slices.Equal(na.Regions, []string{"north", "south"}) || na.Owned != 3 || na.Hot != 1 ||
		na.HeartbeatAgeSeconds < 0 || na.HeartbeatAgeSeconds > 60 || na.ExpiresInSeconds <= 0 {
		t.Errorf("node-a = %+v", na)
	}
	if nb.Name != "node-b" || nb.State != "clean" || nb.Live || nb.Owned != 0 || nb.ExpiresInSeconds > 0 || nb.Regions == nil {
		t.Errorf("node-b = %+v", nb)
	}
	for _, n := range got.Nodes {
		for _, s := range []string{n.Started, n.Heartbeat, n.Expires} {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				t.Errorf("node %s: time %q: %v", n.Name, s, err)
			}
		}
	}
}

func TestShortDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{850 * time.Millisecond, "850ms"},
		{14*time.Second + 300*time.Millisecond, "14s"},
		{5*time.Minute + 3*time.Second, "5m3s"},
		{2*time.Hour + 5*time.Minute + 20*time.Second, "2h5m"},
		{3*24*time.Hour + 4*time.Hour + 10*time.Minute, "3d4h"},
	} {
		if got := shortDuration(tc.d); got != tc.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
