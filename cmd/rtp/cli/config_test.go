package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigCheckOK(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty file", "", "ok\n1 world (world), 1 region (default), 0 verifiers\n"},
		{"the example", "", "ok\n1 world (world), 1 region (default), 0 verifiers\n"},
		{"several", `ttl_file: ""
worlds:
  lobby: {}
  arena: {procedural: {seed: 9}}
regions:
  spawn: {world: lobby}
  pvp: {world: arena}
verifiers:
  - name: claims
  - {name: GriefPreventionChecker, kind: http, url: "http://127.0.0.1:9/verify"}
`, "ok\n2 worlds (arena, lobby), 2 regions (pvp, spawn), 2 verifiers (claims, GriefPreventionChecker)\n"},
	} {
		path := writeConfig(t, tc.text)
		if tc.name == "the example" {
			path = filepath.Join("..", "..", "..", "config", "rtp.example.yml")
		}
		out, errOut, err := run(t, "config", "check", path)
		if err != nil || out != tc.want || errOut != "" {
			t.Errorf("%s: rtp config check = %q, %q, %v; want %q", tc.name, out, errOut, err, tc.want)
		}
	}
}

func TestConfigCheckReportsEveryProblem(t *testing.T) {
	path := writeConfig(t, `server:
  listen: 8080
regions:
  default:
    shape:
      radius: 100
      inner: 200
    sinks:
      general: {capacity: -1}
  other:
    world: nowhere
    colour: red
`)
	out, errOut, err := run(t, "config", "check", path)
	if got := ExitCode(err); got != 1 || !errors.Is(err, ErrReported) {
		t.Errorf("exit code %d, err %v; want 1 and a reported error", got, err)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	want := []string{
		path + `:2: server.listen: want a string, got an integer (quote it: "8080")`,
		path + ":7: regions.default.shape.inner: 200 blocks (13 chunks) is not less than radius 100 blocks (6 chunks): the hole must be smaller than the shape",
		path + ":9: regions.default.sinks.general.capacity: -1: want 1 to 16777216",
		path + `:11: regions.other.world: no world named "nowhere" (worlds: world)`,
		// The list of the keys a region takes grows with the configuration.
		path + ":12: regions.other.colour: unknown key (want world, shape, distribution, safety, sinks, pulse, budget, queues, allocator, promotion_timeout, memory",
		"5 problems",
	}
	got := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(got) == len(want) && strings.HasPrefix(got[4], want[4]) {
		got[4] = want[4]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant\n%s", errOut, strings.Join(want, "\n"))
	}
}

func TestConfigCheckReadsTheTTLFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ttl.yml"), []byte("causes:\n  nope: 1d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, "data_dir: "+dir+"\n")
	_, errOut, err := run(t, "config", "check", path)
	if ExitCode(err) != 1 || !strings.HasPrefix(errOut, filepath.Join(dir, "ttl.yml")+":2: causes.nope: unknown cause") || !strings.HasSuffix(errOut, "1 problem\n") {
		t.Errorf("rtp config check with a bad ttl.yml = %q, %v", errOut, err)
	}
}

func TestConfigCheckUsage(t *testing.T) {
	for _, args := range [][]string{{"config", "check"}, {"config", "check", "a", "b"}, {"config", "check", "--nope", "a"}} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v: exit code %d (err %v), want 2", args, ExitCode(err), err)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yml")
	_, errOut, err := run(t, "config", "check", missing)
	if ExitCode(err) != 1 || errors.Is(err, ErrReported) || !strings.Contains(err.Error(), "no such file") || errOut != "" {
		t.Errorf("rtp config check missing.yml = %q, %v; want an unreported error for main to print", errOut, err)
	}
	for _, args := range [][]string{{"config", "--help"}, {"config", "check", "--help"}} {
		if out, _, err := run(t, args...); err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("rtp %v = %q, %v; want usage", args, out, err)
		}
	}
}
