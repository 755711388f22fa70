package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/memory"
)

// TestMemoryExportFile exports a saved table offline and compares the
// runs with the table's own export.
func TestMemoryExportFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "default.bin")
	tab, err := memory.New(memory.Options{Len: 5000, World: "world"})
	if err != nil {
		t.Fatal(err)
	}
	water, _ := memory.ParseCause("water")
	claims, _ := memory.ParseCause("claims")
	for i := int64(100); i < 110; i++ {
		tab.AddBad(i, water, "")
	}
	tab.AddBad(4000, claims, "claims")
	tab.Rebuild()
	if err := tab.Save(path); err != nil {
		t.Fatal(err)
	}
	want := tab.Export()

	out, stderr, err := run(t, "memory", "export", path)
	if err != nil {
		t.Fatalf("memory export: %v\n%s", err, stderr)
	}
	var got memory.Export
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("memory export printed %q: %v", out, err)
	}
	// The default region's universe is far larger than the table's, and
	// the runs are the same.
	if got.World != "world" || got.Len <= 5000 || len(got.Active) != len(want.Active) {
		t.Fatalf("export = world %q len %d, %d active runs; want world, > 5000, %d runs", got.World, got.Len, len(got.Active), len(want.Active))
	}
	for i := range want.Active {
		w, g := want.Active[i], got.Active[i]
		w.TTL, g.TTL = 0, 0 // TTLs are not stored in files
		if !reflect.DeepEqual(w, g) {
			t.Errorf("active run %d = %+v, want %+v", i, g, w)
		}
	}

	// -o writes a file; a region of a config sizes the universe.
	cfg := writeConfig(t, "regions:\n  small:\n    world: world\n    shape: {kind: circle, radius: 400}\n")
	outFile := filepath.Join(dir, "out.json")
	if _, _, err := run(t, "memory", "export", path, "--config", cfg, "--region", "small", "-o", outFile); err == nil {
		t.Fatal("export into a region too small for the runs succeeded")
	} else if !strings.Contains(err.Error(), "past the") {
		t.Fatalf("export into a small region: %v", err)
	}
	cfg = writeConfig(t, "regions:\n  big:\n    world: world\n    shape: {kind: circle, radius: 1200}\n")
	if _, _, err := run(t, "memory", "export", path, "--config", cfg, "--region", "big", "-o", outFile); err != nil {
		t.Fatal(err)
	}
	c, err := config.LoadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := c.Regions["big"].BuildShape()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil || json.Unmarshal(data, &got) != nil || got.Len != shape.Len() || len(got.Active) != len(want.Active) {
		t.Fatalf("export -o wrote %q (%v), want a universe of %d", data, err, shape.Len())
	}

	if _, _, err := run(t, "memory", "export", path, "--region", "nowhere"); ExitCode(err) != 2 {
		t.Fatalf("export with an unknown region = %v, want a usage error", err)
	}
	bad := filepath.Join(dir, "bad.bin")
	os.WriteFile(bad, []byte("not a memory file"), 0o600)
	if _, _, err := run(t, "memory", "export", bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("export of a corrupt file = %v, want an error naming it", err)
	}
	if _, _, err := run(t, "memory", "export", filepath.Join(dir, "missing.bin")); err == nil {
		t.Fatal("export of a missing file succeeded")
	}
}
