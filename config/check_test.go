package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/ttl"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A config that names real files: a save folder, ttl.yml, a token and a
// secret. CheckFile accepts it.
func TestCheckFileAcceptsWhatExists(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "world")
	if err := os.Mkdir(save, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "ttl.yml"), "causes:\n  safetyExternal: 7d\n")
	writeFile(t, filepath.Join(dir, "token"), "0123456789abcdef0123\n")
	writeFile(t, filepath.Join(dir, "secret"), "a-network-secret-of-some-length\n")
	cfg := filepath.Join(dir, "rtp.yml")
	writeFile(t, cfg, `data_dir: `+dir+`
auth:
  token_file: `+filepath.Join(dir, "token")+`
worlds:
  survival:
    kind: minecraft
    path: `+save+`
regions:
  main:
    world: survival
    sinks:
      network:
        enabled: true
        secret_file: `+filepath.Join(dir, "secret")+`
`)
	c, err := CheckFile(cfg)
	if err != nil {
		t.Fatalf("CheckFile = %v", err)
	}
	if c.TTLPath() != filepath.Join(dir, "ttl.yml") || c.Worlds["survival"].Path != save {
		t.Errorf("CheckFile = %+v", c)
	}
}

// CheckFile reports what only opening things shows, with the lines of the
// keys that name them, and the ttl.yml's own problems with its lines.
func TestCheckFileOpensWhatTheFileNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ttl.yml"), "causes:\n  biome: 3d\n")
	writeFile(t, filepath.Join(dir, "short"), "tiny\n")
	cfg := filepath.Join(dir, "rtp.yml")
	writeFile(t, cfg, `data_dir: `+dir+`
auth:
  token_file: `+filepath.Join(dir, "missing-token")+`
regions:
  default:
    sinks:
      network:
        enabled: true
        secret_file: `+filepath.Join(dir, "short")+`
  other:
    sinks:
      network:
        secret_file: `+filepath.Join(dir, "short")+`
`)
	_, err := CheckFile(cfg)
	if err == nil {
		t.Fatal("CheckFile = nil, want problems")
	}
	// The problems of rtp.yml and of its ttl.yml are one type, told apart
	// by the file they name.
	var lines []string
	var ttlErr *ttl.LineError
	for _, e := range unjoin(err) {
		var le *LineError
		switch {
		case !errors.As(e, &le):
			t.Errorf("problem %q (%T) is not a LineError", e, e)
		case le.File == cfg:
			lines = append(lines, le.Error())
		case le.File == filepath.Join(dir, "ttl.yml"):
			ttlErr = le
		default:
			t.Errorf("problem %q names neither %s nor its ttl.yml", e, cfg)
		}
	}
	want := []string{
		cfg + ":3: auth.token_file: open " + filepath.Join(dir, "missing-token") + ": no such file or directory",
		cfg + ":9: regions.default.sinks.network.secret_file: " + filepath.Join(dir, "short") + ": shorter than 16 bytes",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckFile problems:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if ttlErr == nil || ttlErr.File != filepath.Join(dir, "ttl.yml") || ttlErr.Line != 2 {
		t.Errorf("ttl.yml problem = %+v, want one at %s:2", ttlErr, filepath.Join(dir, "ttl.yml"))
	}
	// The other region's network sink is disabled: its secret is not read.
	if strings.Contains(err.Error(), "regions.other") {
		t.Errorf("CheckFile read the secret of a disabled sink: %v", err)
	}
}

func TestCheckSkipsWhatValidateFaults(t *testing.T) {
	c := Default()
	c.Auth.Token = "0123456789abcdef"
	c.Auth.TokenFile = "/nonexistent/token"
	r := c.Regions["default"]
	r.Shape.Kind = "blob"
	c.Regions["default"] = r
	c.TTLFile = "/nonexistent/dir/ttl.yml" // missing: the defaults
	err := c.Check()
	got := problemsOf(t, err)
	if len(got) != 2 || got[0].Key != "auth.token_file" || !strings.Contains(got[0].Msg, "both set") ||
		got[1].Key != "regions.default.shape.kind" {
		t.Errorf("Check() = %v; want only Validate's two problems", err)
	}
	c = Default()
	c.TTLFile = t.TempDir() // a directory: not readable as a file
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "config: ttl_file: ") {
		t.Errorf("Check() with ttl_file a directory = %v, want a ttl_file problem", err)
	}
}
