package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
)

// problems returns the *LineError values in an error of Load.
func problemsOf(t *testing.T, err error) []*LineError {
	t.Helper()
	var out []*LineError
	for _, e := range unjoin(err) {
		le, ok := e.(*LineError)
		if !ok {
			t.Fatalf("error %q (%T) is not a *LineError", e, e)
		}
		out = append(out, le)
	}
	return out
}

func mustLoad(t *testing.T, text string) *Config {
	t.Helper()
	c, err := Load(strings.NewReader(text), "t.yml")
	if err != nil {
		t.Fatalf("Load(%q) = %v", text, err)
	}
	return c
}

// want is one expected problem: its line, key and a part of its message.
type want struct {
	line int
	key  string
	msg  string
}

func (w want) String() string { return fmt.Sprintf("t.yml:%d: %s: ...%s...", w.line, w.key, w.msg) }

// badFiles cover each class of problem; every listed problem must be
// reported, with its line and key, and nothing else. They seed FuzzLoad.
var badFiles = []struct {
	name string
	text string
	want []want
}{
	{"syntax", "server:\n  listen: [\n", []want{{2, "", "YAML syntax"}}},
	{"tab indentation", "server:\n\tlisten: x\n", []want{{2, "", "YAML syntax"}}},
	{"second document", "data_dir: a\n---\ndata_dir: b\n", []want{{2, "", "more than one YAML document"}}},
	{"root not a mapping", "- a\n- b\n", []want{{1, "", "want a mapping of sections"}}},
	{"unknown key", "server:\n  listen: 127.0.0.1:1\n  lisen: x\n", []want{{3, "server.lisen", "unknown key"}}},
	{"misspelt key", "server:\n  maxBodyBytes: 5\n", []want{{2, "server.maxBodyBytes", "did you mean max_body_bytes?"}}},
	{"allowed host with a scheme", "server:\n  allowed_hosts:\n    - rtp.example.com\n    - http://rtp.example.com\n", []want{{4, "server.allowed_hosts[1]", "is not a host name or an IP address"}}},
	{"archive floor negative", "archive:\n  min_free_bytes: -5\n  min_free_percent: 101\n", []want{{2, "archive.min_free_bytes", "is negative"}, {3, "archive.min_free_percent", "want 0 to 100"}}},
	{"allowed host with a port", "server:\n  allowed_hosts: [\"a:80\"]\n", []want{{2, "server.allowed_hosts[0]", "without a scheme, port or path"}}},
	{"unknown top key", "\n\nregion: {}\n", []want{{3, "region", "want server, data_dir,"}}},
	{"duplicate key", "data_dir: a\ndata_dir: b\n", []want{{2, "data_dir", "duplicate key (first at line 1)"}}},
	{"duplicate world", "worlds:\n  w: {}\n  w: {}\nregions:\n  r: {world: w}\n", []want{{3, "worlds.w", "duplicate key (first at line 2)"}}},
	{"string for int", "archive:\n  max_entries: many\n", []want{{2, "archive.max_entries", "want an integer, got a string"}}},
	{"int for string", "server:\n  listen: 8080\n", []want{{2, "server.listen", `quote it: "8080"`}}},
	{"float for int", "archive:\n  max_bytes: 1.5\n", []want{{2, "archive.max_bytes", "want an integer, got a number"}}},
	{"int overflow", "regions:\n  default:\n    sinks:\n      general:\n        capacity: 99999999999999999999\n", []want{{5, "regions.default.sinks.general.capacity", "out of range"}}},
	{"bool", "archive:\n  disabled: maybe\n", []want{{2, "archive.disabled", "want true or false"}}},
	{"null scalar", "server:\n  listen:\n", []want{{2, "server.listen", "missing value"}}},
	{"mapping for scalar", "data_dir: {a: b}\n", []want{{1, "data_dir", "want a string, got a mapping"}}},
	{"list for section", "server: [a]\n", []want{{1, "server", "want a mapping, got a list"}}},
	{"scalar for list", "regions:\n  default:\n    safety:\n      unsafe: lava\n", []want{{4, "regions.default.safety.unsafe", "want a list, got a string"}}},
	{"bad duration", "regions:\n  default:\n    pulse: 50\n", []want{{3, "regions.default.pulse", "invalid duration \"50\""}}},
	{"negative duration", "server:\n  read_timeout: -1s\n", []want{{2, "server.read_timeout", "want a positive duration"}}},
	{"pulse too short", "regions:\n  default:\n    pulse: 10us\n", []want{{3, "regions.default.pulse", "want at least 1ms"}}},
	{"negative capacity", "regions:\n  default:\n    sinks:\n      network: {capacity: -3}\n", []want{{4, "regions.default.sinks.network.capacity", "-3: want 1 to"}}},
	{"zero budget", "regions:\n  default:\n    budget:\n      screens: 0\n", []want{{4, "regions.default.budget.screens", "0: want 1 to"}}},
	{"unknown shape kind", "regions:\n  default:\n    shape:\n      kind: hexagon\n", []want{{4, "regions.default.shape.kind", `unknown shape kind "hexagon"`}}},
	{"inner not below radius", "regions:\n  default:\n    shape:\n      radius: 100\n      inner: 99\n", []want{{5, "regions.default.shape.inner", "99 blocks (7 chunks) is not less than radius 100 blocks (6 chunks)"}}},
	{"inner equal radius", "regions:\n  default:\n    shape: {kind: square, radius: 160, inner: 160}\n", []want{{3, "regions.default.shape.inner", "is not less than radius"}}},
	{"radius too large", "regions:\n  default:\n    shape:\n      radius: 100000000\n", []want{{4, "regions.default.shape.radius", "want 0 to 33554432"}}},
	{"negative radius", "regions:\n  default:\n    shape:\n\n      radius: -1\n", []want{{5, "regions.default.shape.radius", "-1 blocks"}}},
	{"rectangle half hole", "regions:\n  default:\n    shape:\n      kind: rectangle\n      inner_x: 32\n", []want{{5, "regions.default.shape.inner_x", "needs both"}}},
	{"rectangle rotation", "regions:\n  default:\n    shape:\n      kind: rectangle\n      rotation: .nan\n", []want{{5, "regions.default.shape.rotation", "finite"}}},
	{"key unused by kind", "regions:\n  default:\n    shape:\n      kind: circle\n      radius_x: 5\n", []want{{5, "regions.default.shape.radius_x", "only used by the rectangle shape (kind is circle)"}}},
	{"key unused by default kind", "regions:\n  default:\n    distribution:\n      exponent: 3\n", []want{{4, "regions.default.distribution.exponent", "only used by the weighted distribution (kind is flat)"}}},
	{"unknown distribution", "regions:\n  default:\n    distribution: {kind: gaussian}\n", []want{{3, "regions.default.distribution.kind", "unknown distribution kind"}}},
	{"bad exponent", "regions:\n  default:\n    distribution:\n      kind: weighted\n      exponent: -2\n", []want{{5, "regions.default.distribution.exponent", "not finite and positive"}}},
	{"bad normal", "regions:\n  default:\n    distribution:\n      kind: normal\n      mean: 2\n      deviation: 0\n", []want{
		{5, "regions.default.distribution.mean", "outside [0, 1]"},
		{6, "regions.default.distribution.deviation", "not finite and positive"},
	}},
	{"missing world", "regions:\n  r:\n    world: nowhere\n", []want{{3, "regions.r.world", `no world named "nowhere" (worlds: world)`}}},
	{"missing default world", "worlds:\n  lobby: {}\nregions:\n  r: {}\n", []want{{4, "regions.r.world", `no world named "world" (worlds: lobby)`}}},
	{"empty worlds", "worlds: {}\n", []want{
		{1, "worlds", "want at least one"},
		{0, "regions.default.world", `no world named "world"`},
	}},
	{"bad region name", "regions:\n  \"a b\": {}\n", []want{{2, `regions."a b"`, "invalid region name"}}},
	{"bad world name", "worlds:\n  ../x: {}\n  world: {}\n", []want{{2, `worlds."../x"`, "invalid world name"}}},
	{"unknown world kind", "worlds:\n  world:\n    kind: flatland\n", []want{{3, "worlds.world.kind", `unknown world kind "flatland"`}}},
	{"procgen params", "worlds:\n  world:\n    procedural:\n      relief: 9\n      biome:\n        snow_line: -1\n", []want{
		{4, "worlds.world.procedural.relief", "relief 9 outside (0, 4]"},
		{6, "worlds.world.procedural.biome.snow_line", "snow line -1"},
	}},
	{"screen workers", "screen_workers: -1\n", []want{{1, "screen_workers", "-1: want 0 (one fewer than the processors) to 4096"}}},
	{"tile cache zero", "worlds:\n  world:\n    tile_cache: 0\n", []want{{3, "worlds.world.tile_cache", "0 tiles: want 1 to 1048576"}}},
	{"tile cache huge", "worlds:\n  world:\n    tile_cache: 2000000\n", []want{{3, "worlds.world.tile_cache", "2000000 tiles: want 1 to 1048576"}}},
	{"watch period huge", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    watch_period: 2h\n", []want{{5, "worlds.world.watch_period", "2h0m0s: want at most 1h (or negative: off)"}}},
	{"minecraft tile cache", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    tile_cache: 9\n", []want{{5, "worlds.world.tile_cache", "only used by procedural worlds (kind is minecraft)"}}},
	{"procedural path", "worlds:\n  world:\n    path: /srv/world\n", []want{{3, "worlds.world.path", "only used by minecraft worlds"}}},
	{"minecraft without path", "worlds:\n  world:\n    kind: minecraft\n", []want{{2, "worlds.world.path", "empty: want a path"}}},
	{"minecraft missing dir", "worlds:\n  world:\n    kind: minecraft\n    path: /nonexistent/rtp/world\n", []want{{4, "worlds.world.path", "no such directory"}}},
	{"minecraft NUL path", "worlds:\n  world:\n    kind: minecraft\n    path: \"a\\0b\"\n", []want{{4, "worlds.world.path", "NUL byte"}}},
	{"minecraft dimension", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    dimension: moon\n", []want{{5, "worlds.world.dimension", `unknown dimension "moon"`}}},
	{"region_dir escapes", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    region_dir: ../other/region\n", []want{{5, "worlds.world.region_dir", "leaves the save folder"}}},
	{"region_dir absolute", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    region_dir: /etc\n", []want{{5, "worlds.world.region_dir", "leaves the save folder"}}},
	{"dimension id leaving the save", "worlds:\n  world:\n    kind: minecraft\n    path: /\n    dimension: \"mymod:../../etc\"\n", []want{{5, "worlds.world.dimension", `none of them "." or ".."`}}},
	{"safety rule", "regions:\n  default:\n    safety:\n      unsafe:\n        - lava\n        - \"lava[level\"\n      biomes:\n        deny: [\"#ocean\", \"a b\"]\n", []want{
		{6, "regions.default.safety.unsafe[1]", `"lava[level"`},
		{8, "regions.default.safety.biomes.deny[1]", `"a b"`},
	}},
	{"safety values", "regions:\n  default:\n    safety:\n      headroom: 40\n      unknown_blocks: maybe\n      vertical:\n        strategy: jump\n        step: -1\n      known_namespaces: [ok, \"Bad NS\"]\n", []want{
		{4, "regions.default.safety.headroom", "headroom 40: want 1 to 16"},
		{5, "regions.default.safety.unknown_blocks", `"maybe": want solid or unsafe`},
		{8, "regions.default.safety.vertical.step", "want a positive step"},
		{9, "regions.default.safety.known_namespaces[1]", "not a namespace"},
	}},
	{"safety fixed without y", "regions:\n  default:\n    safety:\n      vertical: {strategy: fixed}\n", []want{{4, "regions.default.safety.vertical.y", "vertical.y is required"}}},
	{"safety min above max", "regions:\n  default:\n    safety:\n      min_y: 100\n      max_y: 0\n", []want{{4, "regions.default.safety.min_y", "above max_y"}}},
	{"safety border", "regions:\n  default:\n    safety:\n      border: {size: -5}\n", []want{{4, "regions.default.safety.border", "positive size"}}},
	{"duplicate verifier", "verifiers:\n  - name: claims\n  - name: claims\n", []want{{3, "verifiers[1].name", `duplicate verifier name "claims" (first at verifiers[0])`}}},
	{"verifier without name", "verifiers:\n  - kind: claims\n", []want{{2, "verifiers[0].name", "every verifier needs a name"}}},
	{"verifier name whitespace", "verifiers:\n  - name: my checker\n", []want{{2, "verifiers[0].name", "whitespace"}}},
	{"verifier kind", "verifiers:\n  - name: a\n    kind: grpc\n", []want{{3, "verifiers[0].kind", `unknown verifier kind "grpc"`}}},
	{"http without url", "verifiers:\n  - name: a\n    kind: http\n", []want{{2, "verifiers[0].url", "needs a url"}}},
	{"http bad scheme", "verifiers:\n  - name: a\n    kind: http\n    url: ftp://host/x\n", []want{{4, "verifiers[0].url", "want an http or https URL"}}},
	{"http no host", "verifiers:\n  - name: a\n    kind: http\n    url: http:///x\n", []want{{4, "verifiers[0].url", "no host"}}},
	{"http unparsable", "verifiers:\n  - name: a\n    kind: http\n    url: \"http://[::1\"\n", []want{{4, "verifiers[0].url", "invalid URL"}}},
	{"http credentials", "verifiers:\n  - name: a\n    kind: http\n    url: https://user:hunter2@host/x\n", []want{{4, "verifiers[0].url", "holds credentials"}}},
	{"http zero timeout", "verifiers:\n  - name: a\n    kind: http\n    url: http://h/\n    timeout: 0s\n", []want{{5, "verifiers[0].timeout", "want a positive duration"}}},
	{"claims url", "verifiers:\n  - name: a\n    url: http://h/\n", []want{{3, "verifiers[0].url", "only used by http verifiers"}}},
	{"verifier region", "verifiers:\n  - name: a\n    regions: [default, nope, default]\n", []want{
		{3, "verifiers[0].regions[1]", `no region named "nope"`},
		{3, "verifiers[0].regions[2]", "listed twice"},
	}},
	{"listen", "server:\n  listen: localhost\n", []want{{2, "server.listen", "want host:port"}}},
	{"listen port", "server:\n  listen: \":http\"\n", []want{{2, "server.listen", "want a number from 0 to 65535"}}},
	{"empty data dir", "data_dir: \"\"\n", []want{{1, "data_dir", "empty"}}},
	{"NUL ttl file", "ttl_file: \"x\\0\"\n", []want{{1, "ttl_file", "NUL byte"}}},
	{"token and file", "auth:\n  token: abcdefghijklmnopq\n  token_file: /run/token\n", []want{{3, "auth.token_file", "both set"}}},
	{"short token", "auth:\n  token: hunter2\n", []want{{2, "auth.token", "shorter than 16 bytes"}}},
	{"merge not a mapping", "regions:\n  default:\n    <<: 5\n", []want{{3, "regions.default", "merge key"}}},
	{"key not a name", "server:\n  [a]: b\n", []want{{2, "server", "want a name as key"}}},
	{"tagged scalar", "data_dir: !!binary aGVsbG8=\n", []want{{1, "data_dir", "want a string, got a scalar tagged !!binary"}}},
	{"negative unique placement", "regions:\n  r:\n    unique_placement:\n      radius: -16\n",
		[]want{{4, "regions.r.unique_placement.radius", "-16 blocks: want 0 (off) to 1024"}}},
	// The services of a fleet. (A kind that needs a URL and has none
	// depends on the environment: see TestServiceURLFromEnvironment.)
	{"unknown database kind", "database:\n  kind: mysql\n", []want{{2, "database.kind", `unknown database kind "mysql": want sqlite or postgres`}}},
	{"unknown archive kind", "archive:\n\n  kind: s3\n", []want{{3, "archive.kind", `unknown archive kind "s3": want sqlite, postgres or disabled`}}},
	{"unknown leases kind", "leases: {kind: memcached}\n", []want{{1, "leases.kind", `unknown leases kind "memcached": want local or redis`}}},
	{"url with sqlite", "database:\n  url: postgres://h/db\n", []want{{2, "database.url", "only used by kind postgres (kind is sqlite)"}}},
	{"url with archive disabled", "archive:\n  kind: disabled\n  url: postgres://h/db\n", []want{{3, "archive.url", "only used by kind postgres (kind is disabled)"}}},
	{"url with local leases", "leases:\n  url: redis://h\n", []want{{2, "leases.url", "only used by kind redis (kind is local)"}}},
	{"postgres scheme", "database:\n  kind: postgres\n  url: mysql://u:pw@h/db\n", []want{{3, "database.url", "want a postgres:// or postgresql:// URL"}}},
	{"postgres port", "database:\n  kind: postgres\n  url: postgres://u:pw@h:port/db\n", []want{{3, "database.url", "invalid PostgreSQL URL: invalid port"}}},
	{"postgres sslmode", "archive:\n  kind: postgres\n  url: postgresql://h/db?sslmode=sometimes\n", []want{{3, "archive.url", "invalid PostgreSQL URL: failed to configure TLS (sslmode is invalid)"}}},
	{"redis scheme", "leases:\n  kind: redis\n  url: http://h:6379\n", []want{{3, "leases.url", "want a redis:// or rediss:// URL"}}},
	{"redis database", "leases:\n  kind: redis\n  url: redis://h:6379/x\n", []want{{3, "leases.url", `invalid Redis URL: invalid database number: "x"`}}},
	{"redis escape", "leases:\n  kind: redis\n  url: \"redis://:p%zz@h\"\n", []want{{3, "leases.url", `invalid Redis URL: invalid URL escape "%zz"`}}},
	{"archive disabled and postgres", "archive:\n  kind: postgres\n  url: postgres://h/db\n  disabled: true\n", []want{{4, "archive.disabled", "true contradicts kind postgres"}}},
	{"database path with postgres", "database:\n  kind: postgres\n  url: postgres://h/db\n  path: x.db\n", []want{{4, "database.path", "only used by the sqlite database (kind is postgres)"}}},
	{"archive path with postgres", "archive:\n  kind: postgres\n  path: x.db\n  url: postgres://h/db\n", []want{{3, "archive.path", "only used by the sqlite archive (kind is postgres)"}}},
	{"node lease short", "node:\n  lease: 100ms\n", []want{{2, "node.lease", "100ms: want 1s to 1h0m0s"}}},
	{"node lease long", "node: {lease: 2h}\n", []want{{1, "node.lease", "2h0m0s: want 1s to 1h0m0s"}}},
	{"node name", "node:\n  name: \"a b\"\n", []want{{2, "node.name", `"a b": want letters, digits`}}},
	{"node name long", "node:\n  name: " + strings.Repeat("n", 129) + "\n", []want{{2, "node.name", "longer than 128 bytes"}}},
}

func TestLoadReportsEachProblem(t *testing.T) {
	for _, tc := range badFiles {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(strings.NewReader(tc.text), "t.yml")
			if err == nil {
				t.Fatalf("Load(%q) = %+v, nil; want %v", tc.text, c, tc.want)
			}
			if c != nil {
				t.Errorf("Load(%q) returned a Config with its error", tc.text)
			}
			got := problemsOf(t, err)
			if len(got) != len(tc.want) {
				t.Errorf("Load(%q) = %d problems:\n%v\nwant %d: %v", tc.text, len(got), err, len(tc.want), tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					if g.File == "t.yml" && g.Line == w.line && g.Key == w.key && strings.Contains(g.Msg, w.msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("Load(%q) = \n%v\nwant a problem %v", tc.text, err, w)
				}
			}
		})
	}
}

// The token and URL credentials never appear in a message.
func TestProblemsHideSecrets(t *testing.T) {
	for _, text := range []string{
		"auth:\n  token: hunter2\n",
		"auth:\n  token: \"hunter2hunter2hunter2\\x01\"\n",
		"auth:\n  token: hunter2hunter2hunter2\n  token_file: x\n",
		"verifiers:\n  - {name: a, kind: http, url: \"ftp://u:hunter2@h/\"}\n",
		"verifiers:\n  - {name: a, kind: http, url: \"http://u:hunter2@[::1\"}\n",
		"database:\n  kind: postgres\n  url: \"postgres://u:hunter2@h:port/db\"\n",
		"database:\n  kind: postgres\n  url: \"postgres://u:hunter2@[::1/db\"\n",
		"database:\n  kind: postgres\n  url: \"postgres://u:hunter2%zz@h/db\"\n",
		"database:\n  kind: postgres\n  url: \"postgres://h/db?password=hunter2&sslmode=x\"\n",
		"database:\n  kind: postgres\n  url: \"mysql://u:hunter2@h/db\"\n",
		"archive:\n  kind: postgres\n  url: \"postgres://u:hunter2@h/db?connect_timeout=x\"\n",
		"leases:\n  kind: redis\n  url: \"redis://:hunter2%zz@h\"\n",
		"leases:\n  kind: redis\n  url: \"redis://:hunter2@h/x\"\n",
		"leases:\n  url: \"redis://:hunter2@h/0\"\n",
	} {
		_, err := Load(strings.NewReader(text), "t.yml")
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Load(%q) = %v; want an error that does not show the secret", text, err)
		}
	}
}

// One file with a problem of every section: all are reported, in line
// order, in one error.
func TestLoadReportsAllAtOnce(t *testing.T) {
	text := `server:
  listen: nowhere
  max_body_bytes: -1
data_dir: ""
archive:
  max_entries: 0
worlds:
  world:
    procedural: {relief: 0}
  mc:
    kind: minecraft
regions:
  default:
    shape: {kind: blob}
    distribution: {kind: weighted, exponent: 0}
    safety: {headroom: 99}
    sinks: {general: {capacity: 0}}
    pulse: 0s
  other:
    world: gone
verifiers:
  - {name: x, kind: http, url: "gopher://h"}
`
	_, err := Load(strings.NewReader(text), "big.yml")
	got := problemsOf(t, err)
	wantLines := []int{2, 3, 4, 6, 9, 10, 14, 15, 16, 17, 18, 20, 22}
	var lines []int
	for _, p := range got {
		lines = append(lines, p.Line)
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("Load reported lines %v, want %v:\n%v", lines, wantLines, err)
	}
	if !strings.HasPrefix(err.Error(), "big.yml:2: server.listen: ") {
		t.Errorf("first problem %q, want big.yml:2: server.listen: ...", strings.SplitN(err.Error(), "\n", 2)[0])
	}
}

// A problem that follows from a value that could not be read is not
// reported: only the cause is.
func TestLoadSkipsConsequences(t *testing.T) {
	for _, tc := range []struct {
		text string
		want want
	}{
		// The world key did not parse: "no world named world" would follow.
		{"worlds: [a]\nregions:\n  r: {world: world2}\n", want{1, "worlds", "want a mapping of names"}},
		// The region's world did not parse; the default "world" is missing.
		{"worlds:\n  w: {}\nregions:\n  r: {world: [w]}\n", want{4, "regions.r.world", "want a string"}},
		// The radius did not parse; inner 5000 vs the default radius is fine
		// anyway, but inner vs a radius that failed must not be reported.
		{"regions:\n  default:\n    shape: {radius: big, inner: 8000}\n", want{3, "regions.default.shape.radius", "want an integer"}},
		// The kind did not parse: the keys it would use are not judged.
		{"regions:\n  default:\n    shape: {kind: 3, radius_x: 5}\n", want{3, "regions.default.shape.kind", "want a string"}},
	} {
		_, err := Load(strings.NewReader(tc.text), "t.yml")
		got := problemsOf(t, err)
		if len(got) != 1 || got[0].Line != tc.want.line || got[0].Key != tc.want.key || !strings.Contains(got[0].Msg, tc.want.msg) {
			t.Errorf("Load(%q) = %v; want only %v", tc.text, err, tc.want)
		}
	}
}

func TestLoadCapsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("server:\n")
	for i := range 150 {
		fmt.Fprintf(&b, "  bad%d: 1\n", i)
	}
	_, err := Load(strings.NewReader(b.String()), "t.yml")
	got := problemsOf(t, err)
	if len(got) != maxProblems+1 || !strings.Contains(got[maxProblems].Msg, "50 more problems") {
		t.Errorf("Load of 150 problems = %d problems, last %v; want %d and a count of the rest", len(got), got[len(got)-1], maxProblems+1)
	}
}

func TestLoadEmptyIsDefault(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "---\n", "~\n", "{}\n", "server:\nregions:\nverifiers:\n"} {
		if c := mustLoad(t, text); !reflect.DeepEqual(c, Default()) {
			t.Errorf("Load(%q) = %+v, want Default()", text, c)
		}
	}
}

func TestLoadMergesOverDefaults(t *testing.T) {
	c := mustLoad(t, `
server:
  listen: ":9000"
regions:
  default:
    shape:
      radius: 1000
    safety:
      unsafe: ["#unsafe", magma_block]
      min_y: 60
    sinks:
      login: {enabled: true}
  spawn:
    shape: {kind: square, radius: 256, inner: 32}
    distribution: {kind: normal, mean: 0.25}
`)
	want := Default()
	want.Server.Listen = ":9000" // and every other server field stays
	def := DefaultRegion()
	def.Shape.Radius = 1000
	def.Safety.Unsafe = []string{"#unsafe", "magma_block"}
	minY := 60
	def.Safety.MinY = &minY
	def.Sinks.Login.Enabled = true
	spawn := DefaultRegion()
	spawn.Shape.Kind, spawn.Shape.Radius, spawn.Shape.Inner = geom.ShapeSquare, 256, 32
	spawn.Distribution.Kind, spawn.Distribution.Mean = Normal, 0.25
	want.Regions = map[string]Region{"default": def, "spawn": spawn}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load = %+v\nwant %+v", c, want)
	}
}

// A worlds or regions map replaces the default entries; a list replaces
// the default list; null keeps the defaults.
func TestLoadReplacesMapsAndLists(t *testing.T) {
	c := mustLoad(t, `
worlds:
  lobby:
    procedural: {seed: 42}
    tile_cache: 4096
regions:
  r:
    world: lobby
    safety:
      air_like: []
      biomes:
verifiers:
  - name: claims
`)
	if len(c.Worlds) != 1 || c.Worlds["lobby"].Procedural.Seed != 42 || c.Worlds["lobby"].Procedural.Relief != 1 || c.Worlds["lobby"].TileCache != 4096 {
		t.Errorf("Worlds = %+v, want only lobby, seed 42 and a 4096-tile cache over the default world", c.Worlds)
	}
	if _, ok := c.Regions["default"]; ok || len(c.Regions) != 1 {
		t.Errorf("Regions = %v, want only r", c.Regions)
	}
	r := c.Regions["r"]
	if r.Safety.AirLike == nil || len(r.Safety.AirLike) != 0 {
		t.Errorf("air_like: [] gave %#v, want an empty, non-nil list (no air-like blocks)", r.Safety.AirLike)
	}
	if !reflect.DeepEqual(r.Safety.Unsafe, []string{"#unsafe"}) || !reflect.DeepEqual(r.Safety.Biomes, safety.BiomeRules{}) {
		t.Errorf("safety = %+v, want the defaults besides air_like", r.Safety)
	}
	if want := []Verifier{{Name: "claims", Kind: KindClaims, Timeout: 2 * time.Second}}; !reflect.DeepEqual(c.Verifiers, want) {
		t.Errorf("Verifiers = %+v, want %+v", c.Verifiers, want)
	}
}

func TestLoadAnchorsAndMergeKeys(t *testing.T) {
	c := mustLoad(t, `
regions:
  default: &base
    shape: {kind: square, radius: 512}
    pulse: 100ms
    sinks:
      general: {capacity: 20}
  north:
    <<: *base
    shape: {center_z: -20000}
  west:
    sinks: &small
      general: {capacity: 3}
  south:
    <<: [{pulse: 200ms}, *base]
    sinks: *small
`)
	n, s := c.Regions["north"], c.Regions["south"]
	// An own key replaces the merged one whole (YAML's rule): north's
	// shape is the default shape with only center_z changed.
	if n.Shape.Kind != geom.ShapeCircle || n.Shape.CenterZ != -20000 || n.Shape.Radius != DefaultRadius || n.Pulse != 100*time.Millisecond || n.Sinks.General.Capacity != 20 {
		t.Errorf("north = %+v", n)
	}
	// Of several merged mappings the first wins.
	if s.Pulse != 200*time.Millisecond || s.Shape.Radius != 512 || s.Sinks.General.Capacity != 3 {
		t.Errorf("south = %+v", s)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rtp.yml")
	if err := os.WriteFile(path, []byte("data_dir: /var/lib/rtp\nserver:\n  listen: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if got := problemsOf(t, err); len(got) != 1 || got[0].File != path || got[0].Line != 3 {
		t.Errorf("LoadFile = %v, want one problem at %s:3", err, path)
	}
	if !strings.HasPrefix(err.Error(), path+":3: server.listen: ") {
		t.Errorf("LoadFile error %q, want it to start %s:3: server.listen: ", err, path)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v, want fs.ErrNotExist", err)
	}
	big := strings.Repeat("#", MaxFileSize+1)
	if _, err := Load(strings.NewReader(big), "big.yml"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(%d bytes) = %v, want a size error", len(big), err)
	}
}

// Aliases can make a small file name a huge tree; the walk is bounded.
func TestLoadAliasExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &a0 [lava, lava, lava, lava, lava, lava, lava, lava, lava, lava]\n")
	// Regions, each listing the same huge rule list by alias.
	b.WriteString("regions:\n")
	b.WriteString("  r0:\n    safety:\n      unsafe: &u [")
	for i := range 2000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("lava")
	}
	b.WriteString("]\n")
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&b, "  r%d: {safety: {unsafe: *u, air_like: *u, solid: *u}}\n", i)
	}
	start := time.Now()
	_, err := Load(strings.NewReader(b.String()), "t.yml")
	if err == nil || !strings.Contains(err.Error(), "aliases expand to too much") {
		t.Errorf("Load of an alias bomb = %.200v..., want the expansion refused", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Load of an alias bomb took %v", d)
	}
}

func TestLoadMergeCyclesAndFanOut(t *testing.T) {
	_, err := Load(strings.NewReader("regions:\n  a: &a {<<: [*a, *a, *a]}\n"), "t.yml")
	if got := problemsOf(t, err); len(got) != 1 || got[0].Line != 2 || !strings.Contains(got[0].Msg, "brings in a mapping that contains it") {
		t.Errorf("Load of a self-merge = %v, want one problem at line 2", err)
	}
	// Ten mappings each merging the previous one ten times: 10^9 entries
	// if expanded naively.
	var b strings.Builder
	b.WriteString("regions:\n  m0: &m0 {pulse: 1s}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	start := time.Now()
	_, err = Load(strings.NewReader(b.String()), "t.yml")
	if err == nil || time.Since(start) > 20*time.Second {
		t.Errorf("Load of a merge fan-out = %v after %v, want an error, quickly", err, time.Since(start))
	}
}

func TestLineErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    LineError
		want string
	}{
		{LineError{File: "a.yml", Line: 3, Key: "server.listen", Msg: "bad"}, "a.yml:3: server.listen: bad"},
		{LineError{File: "a.yml", Key: "regions.default.world", Msg: "bad"}, "a.yml: regions.default.world: bad"},
		{LineError{File: "a.yml", Line: 1, Msg: "YAML syntax: x"}, "a.yml:1: YAML syntax: x"},
		{LineError{Key: "worlds", Msg: "bad"}, "config: worlds: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestSecretsNotEchoed: a token written as a bare number is refused, and
// no error about a token quotes it.
func TestSecretsNotEchoed(t *testing.T) {
	for _, doc := range []string{
		"auth:\n  token: 987654321\n",               // too short, and a YAML integer
		"auth:\n  token: [987654321]\n",             // not a scalar
		"auth:\n  token: 98765432109876543210987\n", // a number, however long: refused
	} {
		path := filepath.Join(t.TempDir(), "rtp.yml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadFile(path)
		if err == nil {
			t.Fatalf("%q: loaded, want an error (a token is a string)", doc)
		}
		if strings.Contains(err.Error(), "987654321") {
			t.Errorf("%q: error quotes the token: %v", doc, err)
		}
	}
}
