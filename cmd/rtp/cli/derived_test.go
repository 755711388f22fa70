package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// flatChunks returns the chunks x0..x1, z0..z1 (inclusive) of flat
// land: stone up to y 62 under grass at y 63, in the 1.18+ layout, or in
// the pre-1.13 one when legacy is not nil.
func flatChunks(t *testing.T, x0, z0, x1, z1 int, legacy *anviltest.Legacy) []*anviltest.Chunk {
	t.Helper()
	var out []*anviltest.Chunk
	for x := x0; x <= x1; x++ {
		for z := z0; z <= z1; z++ {
			c := anviltest.NewChunk(x, z, anvil.Overworld)
			bottom := -64
			if legacy != nil {
				var err error
				if c, err = anviltest.NewChunkIn(x, z, anvil.Overworld, 0, 256); err != nil {
					t.Fatal(err)
				}
				c.Legacy, bottom = legacy, 0
			}
			if err := c.Fill(0, bottom, 0, 15, 62, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
			if err := c.Fill(0, 63, 0, 15, 63, 15, "minecraft:grass_block"); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	return out
}

// writeFlatSave writes a save of level lv (none when nil) and chunks.
func writeFlatSave(t *testing.T, lv *anviltest.Level, chunks []*anviltest.Chunk) string {
	t.Helper()
	dir := t.TempDir()
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: lv, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readKept decodes the data directory's file of derived regions.
func readKept(t *testing.T, data string) derivedFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, DerivedRegionsFile))
	if err != nil {
		t.Fatal(err)
	}
	var f derivedFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return f
}

// TestKeptDerivedRegion: a region derived from a save is kept in the
// data directory and used from then on, so that a patch explored far
// away does not move it; the configuration's shape and the flags win over
// it without changing it; a damaged file is an error naming it.
func TestKeptDerivedRegion(t *testing.T) {
	t.Parallel()
	// 8 x 8 chunks round the spawn.
	save := writeFlatSave(t, &anviltest.Level{SpawnX: 8, SpawnY: 64, SpawnZ: 8}, flatChunks(t, -4, -4, 3, 3, nil))
	data := t.TempDir()
	_, stderr := pickJSON(t, "--world", save, "--data", data, "-n", "2")
	r0, x0, z0 := loggedCircle(t, stderr)
	keptPath := filepath.Join(data, DerivedRegionsFile)
	if !strings.Contains(stderr, "derived from the save now and kept in "+keptPath) ||
		!strings.Contains(stderr, "pin it with regions.default.shape in the configuration or with --x/--z/--radius") {
		t.Errorf("the log does not say the region is kept, nor how to pin it:\n%s", stderr)
	}
	abs, err := filepath.Abs(save)
	if err != nil {
		t.Fatal(err)
	}
	f := readKept(t, data)
	if len(f.Regions) != 1 {
		t.Fatalf("kept %+v, want one region", f)
	}
	e := f.Regions[0]
	if e.Save != abs || e.Dimension != "minecraft:overworld" || e.Region != "default" ||
		e.CenterX != x0 || e.CenterZ != z0 || e.Radius != r0 || time.Since(e.DerivedAt) > time.Hour || e.From == "" {
		t.Errorf("kept %+v, want the logged circle %d around (%d, %d) of %s", e, r0, x0, z0, abs)
	}
	kept, err := os.ReadFile(keptPath)
	if err != nil {
		t.Fatal(err)
	}

	// Players explore a 6 x 6 patch 2,000 blocks out.
	if err := anviltest.WriteRegions(filepath.Join(save, "region"), flatChunks(t, 125, 0, 130, 5, nil)); err != nil {
		t.Fatal(err)
	}
	// Derived afresh, the circle moves: the case the kept region guards
	// against.
	_, stderr = pickJSON(t, "--world", save, "-n", "1")
	if r, x, z := loggedCircle(t, stderr); r == r0 && x == x0 && z == z0 {
		t.Fatalf("the far patch does not move a derived circle (%d around (%d, %d)): the test proves nothing", r, x, z)
	}
	locs, stderr := pickJSON(t, "--world", save, "--data", data, "-n", "5")
	if r, x, z := loggedCircle(t, stderr); r != r0 || x != x0 || z != z0 {
		t.Errorf("with the kept region: circle %d around (%d, %d), want %d around (%d, %d)\n%s", r, x, z, r0, x0, z0, stderr)
	}
	date := e.DerivedAt.UTC().Format(time.DateOnly)
	if want := "region default: circle centre (" + itoa(x0) + ", " + itoa(z0) + ") radius " + itoa(r0) + ", derived from the save on " + date; !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "pin it with regions.default.shape") || !strings.Contains(stderr, `from="the save on `+date+` (kept in `) {
		t.Errorf("the log does not show the kept region (%q):\n%s", want, stderr)
	}
	circle, err := geom.NewCircle(geom.Block{X: x0, Z: z0}.Chunk(), r0>>geom.ChunkShift, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locs {
		if !circle.Contains(geom.Block{X: l.X, Z: l.Z}.Chunk()) {
			t.Errorf("location %+v outside the kept circle", l)
		}
	}

	// --radius replaces the kept radius, keeps its centre, and the file
	// stays as it was.
	_, stderr = pickJSON(t, "--world", save, "--data", data, "-n", "1", "--radius", "40")
	if r, x, z := loggedCircle(t, stderr); r != 40 || x != x0 || z != z0 || !strings.Contains(stderr, "with --x, --z, --radius over it") {
		t.Errorf("--radius 40 over the kept region: circle %d around (%d, %d), want 40 around (%d, %d)\n%s", r, x, z, x0, z0, stderr)
	}
	// The configuration's shape wins and leaves the kept one alone.
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte("regions:\n  default:\n    shape:\n      kind: circle\n      center_x: 2040\n      center_z: 40\n      radius: 48\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr = pickJSON(t, "--world", save, "--data", data, "--config", cfg, "-n", "1")
	if r, x, z := loggedCircle(t, stderr); r != 48 || x != 2040 || z != 40 || !strings.Contains(stderr, `from="the configuration file"`) {
		t.Errorf("the configuration's circle: got %d around (%d, %d)\n%s", r, x, z, stderr)
	}
	if now, err := os.ReadFile(keptPath); err != nil || !bytes.Equal(now, kept) {
		t.Errorf("the kept file changed (%v):\n%s\nwas\n%s", err, now, kept)
	}

	// Another dimension, another save, another region name: kept apart.
	other := writeFlatSave(t, &anviltest.Level{SpawnX: 8, SpawnY: 64, SpawnZ: 8}, flatChunks(t, 0, 0, 1, 1, nil))
	pickJSON(t, "--world", other, "--data", data, "-n", "1")
	if f := readKept(t, data); len(f.Regions) != 2 {
		t.Errorf("kept %+v, want two regions", f)
	}

	// A save that no longer holds the kept circle's chunks: the error
	// says where the circle was kept.
	for _, r := range []string{"r.-1.-1.mca", "r.-1.0.mca", "r.0.-1.mca", "r.0.0.mca"} {
		if err := os.Remove(filepath.Join(save, "region", r)); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, err = run(t, "pick", "-n", "1", "--world", save, "--data", data)
	if ExitCode(err) != 1 || !strings.Contains(err.Error(), "holds no finished chunk") || !strings.Contains(err.Error(), "the circle was kept in "+keptPath) {
		t.Errorf("pick with a kept circle over nothing: %v (exit %d)\n%s", err, ExitCode(err), stderr)
	}

	// A damaged file: an error naming it, before anything runs, and the
	// file is left for the operator.
	bad := []byte(`{"version": 1, "regions": [{"save": "relative", "dimension": "minecraft:overworld"`)
	if err := os.WriteFile(keptPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = run(t, "pick", "-n", "1", "--world", other, "--data", data)
	if ExitCode(err) != 1 || !strings.Contains(err.Error(), keptPath) || !strings.Contains(err.Error(), "remove it to derive the regions again") {
		t.Errorf("pick on a damaged file: %v (exit %d), want exit 1 naming %s\n%s", err, ExitCode(err), keptPath, stderr)
	}
	if now, _ := os.ReadFile(keptPath); !bytes.Equal(now, bad) {
		t.Errorf("the damaged file was rewritten: %s", now)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestServeKeepsDerivedRegion: serve derives and keeps the region, and a
// second serve on the same data directory takes the kept one though the
// save has grown.
func TestServeKeepsDerivedRegion(t *testing.T) {
	t.Parallel()
	save := writeFlatSave(t, &anviltest.Level{SpawnX: 8, SpawnY: 64, SpawnZ: 8}, flatChunks(t, -3, -3, 2, 2, nil))
	data := t.TempDir()
	serveOnce := func() string {
		s := startServe(t, "--world", save, "--listen", "127.0.0.1:0", "--data", data)
		c := client.New(s.addr, client.Options{})
		waitReady(t, c)
		if err := s.stop(t); err != nil {
			t.Fatalf("serve: %v\n%s", err, s.log())
		}
		return s.log()
	}
	log := serveOnce()
	r0, x0, z0 := loggedCircle(t, log)
	if !strings.Contains(log, "derived from the save now and kept in "+filepath.Join(data, DerivedRegionsFile)) {
		t.Errorf("serve does not say it keeps the derived region:\n%s", log)
	}
	if err := anviltest.WriteRegions(filepath.Join(save, "region"), flatChunks(t, 125, 0, 127, 2, nil)); err != nil {
		t.Fatal(err)
	}
	log = serveOnce()
	if r, x, z := loggedCircle(t, log); r != r0 || x != x0 || z != z0 || !strings.Contains(log, "derived from the save on ") {
		t.Errorf("second serve: circle %d around (%d, %d), want the kept %d around (%d, %d)\n%s", r, x, z, r0, x0, z0, log)
	}
}

// TestPickSaveNoSpawn: with a level.dat that gives no spawn, the log says
// what centre was used instead of "the spawn".
func TestPickSaveNoSpawn(t *testing.T) {
	t.Parallel()
	save := writeFlatSave(t, &anviltest.Level{NoSpawn: true}, flatChunks(t, -3, -3, 2, 2, nil))
	_, stderr := pickJSON(t, "--world", save, "-n", "1")
	if _, x, z := loggedCircle(t, stderr); x != 0 || z != 0 ||
		!strings.Contains(stderr, "centre: block 0, 0 (level.dat gives no spawn)") || strings.Contains(stderr, "the spawn") {
		t.Errorf("centre (%d, %d); the log must name block 0, 0 and why:\n%s", x, z, stderr)
	}
	// With a spawn written, it is the spawn.
	save = writeFlatSave(t, &anviltest.Level{}, flatChunks(t, -3, -3, 2, 2, nil))
	if _, stderr = pickJSON(t, "--world", save, "-n", "1"); !strings.Contains(stderr, "centre: the spawn;") {
		t.Errorf("a level.dat spawning at 0, 0: the log does not name the spawn:\n%s", stderr)
	}
}

// TestPickLegacyNoPopulationFlag: a 1.12 save whose chunks record no
// population (a generator outside the game wrote them) is served, read as
// finished, and the log says so once; one whose chunks are not populated
// is refused.
func TestPickLegacyNoPopulationFlag(t *testing.T) {
	t.Parallel()
	lv := &anviltest.Level{DataVersion: anviltest.LegacyDataVersion, SpawnY: 64}
	save := writeFlatSave(t, lv, flatChunks(t, -2, -2, 1, 1, &anviltest.Legacy{Population: anviltest.NoPopulationFlag}))
	locs, stderr := pickJSON(t, "--world", save, "-n", "3")
	if len(locs) != 3 {
		t.Fatalf("%d locations, want 3", len(locs))
	}
	for _, l := range locs {
		if l.Y != 64 || l.X < -32 || l.X >= 32 || l.Z < -32 || l.Z >= 32 {
			t.Errorf("location %+v not on the grass (y 64) of the save", l)
		}
	}
	const said = "16 chunks of region/ of " // then the save's path
	if n := strings.Count(stderr, "record no generation status"); n != 1 || !strings.Contains(stderr, said) || !strings.Contains(stderr, "read as finished") {
		t.Errorf("the log says %d times that chunks record no status (want once, %q):\n%s", n, said, stderr)
	}
	unpopulated := writeFlatSave(t, lv, flatChunks(t, -2, -2, 1, 1, &anviltest.Legacy{Population: anviltest.NotPopulated}))
	_, stderr, err := run(t, "pick", "-n", "1", "--world", unpopulated)
	if ExitCode(err) != 1 || !strings.Contains(err.Error(), "holds no finished chunk") || !strings.Contains(err.Error(), "16 chunks saved, 0 finished") {
		t.Errorf("pick on unpopulated chunks: %v (exit %d), want no finished chunk\n%s", err, ExitCode(err), stderr)
	}
	if strings.Contains(stderr, "record no generation status") {
		t.Errorf("unpopulated chunks taken for chunks without a status:\n%s", stderr)
	}
}

func validDerived() derivedEntry {
	return derivedEntry{
		derivedKey: derivedKey{Save: "/srv/mc/world", Dimension: "minecraft:overworld", Region: "default"},
		CenterX:    920, CenterZ: -8, Radius: 1136,
		DerivedAt: time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC), From: "the save (centre: the spawn)",
	}
}

// TestParseDerived decodes what encodeDerived writes and refuses every
// flawed file with an error.
func TestParseDerived(t *testing.T) {
	a, b := validDerived(), validDerived()
	b.Region, b.Dimension = "nether", "minecraft:the_nether"
	enc, err := encodeDerived(map[derivedKey]derivedEntry{a.derivedKey: a, b.derivedKey: b})
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseDerived(enc)
	if err != nil || len(got) != 2 || got[a.derivedKey] != a || got[b.derivedKey] != b {
		t.Fatalf("parseDerived(encodeDerived) = %+v, %v", got, err)
	}
	entry := func(edit func(*derivedEntry)) string {
		e := validDerived()
		edit(&e)
		j, _ := json.Marshal(e)
		return `{"version": 1, "regions": [` + string(j) + `]}`
	}
	for name, text := range map[string]string{
		"empty":             "",
		"not json":          "regions: []",
		"truncated":         `{"version": 1, "regions": [`,
		"trailing":          `{"version": 1, "regions": []} {}`,
		"unknown field":     `{"version": 1, "regions": [], "extra": 1}`,
		"version 0":         `{"regions": []}`,
		"version 2":         `{"version": 2, "regions": []}`,
		"relative save":     entry(func(e *derivedEntry) { e.Save = "world" }),
		"no region":         entry(func(e *derivedEntry) { e.Region = "" }),
		"zero radius":       entry(func(e *derivedEntry) { e.Radius = 0 }),
		"huge radius":       entry(func(e *derivedEntry) { e.Radius = 1 << 40 }),
		"centre off":        entry(func(e *derivedEntry) { e.CenterZ = -40_000_000 }),
		"no date":           entry(func(e *derivedEntry) { e.DerivedAt = time.Time{} }),
		"bad dimension":     entry(func(e *derivedEntry) { e.Dimension = "../x" }),
		"short dimension":   entry(func(e *derivedEntry) { e.Dimension = "nether" }),
		"radius as a word":  `{"version": 1, "regions": [{"save": "/w", "dimension": "minecraft:overworld", "region": "r", "radius": "big"}]}`,
		"regions an object": `{"version": 1, "regions": {}}`,
	} {
		if got, err := parseDerived([]byte(text)); err == nil {
			t.Errorf("%s: parseDerived(%q) = %+v, want an error", name, text, got)
		}
	}
	twice := `{"version": 1, "regions": [` + strings.Repeat(string(must(json.Marshal(validDerived())))+",", 2)
	twice = strings.TrimSuffix(twice, ",") + "]}"
	if _, err := parseDerived([]byte(twice)); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a region given twice: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzParseDerived: parseDerived never panics, and what it accepts
// encodes to a file it reads back the same.
func FuzzParseDerived(f *testing.F) {
	e := validDerived()
	enc, err := encodeDerived(map[derivedKey]derivedEntry{e.derivedKey: e})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc)
	f.Add([]byte(`{"version": 1, "regions": []}`))
	f.Add([]byte(`{"version": 1, "regions": [{"save": "/w"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseDerived(b)
		if err != nil {
			return
		}
		again, err := encodeDerived(got)
		if err != nil {
			t.Fatalf("encodeDerived(%+v): %v", got, err)
		}
		back, err := parseDerived(again)
		if err != nil || len(back) != len(got) {
			t.Fatalf("re-reading %s: %+v, %v", again, back, err)
		}
		for k, v := range got {
			if w, ok := back[k]; !ok || !w.DerivedAt.Equal(v.DerivedAt) || w.CenterX != v.CenterX || w.CenterZ != v.CenterZ || w.Radius != v.Radius || w.From != v.From {
				t.Fatalf("entry %+v read back as %+v", v, w)
			}
		}
	})
}

// TestStatsNameUngenerated serves a region pinned past what the save
// holds: rtp stats names the chunks not generated as such, not only as
// the API's RESERVATION_FAILED.
func TestStatsNameUngenerated(t *testing.T) {
	t.Parallel()
	save := writeFlatSave(t, &anviltest.Level{SpawnY: 64}, flatChunks(t, -2, -2, 1, 1, nil))
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	// A circle of 20 chunks' radius: about 1,250 chunks, 16 of them saved.
	if err := os.WriteFile(cfg, []byte("regions:\n  default:\n    shape:\n      kind: circle\n      center_x: 0\n      center_z: 0\n      radius: 320\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--world", save, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	c := client.New(s.addr, client.Options{})
	waitReady(t, c)
	if _, err := c.Teleport(t.Context(), "default", client.TeleportRequest{Player: "alex", Wait: 30 * time.Second}); err != nil {
		t.Fatalf("Teleport: %v\n%s", err, s.log())
	}
	st, err := c.Stats(t.Context(), "default")
	if err != nil {
		t.Fatal(err)
	}
	n := st.Memory.Rejections["ungenerated"]
	if n == 0 {
		t.Fatalf("no ungenerated rejection counted before the first place out of 16 saved chunks in 1,250: %+v", st.Memory.Rejections)
	}
	out, _, err := run(t, "stats", "--addr", s.addr, "--region", "default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "by cause:") || !strings.Contains(out, "ungenerated ") ||
		!strings.Contains(out, "draws fell on chunks the world has not generated") {
		t.Errorf("rtp stats does not name the ungenerated chunks:\n%s", out)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
}
