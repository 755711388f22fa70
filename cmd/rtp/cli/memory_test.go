package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/memory"
)

func TestMemorySimulateSaveInspect(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sim.bin")
	out, _, err := run(t, "memory", "simulate", "--radius", "40", "--days", "6", "--rate", "40", "--unsafe", "0.75", "--save", file)
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	if !strings.Contains(out, "steady state") || !strings.Contains(out, "memory saved to "+file) {
		t.Fatalf("simulate output lacks the summary:\n%s", out)
	}
	if lines := strings.Count(out, "\n"); lines < 8 {
		t.Fatalf("simulate printed %d lines, want a row per day:\n%s", lines, out)
	}

	out, _, err = run(t, "memory", "inspect", file)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	for _, want := range []string{"version:", "4", `"sim"`, "checksum:", " ok", "shape:", "circle(", "active cells:", "active safety:"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = run(t, "memory", "inspect", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("inspect --json is not JSON: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(file)
	f, err := memory.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != memory.FileVersion || rep.World != "sim" || rep.Runs != len(f.Runs) || len(rep.List) != len(f.Runs) {
		t.Fatalf("inspect --json = version %d world %q runs %d list %d; file has %d runs", rep.Version, rep.World, rep.Runs, len(rep.List), len(f.Runs))
	}
	if rep.Shape != f.Shape || rep.Shape == "" || rep.ShapeLen != f.ShapeLen || rep.Universe != f.Universe ||
		rep.Checksum != fmt.Sprintf("crc32c %08x ok", f.Checksum) {
		t.Fatalf("inspect --json identity = %q %d %d %q; file has %q %d %d %08x",
			rep.Shape, rep.ShapeLen, rep.Universe, rep.Checksum, f.Shape, f.ShapeLen, f.Universe, f.Checksum)
	}
	var cells int64
	for _, r := range f.Runs {
		cells += r.Len
	}
	if got := rep.Cells["active"] + rep.Cells["probation"] + rep.Cells["expired"]; got != cells {
		t.Fatalf("cells by state sum to %d, want %d", got, cells)
	}

	// One flipped bit: the checksum fails and inspect says so.
	data[len(data)/2] ^= 0x04
	damaged := filepath.Join(dir, "damaged.bin")
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "memory", "inspect", damaged); !errors.Is(err, memory.ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("inspect of a damaged file = %v, want a checksum mismatch", err)
	}
}

func TestMemoryInspectCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(path, []byte("RTPM\x00\x00\x00\x03\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "memory", "inspect", path)
	if !errors.Is(err, memory.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("inspect of a corrupt file = %v, want a corrupt-file error naming it", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("inspect must not move or delete the file: %v", err)
	}
	_, _, err = run(t, "memory", "inspect", filepath.Join(t.TempDir(), "missing.bin"))
	if err == nil || ExitCode(err) != 1 {
		t.Fatalf("inspect of a missing file = %v, want exit code 1", err)
	}
}

func TestMemoryInspectLegacyAndTime(t *testing.T) {
	// A version 2 file: every run permanent.
	b := []byte("RTPM\x00\x00\x00\x02\x00\x01w\x00\x00\x00\x11\x00\x00\x00\x00\x00\x00\x00\x01")
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3, 4)
	b = append(b, 0, 0, 0, 0)
	path := filepath.Join(t.TempDir(), "v2.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "memory", "inspect", "--runs", "--at", "2099-01-01T00:00:00Z", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "version:") || !strings.Contains(out, "safetyExternal") || !strings.Contains(out, "active") || !strings.Contains(out, "static") ||
		!strings.Contains(out, "none (version 2 has none") {
		t.Fatalf("inspect of a v2 file:\n%s", out)
	}
	if _, _, err := run(t, "memory", "inspect", "--at", "yesterday", path); ExitCode(err) != 2 {
		t.Fatalf("--at yesterday: %v, want a usage error", err)
	}
}
