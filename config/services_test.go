package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/engine"
)

// clearServiceEnv unsets the service URL variables for the test.
func clearServiceEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{EnvDatabaseURL, EnvArchiveURL, EnvLeasesURL} {
		t.Setenv(v, "")
	}
}

func TestFleetSpec(t *testing.T) {
	clearServiceEnv(t)
	c := mustLoad(t, `database:
  kind: postgres
  url: "postgres://rtp:pw@db:5432/rtp?sslmode=disable"
archive:
  kind: postgres
  url: "postgresql://rtp:pw@db/tiles"
  max_entries: 10
leases:
  kind: redis
  url: "rediss://:pw@cache:6380/3"
node:
  name: rtp-1.example
  lease: 40s
`)
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	want := engine.FleetSpec{
		DatabaseURL: "postgres://rtp:pw@db:5432/rtp?sslmode=disable",
		LeasesURL:   "rediss://:pw@cache:6380/3",
		Node:        "rtp-1.example",
		NodeLease:   40 * time.Second,
	}
	if s.Fleet != want {
		t.Errorf("Spec().Fleet = %+v, want %+v", s.Fleet, want)
	}
	if s.Archive.URL != "postgresql://rtp:pw@db/tiles" || s.Archive.Disabled || s.Archive.Limits.MaxEntries != 10 {
		t.Errorf("Spec().Archive = %+v, want the postgres archive with 10 entries", s.Archive)
	}

	// The defaults: every part local, the engine's node lease.
	s, err = Default().Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Fleet != (engine.FleetSpec{NodeLease: engine.DefaultNodeLease}) || s.Archive.URL != "" || s.Archive.Disabled {
		t.Errorf("Default().Spec() fleet %+v, archive %+v; want nothing shared", s.Fleet, s.Archive)
	}
}

func TestArchiveKinds(t *testing.T) {
	clearServiceEnv(t)
	for _, tc := range []struct {
		text     string
		mode     string
		disabled bool
	}{
		{"", KindSQLite, false},
		{"archive: {disabled: true}\n", KindDisabled, true},
		{"archive: {kind: sqlite, disabled: true}\n", KindDisabled, true},
		{"archive: {kind: disabled}\n", KindDisabled, true},
		{"archive: {kind: disabled, disabled: false, path: x.db}\n", KindDisabled, true},
		{"archive: {kind: postgres, url: 'postgres://h/db'}\n", KindPostgres, false},
	} {
		c := mustLoad(t, tc.text)
		s, err := c.Spec()
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if c.Archive.Mode() != tc.mode || s.Archive.Disabled != tc.disabled {
			t.Errorf("%q: mode %s, Spec disabled %v; want %s, %v", tc.text, c.Archive.Mode(), s.Archive.Disabled, tc.mode, tc.disabled)
		}
	}
}

// A URL the file leaves empty comes from the environment, for the kind
// that takes one only; a URL the file writes wins.
func TestServiceURLFromEnvironment(t *testing.T) {
	clearServiceEnv(t)
	text := "database: {kind: postgres}\narchive:\n  kind: postgres\nleases: {kind: redis}\n"
	_, err := Load(strings.NewReader(text), "t.yml")
	got := problemsOf(t, err)
	wantMsgs := []struct {
		line     int
		key, env string
	}{{1, "database.url", EnvDatabaseURL}, {2, "archive.url", EnvArchiveURL}, {4, "leases.url", EnvLeasesURL}}
	if len(got) != len(wantMsgs) {
		t.Fatalf("Load without URLs = %v; want %d problems", err, len(wantMsgs))
	}
	for i, w := range wantMsgs {
		g := got[i]
		if g.Line != w.line || g.Key != w.key || !strings.Contains(g.Msg, "needs a URL: set "+w.key+" or the environment variable "+w.env) {
			t.Errorf("problem %d = %v, want one at t.yml:%d: %s naming %s", i, g, w.line, w.key, w.env)
		}
	}

	t.Setenv(EnvDatabaseURL, "postgres://env:pw@envdb/rtp")
	t.Setenv(EnvArchiveURL, "postgres://env:pw@envdb/tiles")
	t.Setenv(EnvLeasesURL, "redis://:pw@envcache:6379/2")
	c := mustLoad(t, text)
	if c.Database.URL != "" {
		t.Errorf("the environment's URL was written into the Config: %q", c.Database.URL.Reveal())
	}
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Fleet.DatabaseURL != "postgres://env:pw@envdb/rtp" || s.Archive.URL != "postgres://env:pw@envdb/tiles" || s.Fleet.LeasesURL != "redis://:pw@envcache:6379/2" {
		t.Errorf("Spec URLs %q %q %q, want the environment's", s.Fleet.DatabaseURL, s.Archive.URL, s.Fleet.LeasesURL)
	}
	if u, from := c.Database.ConnURL(); u.Reveal() != "postgres://env:pw@envdb/rtp" || from != EnvDatabaseURL {
		t.Errorf("ConnURL() = %q, %q; want the variable's URL and name", u.Reveal(), from)
	}

	// The file wins over the environment.
	c = mustLoad(t, "database: {kind: postgres, url: 'postgres://file/rtp'}\nleases: {kind: redis, url: 'redis://file:6379'}\n")
	if s, err = c.Spec(); err != nil || s.Fleet.DatabaseURL != "postgres://file/rtp" || s.Fleet.LeasesURL != "redis://file:6379" {
		t.Errorf("Spec with URLs in the file and the environment = %+v, %v; want the file's", s.Fleet, err)
	}
	if _, from := c.Database.ConnURL(); from != "" {
		t.Errorf("ConnURL names %q as the source of the file's URL", from)
	}

	// Kinds that take no URL ignore the variables.
	s, err = mustLoad(t, "").Spec()
	if err != nil || s.Fleet.DatabaseURL != "" || s.Fleet.LeasesURL != "" || s.Archive.URL != "" {
		t.Errorf("default Spec with the variables set = %+v, %+v, %v; want them ignored", s.Fleet, s.Archive, err)
	}

	// A bad URL from the environment names the variable, not the secret.
	t.Setenv(EnvDatabaseURL, "postgres://env:hunter2@envdb:port/rtp")
	t.Setenv(EnvLeasesURL, "http://:hunter2@envcache")
	_, err = Load(strings.NewReader(text), "t.yml")
	got = problemsOf(t, err)
	if len(got) != 2 || got[0].Line != 1 || got[0].Key != "database.url" || !strings.HasPrefix(got[0].Msg, EnvDatabaseURL+": invalid PostgreSQL URL") ||
		got[1].Line != 4 || got[1].Key != "leases.url" || !strings.HasPrefix(got[1].Msg, EnvLeasesURL+": want a redis://") {
		t.Errorf("Load with bad URLs in the environment = %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password leaks: %v", err)
	}
	// Validate, on a Config built in code, reads them the same way.
	c = Default()
	c.Database.Kind = KindPostgres
	if keys := validateKeys(t, c); len(keys) != 1 || keys[0] != "database.url" {
		t.Errorf("Validate() keys %q, want database.url", keys)
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"postgres://rtp:hunter2@db:5432/rtp?sslmode=disable", "postgres://rtp:xxxxx@db:5432/rtp?sslmode=disable"},
		{"postgres://rtp@db/rtp", "postgres://rtp@db/rtp"},
		{"redis://:hunter2@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{"postgres://db/rtp?password=hunter2&user=rtp", "postgres://db/rtp?password=xxxxx&user=rtp"},
		{"postgres://db/rtp?sslpassword=hunter2", "postgres://db/rtp?sslpassword=xxxxx"},
		{"postgres://u:hunter2@[::1/db", "postgres://[unparsable URL]"},
		{"redis://:hunter2%zz@h", "redis://[unparsable URL]"},
		{"u:hunter2@h:5432", "[unparsable URL]"},
		{"host=db password=hunter2", "[unparsable URL]"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestServiceURLNeverPrintsPassword(t *testing.T) {
	c := Default()
	c.Database = Database{Kind: KindPostgres, URL: "postgres://rtp:hunter2@db/rtp"}
	c.Leases = Leases{Kind: KindRedis, URL: "redis://:hunter2@cache:6379/0"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "database", c.Database, "url", c.Leases.URL)
	js, err := json.Marshal(c.Database)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yaml.Marshal(c.Leases)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), fmt.Sprint(c.Leases.URL),
		logged.String(), string(js), string(ys),
	} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("the password leaks: %s", s)
		}
		if !strings.Contains(s, "xxxxx@") {
			t.Errorf("%q does not show the redacted URL", s)
		}
	}
	if c.Database.URL.Reveal() != "postgres://rtp:hunter2@db/rtp" {
		t.Error("Reveal lost the URL")
	}
}
