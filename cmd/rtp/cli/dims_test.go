package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/internal/landcheck"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// dimensionSaves writes the saves of the dimension tests into dir: the
// test nether (a bedrock roof with air above it, caves, lava seas, fire,
// soul fire and magma, pockets right under a thin roof) and the test end
// (islands over the void), each in the layout of saves before 26.1 and in
// the 26.1 one (with 26.1's DataVersion), and in the 26.1 save a
// datapack's dimension, mymod:deep/caves, built like the nether but whose
// type puts the roof's top at 111.
func dimensionSaves(t *testing.T, dir string) (old, new string) {
	t.Helper()
	old, new = filepath.Join(dir, "pre-26.1"), filepath.Join(dir, "26.1")
	build := func(dim anvil.Dimension, dv int32) []*anviltest.Chunk {
		_, nether, err := anviltest.NetherChunks()
		if err != nil {
			t.Fatal(err)
		}
		_, end, err := anviltest.EndChunks()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range nether {
			c.Dim = dim
		}
		all := append(nether, end...)
		for _, c := range all {
			c.DataVersion = dv
		}
		return all
	}
	err := anviltest.WriteSave(old, anviltest.Save{
		Level:  &anviltest.Level{Name: "old", DataVersion: 3465}, // 1.20.1
		Chunks: build(anvil.Nether, 3465),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = anviltest.WriteSave(new, anviltest.Save{
		Level:    &anviltest.Level{Name: "new", DataVersion: anvil.DataVersionDimensionsFolder},
		Chunks:   append(build(anvil.Nether, anvil.DataVersionDimensionsFolder), build("mymod:deep/caves", anvil.DataVersionDimensionsFolder)[:16]...),
		Layout26: true,
		Files: map[string][]byte{
			"datapacks/caves/data/mymod/dimension/deep/caves.json":  []byte(`{"type": "mymod:roofed", "generator": {"type": "minecraft:noise"}}`),
			"datapacks/caves/data/mymod/dimension_type/roofed.json": []byte(`{"has_ceiling": true, "min_y": 0, "height": 256, "logical_height": 112}`),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return old, new
}

// TestPickBelowTheCeiling runs rtp pick as a user would, with no flag but
// --world, --dimension and -n, on the test nether and end of both layouts
// and on a datapack's roofed dimension, and re-reads every place handed
// out with package landcheck: each must be safe by its independent rule,
// lie wholly below its dimension's roof, and (in the end) stand on an
// island. Before the dimension type bounded the search, every nether
// place was on the roof (feet at 128).
func TestPickBelowTheCeiling(t *testing.T) {
	old, new := dimensionSaves(t, t.TempDir())
	for _, tc := range []struct {
		name, save, dim string
		ceiling         int // the roof's top layer, 0 for none
	}{
		{"nether pre-26.1", old, "nether", 127},
		{"nether 26.1", new, "minecraft:the_nether", 127},
		{"datapack dimension 26.1", new, "mymod:deep/caves", 111},
		{"end pre-26.1", old, "end", 0},
		{"end 26.1", new, "minecraft:the_end", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 50
			out, stderr, err := run(t, "pick", "-n", "50", "--json", "--timeout", "60s", "--world", tc.save, "--dimension", tc.dim)
			if err != nil {
				t.Fatalf("pick: %v\n%s", err, stderr)
			}
			var locs []api.Teleport
			if err := json.Unmarshal([]byte(out), &locs); err != nil {
				t.Fatalf("pick printed %q: %v", out, err)
			}
			if len(locs) != n {
				t.Fatalf("%d places, want %d", len(locs), n)
			}
			dim, err := anvil.ParseDimension(tc.dim)
			if err != nil {
				t.Fatal(err)
			}
			checker, err := landcheck.Open(tc.save, dim)
			if err != nil {
				t.Fatal(err)
			}
			if y, ok := checker.Ceiling(); ok != (tc.ceiling != 0) || y != tc.ceiling {
				t.Fatalf("landcheck ceiling %d, %v; want %d", y, ok, tc.ceiling)
			}
			for _, l := range locs {
				if err := checker.Check(l.X, l.Y, l.Z); err != nil {
					t.Errorf("place %d %d %d: %v", l.X, l.Y, l.Z, err)
				}
				// Feet and head below the roof's top layer: never at or
				// above the ceiling.
				if tc.ceiling != 0 && l.Y+1 >= int64(tc.ceiling) {
					t.Errorf("place %d %d %d: head at %d, at or above the ceiling %d", l.X, l.Y, l.Z, l.Y+1, tc.ceiling)
				}
			}
			if !strings.Contains(stderr, "dimension_type=") {
				t.Errorf("the log does not name the dimension type:\n%s", stderr)
			}
		})
	}
}

// TestPickDimensionErrors: a dimension id with characters that could lead
// out of the save is a usage error, and a dimension the save lacks is
// named with the dimensions it has, in either layout.
func TestPickDimensionErrors(t *testing.T) {
	old, new := dimensionSaves(t, t.TempDir())
	for _, d := range []string{"../x", "mymod:../../etc", "MyMod:x", "moon"} {
		_, _, err := run(t, "pick", "-n", "1", "--world", old, "--dimension", d)
		if ExitCode(err) != 2 {
			t.Errorf("--dimension %q: %v (exit %d), want a usage error", d, err, ExitCode(err))
		}
	}
	for _, tc := range []struct {
		save, dim string
		want      []string
	}{
		{old, "overworld", []string{"no overworld in " + old, "nether (DIM-1/region/, 4 region files)", "end (DIM1/region/, 4 region files)"}},
		{new, "mymod:mining", []string{"no mymod:mining in " + new, "mymod:deep/caves (dimensions/mymod/deep/caves/region/",
			"nether (dimensions/minecraft/the_nether/region/", "end (dimensions/minecraft/the_end/region/"}},
	} {
		_, _, err := run(t, "pick", "-n", "1", "--world", tc.save, "--dimension", tc.dim)
		if err == nil {
			t.Fatalf("pick --dimension %s: no error", tc.dim)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("pick --dimension %s: %v\nwant it to hold %q", tc.dim, err, w)
			}
		}
	}
}
