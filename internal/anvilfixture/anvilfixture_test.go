package anvilfixture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layout writes files (slash-separated paths under base, each holding its
// own path) and returns base.
func layout(t *testing.T, base string, files ...string) string {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(base, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// TestDefaultPlaces: without the variable, the prismarine files come from
// the npm package (before the workspace's set) and the NBT files from the
// workspace's set; a missing file is an error that names the variable.
func TestDefaultPlaces(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "repo")
	npm := layout(t, filepath.Join(root, npmFixtures), "1.16/r.0.-1.mca", "1.9/r.-1.-1.mca")
	ws := layout(t, filepath.Join(tmp, "shared", "fixtures", "anvil"),
		"prismarine-provider-anvil/1.16/r.0.-1.mca", "prismarine-provider-anvil/1.21.1/r.0.0.mca", "NBT/root/r.0.0.mca")
	p := placesIn(root)
	for _, tc := range []struct{ rel, want string }{
		{"prismarine-provider-anvil/1.16/r.0.-1.mca", filepath.Join(npm, "1.16", "r.0.-1.mca")},
		{"prismarine-provider-anvil/1.16", filepath.Join(npm, "1.16")},
		{"prismarine-provider-anvil/1.21.1/r.0.0.mca", filepath.Join(ws, "prismarine-provider-anvil", "1.21.1", "r.0.0.mca")},
		{"NBT/root/r.0.0.mca", filepath.Join(ws, "NBT", "root", "r.0.0.mca")},
	} {
		if got, err := p.lookup(tc.rel); err != nil || got != tc.want {
			t.Errorf("lookup(%q) = %q, %v; want %q", tc.rel, got, err, tc.want)
		}
	}
	_, err := p.lookup("NBT/1_18/r.-1.-1.mca")
	if err == nil || !strings.Contains(err.Error(), Env) || strings.Contains(err.Error(), "npm ci") {
		t.Errorf("lookup of a missing NBT file: error %v, want one naming %s and not npm", err, Env)
	}
	_, err = p.lookup("prismarine-provider-anvil/1.8.9/r.-1.0.mca")
	if err == nil || !strings.Contains(err.Error(), Env) || !strings.Contains(err.Error(), "npm ci") {
		t.Errorf("lookup of a missing prismarine file: error %v, want one naming %s and npm ci", err, Env)
	}

	var names []string
	for _, s := range p.saves() {
		names = append(names, s.Name)
		if s.Name == "prismarine-provider-anvil/1.16" && s.Dir != filepath.Join(npm, "1.16") {
			t.Errorf("save %s in %s, want the npm package's %s", s.Name, s.Dir, filepath.Join(npm, "1.16"))
		}
	}
	want := []string{"NBT/root", "prismarine-provider-anvil/1.16", "prismarine-provider-anvil/1.21.1", "prismarine-provider-anvil/1.9"}
	if !slices.Equal(names, want) {
		t.Errorf("saves() = %q, want %q", names, want)
	}
}

// TestVariable: a set variable is the only place looked at.
func TestVariable(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "repo")
	layout(t, filepath.Join(root, npmFixtures), "1.16/r.0.-1.mca")
	env := layout(t, filepath.Join(tmp, "set"), "NBT/root/r.0.0.mca", "prismarine-provider-anvil/1.9/r.-1.-1.mca")
	p := placeSet{env: env}
	if got, err := p.lookup("NBT/root/r.0.0.mca"); err != nil || got != filepath.Join(env, "NBT", "root", "r.0.0.mca") {
		t.Errorf("lookup(NBT/root/r.0.0.mca) = %q, %v; want it under %s", got, err, env)
	}
	if got, err := p.lookup("prismarine-provider-anvil/1.16/r.0.-1.mca"); err == nil {
		t.Errorf("lookup of a file only the npm package has = %q, want an error (the variable wins)", got)
	}
	var names []string
	for _, s := range p.saves() {
		names = append(names, s.Name)
	}
	if want := []string{"NBT/root", "prismarine-provider-anvil/1.9"}; !slices.Equal(names, want) {
		t.Errorf("saves() = %q, want %q", names, want)
	}
}

// TestPathSkips: a fixture found nowhere skips the test that asks.
func TestPathSkips(t *testing.T) {
	t.Setenv(Env, t.TempDir())
	reached := false
	t.Run("missing", func(t *testing.T) {
		Path(t, "NBT/root/r.0.0.mca")
		reached = true
	})
	if reached {
		t.Error("Path of a missing fixture returned, want a skip")
	}
}

// TestFound: this machine's places hold the prismarine files (the npm
// package or the variable), each a region file with its 8 KiB header.
func TestFound(t *testing.T) {
	p := Path(t, "prismarine-provider-anvil/1.16/r.0.-1.mca")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 8192 || fi.Size()%4096 != 0 {
		t.Errorf("%s holds %d bytes, want a region file (a multiple of 4 KiB, header included)", p, fi.Size())
	}
	t.Logf("found at %s", p)
}
