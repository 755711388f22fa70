package anvil_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

func TestParseDimension(t *testing.T) {
	for in, want := range map[string]anvil.Dimension{
		"overworld":            anvil.Overworld,
		"nether":               anvil.Nether,
		"end":                  anvil.End,
		"minecraft:the_nether": anvil.Nether,
		"minecraft:the_end":    anvil.End,
		"mymod:mining":         "mymod:mining",
		"my-mod.x:a/b_c/d.e-f": "my-mod.x:a/b_c/d.e-f",
	} {
		got, err := anvil.ParseDimension(in)
		if err != nil || got != want {
			t.Errorf("ParseDimension(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "moon", "..:x", ".:x", "the_nether", ":x", "x:", "x:../y", "x:a/../b", "x:a//b", "x:/a", "x:a/",
		"x:.", "X:y", "x:Y", "x:a b", "x:a\\b", "x:a:b", "x\x00:y", "../x:y", "x/y:z", strings.Repeat("a", 300) + ":b"} {
		if d, err := anvil.ParseDimension(bad); err == nil {
			t.Errorf("ParseDimension(%q) = %q, want an error", bad, d)
		}
	}
	if anvil.Dimension("").String() != "overworld" || anvil.Dimension("").ID() != "minecraft:overworld" {
		t.Error("the zero Dimension is not the overworld")
	}
	d := anvil.Dimension("mymod:deep/mine")
	if d.Namespace() != "mymod" || d.Path() != "deep/mine" || d.String() != "mymod:deep/mine" ||
		d.RegionDir() != "dimensions/mymod/deep/mine/region" || d.ModernRegionDir() != d.RegionDir() || d.Vanilla() {
		t.Errorf("mymod:deep/mine: %q %q %q %q %q", d.Namespace(), d.Path(), d.String(), d.RegionDir(), d.ModernRegionDir())
	}
	if anvil.Nether.RegionDir() != "DIM-1/region" || anvil.Nether.ModernRegionDir() != "dimensions/minecraft/the_nether/region" {
		t.Errorf("nether folders %q, %q", anvil.Nether.RegionDir(), anvil.Nether.ModernRegionDir())
	}
}

func zipOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestResolveDimensionType(t *testing.T) {
	const roofed = `{"has_ceiling": true, "min_y": 0, "height": 256, "logical_height": 192, "ultrawarm": true}`
	save := fstest.MapFS{
		// A folder pack: a dimension naming a type of its own.
		"datapacks/a/data/mymod/dimension/mining.json":           {Data: []byte(`{"type": "mymod:roofed", "generator": {}}`)},
		"datapacks/a/data/mymod/dimension_type/roofed.json":      {Data: []byte(roofed)},
		"datapacks/a/data/mymod/dimension/open.json":             {Data: []byte(`{"type": {"has_ceiling": false, "min_y": -32, "height": 128}}`)},
		"datapacks/a/data/mymod/dimension/vanillaish.json":       {Data: []byte(`{"type": "the_nether"}`)},
		"datapacks/a/data/mymod/dimension/broken.json":           {Data: []byte(`{"type": "mymod:bad"}`)},
		"datapacks/a/data/mymod/dimension_type/bad.json":         {Data: []byte(`{"height": 100}`)},
		"datapacks/a/data/mymod/dimension/garbage.json":          {Data: []byte(`{"type": [`)},
		"datapacks/a/data/mymod/dimension/undefined.json":        {Data: []byte(`{"type": "mymod:nowhere"}`)},
		"datapacks/a/data/minecraft/dimension_type/the_end.json": {Data: []byte(`{"has_ceiling": true, "min_y": 0, "height": 256, "logical_height": 100}`)},
		// A zip pack after it overrides it.
		"datapacks/b.zip": {Data: zipOf(t, map[string]string{
			"data/zipmod/dimension/caves.json":           `{"type": "zipmod:caves"}`,
			"data/zipmod/dimension_type/caves.json":      `{"has_ceiling": true, "logical_height": 64}`,
			"data/minecraft/dimension_type/the_end.json": `{"min_y": 0, "height": 256, "logical_height": 256}`,
		})},
	}
	for _, tc := range []struct {
		dim     anvil.Dimension
		dv      int32
		want    anvil.DimensionType
		ceiling int
	}{
		{anvil.Nether, 3955, anvil.DimensionType{ID: "minecraft:the_nether", Height: 256, LogicalHeight: 128, HasCeiling: true, Source: "vanilla"}, 127},
		{anvil.Overworld, 3955, anvil.DimensionType{ID: "minecraft:overworld", MinY: -64, Height: 384, LogicalHeight: 384, Source: "vanilla"}, -1},
		{"", 1343, anvil.DimensionType{ID: "minecraft:overworld", Height: 256, LogicalHeight: 256, Source: "vanilla"}, -1},
		{anvil.End, 3955, anvil.DimensionType{ID: "minecraft:the_end", Height: 256, LogicalHeight: 256, Source: "datapacks/b.zip/data/minecraft/dimension_type/the_end.json"}, -1},
		{"mymod:mining", 0, anvil.DimensionType{ID: "mymod:roofed", Height: 256, LogicalHeight: 192, HasCeiling: true, Source: "datapacks/a/data/mymod/dimension_type/roofed.json"}, 191},
		{"mymod:open", 0, anvil.DimensionType{MinY: -32, Height: 128, LogicalHeight: 128, Source: "datapacks/a/data/mymod/dimension/open.json"}, -1},
		{"mymod:vanillaish", 0, anvil.DimensionType{ID: "minecraft:the_nether", Height: 256, LogicalHeight: 128, HasCeiling: true, Source: "vanilla"}, 127},
		{"zipmod:caves", 0, anvil.DimensionType{ID: "zipmod:caves", Height: 256, LogicalHeight: 64, HasCeiling: true, Source: "datapacks/b.zip/data/zipmod/dimension_type/caves.json"}, 63},
		{"mymod:undefined", 0, anvil.DimensionType{MinY: -64, Height: 384, LogicalHeight: 384, Source: "assumed"}, -1},
		{"other:thing", 0, anvil.DimensionType{MinY: -64, Height: 384, LogicalHeight: 384, Source: "assumed"}, -1},
	} {
		got, err := anvil.ResolveDimensionType(withLevel(t, save, anviltest.Level{DataVersion: tc.dv}), tc.dim)
		if err != nil || got != tc.want {
			t.Errorf("ResolveDimensionType(%q) = %+v, %v; want %+v", tc.dim, got, err, tc.want)
			continue
		}
		if y, ok := got.Ceiling(); ok != (tc.ceiling >= 0) || ok && y != tc.ceiling {
			t.Errorf("%q: Ceiling() = %d, %v; want %d", tc.dim, y, ok, tc.ceiling)
		}
	}
	for _, bad := range []anvil.Dimension{"mymod:broken", "mymod:garbage", "../x"} {
		if got, err := anvil.ResolveDimensionType(save, bad); err == nil {
			t.Errorf("ResolveDimensionType(%q) = %+v, want an error", bad, got)
		}
	}
	// A zip that is not one: what it defines cannot be known.
	if _, err := anvil.ResolveDimensionType(fstest.MapFS{"datapacks/x.zip": {Data: []byte("PK not a zip")}}, anvil.Nether); err == nil {
		t.Error("a corrupt zip datapack: no error")
	}
	// A file over the size limit.
	huge := fstest.MapFS{"datapacks/a/data/minecraft/dimension_type/the_nether.json": {Data: bytes.Repeat([]byte(" "), 2<<20)}}
	if _, err := anvil.ResolveDimensionType(huge, anvil.Nether); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("an oversized dimension type: %v, want a limit error", err)
	}
}

// TestDatapackOrder: level.dat's list of enabled packs orders them (the
// last wins), a pack it names disabled does not count, and a pack it
// does not name comes after those it names.
func TestDatapackOrder(t *testing.T) {
	typ := func(logical int) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(fmt.Sprintf(`{"has_ceiling": true, "logical_height": %d}`, logical))}
	}
	const file = "data/minecraft/dimension_type/the_nether.json"
	save := fstest.MapFS{
		"datapacks/a/" + file: typ(64),
		"datapacks/b/" + file: typ(80),
		"datapacks/c/" + file: typ(96),
	}
	for _, tc := range []struct {
		enabled, disabled []string
		want              int
	}{
		{nil, nil, 96}, // name order: c last
		{[]string{"vanilla", "file/c", "file/a"}, nil, 80}, // b is not named: it comes last
		{[]string{"vanilla", "file/c", "file/a"}, []string{"file/b"}, 64},
		{[]string{"file/b", "file/a"}, []string{"file/c"}, 64},
		{[]string{"vanilla"}, []string{"file/a", "file/b", "file/c"}, 128}, // the game's own
	} {
		fsys := save
		if tc.enabled != nil || tc.disabled != nil {
			fsys = withLevel(t, save, anviltest.Level{EnabledPacks: tc.enabled, DisabledPacks: tc.disabled})
		}
		got, err := anvil.ResolveDimensionType(fsys, anvil.Nether)
		if err != nil || got.LogicalHeight != tc.want {
			t.Errorf("enabled %v, disabled %v: %+v, %v; want logical height %d", tc.enabled, tc.disabled, got, err, tc.want)
		}
	}
}

// withLevel returns save with a level.dat holding lv.
func withLevel(t *testing.T, save fstest.MapFS, lv anviltest.Level) fstest.MapFS {
	t.Helper()
	dir := t.TempDir()
	if err := anviltest.WriteLevel(dir, lv); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "level.dat"))
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{"level.dat": {Data: data}}
	for k, v := range save {
		out[k] = v
	}
	return out
}

func TestParseDimensionType(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"height": 0}`, `{"height": 4080}`, `{"min_y": -2048}`, `{"min_y": 8}`,
		`{"min_y": 2000, "height": 256}`, `{"logical_height": 300}`, `{"logical_height": -1}`, `{"has_ceiling": "yes"}`} {
		if got, err := anvil.ParseDimensionType([]byte(bad)); err == nil {
			t.Errorf("ParseDimensionType(%s) = %+v, want an error", bad, got)
		}
	}
	got, err := anvil.ParseDimensionType([]byte(`{"has_ceiling": true}`))
	if err != nil || got != (anvil.DimensionType{Height: 256, LogicalHeight: 256, HasCeiling: true}) {
		t.Errorf("a 1.16 type = %+v, %v", got, err)
	}
}

func FuzzParseDimensionType(f *testing.F) {
	f.Add([]byte(`{"has_ceiling": true, "min_y": 0, "height": 256, "logical_height": 128}`))
	f.Add([]byte(`{"type": {"min_y": -64}}`))
	f.Add([]byte(`{"min_y": 1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ty, err := anvil.ParseDimensionType(data)
		if err != nil {
			return
		}
		if ty.Height < 16 || ty.Height%16 != 0 || ty.MinY%16 != 0 || ty.LogicalHeight < 0 || ty.LogicalHeight > ty.Height {
			t.Fatalf("accepted an impossible type %+v", ty)
		}
		ty.HasCeiling = true
		if y, _ := ty.Ceiling(); y < ty.MinY-1 || y >= ty.MinY+ty.Height {
			t.Fatalf("ceiling %d outside %+v", y, ty)
		}
	})
}

func FuzzParseDimension(f *testing.F) {
	for _, s := range []string{"nether", "mymod:a/b", "x:../y", "x:a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := anvil.ParseDimension(s)
		if err != nil {
			return
		}
		for _, dir := range []string{d.RegionDir(), d.ModernRegionDir()} {
			segs := strings.Split(dir, "/")
			if !filepath.IsLocal(dir) || slices.Contains(segs, "..") || slices.Contains(segs, ".") ||
				strings.Contains(dir, "\\") || strings.Contains(dir, ":") || len(segs) < 2 || segs[len(segs)-1] != "region" ||
				(!d.Vanilla() && len(segs) != 3+strings.Count(d.Path(), "/")+1) {
				t.Fatalf("%q: folder %q is not a plain local path", s, dir)
			}
		}
		if !d.Valid() {
			t.Fatalf("%q parsed to %q, which is not Valid", s, d)
		}
	})
}

// roofedType is a datapack's dimension type with a roof lower than the
// nether's.
const roofedType = `{"has_ceiling": true, "min_y": 0, "height": 256, "logical_height": 112}`

// writeLayouts writes the nether chunks of anviltest as the nether of a
// pre-26.1 save, of a 26.1 save (with 26.1's DataVersion), and as a
// datapack's dimension mymod:deep/caves of a 26.1 save whose type puts
// the roof at 111.
func writeLayouts(t *testing.T) (old, new string) {
	t.Helper()
	old, new = t.TempDir(), t.TempDir()
	_, chunks, err := anviltest.NetherChunks()
	if err != nil {
		t.Fatal(err)
	}
	if err := anviltest.WriteSave(old, anviltest.Save{Level: &anviltest.Level{Name: "old"}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	var all []*anviltest.Chunk
	for _, dim := range []anvil.Dimension{anvil.Nether, "mymod:deep/caves"} {
		_, cs, err := anviltest.NetherChunks()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			c.Dim, c.DataVersion = dim, anvil.DataVersionDimensionsFolder
		}
		all = append(all, cs...)
	}
	_, ends, err := anviltest.EndChunks()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ends {
		c.DataVersion = anvil.DataVersionDimensionsFolder
	}
	all = append(all, ends...)
	err = anviltest.WriteSave(new, anviltest.Save{
		Level:    &anviltest.Level{Name: "new", DataVersion: anvil.DataVersionDimensionsFolder},
		Chunks:   all,
		Layout26: true,
		Files: map[string][]byte{
			"datapacks/caves/data/mymod/dimension/deep/caves.json":  []byte(`{"type": "mymod:roofed"}`),
			"datapacks/caves/data/mymod/dimension_type/roofed.json": []byte(roofedType),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return old, new
}

// TestOpenBothLayouts reads the same nether from a pre-26.1 save and a
// 26.1 one, and a datapack's dimension with a lower roof: every chunk
// carries its dimension's ceiling and every landing of the reader's rule
// lies wholly below it.
func TestOpenBothLayouts(t *testing.T) {
	old, new := writeLayouts(t)
	for _, tc := range []struct {
		save    string
		dim     anvil.Dimension
		dir     string
		ceiling int32
	}{
		{old, anvil.Nether, "DIM-1/region", 127},
		{new, anvil.Nether, "dimensions/minecraft/the_nether/region", 127},
		{new, "mymod:deep/caves", "dimensions/mymod/deep/caves/region", 111},
		{new, anvil.End, "dimensions/minecraft/the_end/region", 0},
	} {
		w, err := anvil.Open(tc.save, anvil.Options{Dimension: tc.dim})
		if err != nil {
			t.Fatalf("Open(%s): %v", tc.dim, err)
		}
		if w.RegionDir() != tc.dir {
			t.Errorf("%s: region folder %q, want %q", tc.dim, w.RegionDir(), tc.dir)
		}
		n := 0
		for cz := -2; cz <= 1; cz++ {
			for cx := -2; cx <= 1; cx++ {
				ch, err := w.Load(context.Background(), geom.Chunk{X: int64(cx), Z: int64(cz)})
				if err != nil {
					t.Fatalf("%s: Load: %v", tc.dim, err)
				}
				if ch.HasCeiling != (tc.ceiling != 0) || ch.Ceiling != tc.ceiling || (tc.ceiling != 0) != (ch.Blocks != nil) {
					t.Fatalf("%s: chunk ceiling %v %d, blocks %v; want %d", tc.dim, ch.HasCeiling, ch.Ceiling, ch.Blocks != nil, tc.ceiling)
				}
				for _, l := range anvil.Landings(ch) {
					n++
					if tc.ceiling != 0 && l.Y+2 >= int(tc.ceiling) {
						t.Fatalf("%s: landing on y %d reaches the ceiling %d", tc.dim, l.Y, tc.ceiling)
					}
					if tc.dim == anvil.End && ch.Column(int(l.Block.X&15), int(l.Block.Z&15)).Top == world.NoTop {
						t.Fatalf("end landing over the void at %v", l.Block)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no landing at all", tc.dim)
		}
		w.Close()
	}
	// Every dimension of both layouts is listed, the 26.1 folder first.
	dims, err := anvil.Dimensions(new)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dims {
		got = append(got, d.String())
	}
	want := "end (dimensions/minecraft/the_end/region/, 4 region files), nether (dimensions/minecraft/the_nether/region/, 4 region files), mymod:deep/caves (dimensions/mymod/deep/caves/region/, 4 region files)"
	if strings.Join(got, ", ") != want {
		t.Errorf("Dimensions = %s\nwant %s", strings.Join(got, ", "), want)
	}
	// A dimension the save lacks: the error lists those it has.
	_, err = anvil.Open(t.TempDir(), anvil.Options{Dimension: "mymod:none"})
	if !errors.Is(err, anvil.ErrNoDimension) {
		t.Errorf("Open of an empty folder: %v, want ErrNoDimension", err)
	}
	if err := os.Remove(filepath.Join(new, "level.dat")); err != nil {
		t.Fatal(err)
	}
	_, err = anvil.Open(new, anvil.Options{Dimension: "mymod:none"})
	var nd *anvil.NoDimensionError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "no mymod:none") || !strings.Contains(err.Error(), "mymod:deep/caves (dimensions/mymod/deep/caves/region/") {
		t.Errorf("Open of a missing dimension: %v", err)
	}
}
