package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildTarball packs the synthetic package under testdata into an npm-style
// tarball (members under "package/"), with extra members added or
// replacing files. The result is the same bytes for the same input.
func buildTarball(t *testing.T, extra map[string]string) []byte {
	t.Helper()
	members := map[string][]byte{}
	root := filepath.Join("testdata", "package")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		members[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range extra {
		members[name] = []byte(body)
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		h := &tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(members[name])),
			ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(members[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func integrityOf(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func testPackage(tgz []byte) Package {
	return Package{Name: "minecraft-data", Version: "0.0.0-test",
		URL: "https://example.com/minecraft-data-0.0.0-test.tgz", Integrity: integrityOf(tgz)}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		boxes []box
		want  uint8
	}{
		{"empty", nil, classEmpty},
		{"full cube", []box{{0, 0, 0, 1, 1, 1}}, classFull},
		{"full cube from two halves", []box{{0, 0, 0, 1, 0.5, 1}, {0, 0.5, 0, 1, 1, 1}}, classFull},
		{"bottom slab", []box{{0, 0, 0, 1, 0.5, 1}}, 8},
		{"top slab is a floor, not full", []box{{0, 0.5, 0, 1, 1, 1}}, 16},
		{"carpet", []box{{0, 0, 0, 1, 0.0625, 1}}, 1},
		{"snow, two layers", []box{{0, 0, 0, 1, 0.125, 1}}, 2},
		{"soul sand", []box{{0, 0, 0, 1, 0.875, 1}}, 14},
		{"farmland", []box{{0, 0, 0, 1, 0.9375, 1}}, 15},
		{"stairs", []box{{0, 0, 0, 1, 0.5, 1}, {0, 0.5, 0.5, 1, 1, 1}}, classPartial},
		{"fence post 1.5 high", []box{{0.375, 0, 0.375, 0.625, 1.5, 0.625}}, classPartial},
		{"fence with a full floor under its post", []box{{0, 0, 0, 1, 1, 1}, {0.375, 0, 0.375, 0.625, 1.5, 0.625}}, classPartial},
		{"inset box (chest, honey)", []box{{0.0625, 0, 0.0625, 0.9375, 0.875, 0.9375}}, classPartial},
		{"two half boxes cover the top", []box{{0, 0, 0, 0.5, 0.5, 1}, {0.5, 0, 0, 1, 0.5, 1}}, 8},
		{"two half boxes at different heights", []box{{0, 0, 0, 0.5, 0.5, 1}, {0.5, 0, 0, 1, 0.4375, 1}}, classPartial},
		{"lower full box does not cover the top", []box{{0, 0, 0, 1, 0.5, 1}, {0, 0, 0, 0.5, 0.75, 1}}, classPartial},
		{"fractional top (lily pad)", []box{{0, 0, 0, 1, 0.09375, 1}}, classPartial},
		{"off-grid edge rounds inward", []box{{0.03125, 0, 0, 1, 0.5, 1}}, classPartial},
		{"sticks out sideways", []box{{-0.25, 0, 0, 1, 1, 1}}, 16},
		{"zero height", []box{{0, 0, 0, 1, 0, 1}}, classPartial},
		{"hole in a full cube", []box{{0, 0, 0, 1, 1, 0.5}, {0, 0, 0.5, 1, 0.9375, 1}}, classPartial},
	}
	for _, tt := range tests {
		if got := classify(tt.boxes); got != tt.want {
			t.Errorf("%s: classify = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestSelectAndGroupVersions(t *testing.T) {
	f, err := readTarball(buildTarball(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := selectVersions(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.name)
	}
	// 1.7 is too old, 15w40b and 1.12-pre4 are no releases, 1.14.1 has no
	// shapes and 1.14.5 is marked a snapshot.
	if want := []string{"1.8", "1.8.9", "1.12", "1.13", "1.13.1", "1.14"}; !slices.Equal(names, want) {
		t.Fatalf("versions %v, want %v", names, want)
	}
	var groups [][]string
	for _, g := range groupVersions(vs) {
		var gs []string
		for _, v := range g.versions {
			gs = append(gs, v.name)
		}
		groups = append(groups, gs)
	}
	want := [][]string{{"1.8", "1.8.9"}, {"1.12"}, {"1.13", "1.13.1"}, {"1.14"}}
	if !slices.EqualFunc(groups, want, slices.Equal) {
		t.Fatalf("groups %v, want %v", groups, want)
	}
	if g := groupVersions(vs); !g[1].legacy() || g[2].legacy() {
		t.Error("1.12 must be legacy and 1.13 modern")
	}
}

func TestVersionOrder(t *testing.T) {
	for _, c := range [][2]string{{"1.8", "1.9"}, {"1.9", "1.10"}, {"1.13", "1.13.1"}, {"1.21.11", "26.1"}} {
		if !less(c[0], c[1]) || less(c[1], c[0]) {
			t.Errorf("want %s < %s", c[0], c[1])
		}
	}
}

func TestStateIndexing(t *testing.T) {
	f, err := readTarball(buildTarball(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := f.dataFile("pc/1.13", "blocks.json")
	shapes, _ := f.dataFile("pc/1.13", "blockCollisionShapes.json")
	bs, err := loadModern(blocks, shapes)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]modernBlock{}
	for _, b := range bs {
		byName[b.name] = b
	}
	slab := byName["oak_slab"]
	// type=top,bottom,double x waterlogged=true,false.
	if want := []byte{16, 16, 8, 8, classFull, classFull}; !bytes.Equal(slab.classes, want) {
		t.Errorf("oak_slab classes %v, want %v", slab.classes, want)
	}
	if slab.def != 3 {
		t.Errorf("oak_slab default %d, want 3 (type=bottom,waterlogged=false)", slab.def)
	}
	if len(slab.props) != 2 || !slices.Equal(slab.props[1].values, []string{"true", "false"}) {
		t.Errorf("oak_slab properties %+v", slab.props)
	}
	farm := byName["farmland"]
	if !slices.Equal(farm.props[0].values, []string{"0", "1", "2"}) {
		t.Errorf("an int without values must count from 0: %v", farm.props[0].values)
	}
	if !bytes.Equal(farm.classes, []byte{15}) {
		t.Errorf("farmland classes %v, want one Floor(15) for all states", farm.classes)
	}
	if snow := byName["snow"]; !bytes.Equal(snow.classes, []byte{classEmpty, 2}) {
		t.Errorf("snow classes %v", snow.classes)
	}
	if w := byName["water"]; !bytes.Equal(w.classes, []byte{classEmpty}) {
		t.Errorf("water must be Empty whatever its shape, got %v", w.classes)
	}
}

func TestLoadModernRejectsInconsistentData(t *testing.T) {
	shapes := []byte(`{"blocks": {"a": [0, 1, 0]}, "shapes": {"0": [], "1": [[0,0,0,1,1,1]]}}`)
	for _, blocks := range []string{
		`[{"name": "a", "minStateId": 0, "maxStateId": 1, "defaultState": 0, "states": [{"name": "p", "type": "bool", "num_values": 2}]}]`,
		`[{"name": "a", "minStateId": 0, "maxStateId": 2, "defaultState": 7, "states": [{"name": "p", "type": "int", "num_values": 3}]}]`,
		`[{"name": "a", "minStateId": 0, "maxStateId": 2, "defaultState": 0, "states": [{"name": "p", "type": "enum", "num_values": 3, "values": ["x", "y"]}]}]`,
		`[{"name": "a b", "minStateId": 0, "maxStateId": 0, "defaultState": 0, "states": []}]`,
		`[{"name": "b", "minStateId": 0, "maxStateId": 0, "defaultState": 0, "states": []}]`,
	} {
		if _, err := loadModern([]byte(blocks), shapes); err == nil {
			t.Errorf("loadModern accepted %s", blocks)
		}
	}
}

func TestGenerate(t *testing.T) {
	tgz := buildTarball(t, nil)
	pkg := testPackage(tgz)
	src, notice, err := generate(tgz, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "tables_gen.go", src, parser.AllErrors); err != nil {
		t.Fatalf("generated source does not parse: %v", err)
	}
	s := string(src)
	for _, want := range []string{
		"// Code generated by blockdata/internal/gen from minecraft-data 0.0.0-test; DO NOT EDIT.\n",
		`name: "1.8", versions: []string{"1.8", "1.8.9"}, lo: 10, hi: 40, modern: &modernSets[0], legacy: &legacySets[0]}`,
		`name: "1.12", versions: []string{"1.12"}, lo: 40, hi: 50, modern: &modernSets[0], legacy: &legacySets[1]}`,
		`name: "1.13", versions: []string{"1.13", "1.13.1"}, lo: 50, hi: 60, modern: &modernSets[0], legacy: &legacySets[1]}`,
		`name: "1.14", versions: []string{"1.14"}, lo: 60, hi: math.MaxInt32, modern: &modernSets[1], legacy: &legacySets[1]}`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("generated source lacks %q", want)
		}
	}
	n := string(notice)
	for _, want := range []string{pkg.URL, pkg.Integrity, "Copyright (c) Test Author <author@example.com>",
		"| 1.8 | 1.8, 1.8.9 | 10–39 |", "| 1.14 | 1.14 | 60– |", "Permission is hereby granted"} {
		if !strings.Contains(n, want) {
			t.Errorf("notice lacks %q", want)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	tgz := buildTarball(t, nil)
	src, notice, err := generate(tgz, testPackage(tgz))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		// Map iteration order differs from run to run; the output must not.
		src2, notice2, err := generate(tgz, testPackage(tgz))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(src, src2) || !bytes.Equal(notice, notice2) {
			t.Fatal("same input gave different output")
		}
	}
}

func TestGenerateCopyrightFromLicense(t *testing.T) {
	tgz := buildTarball(t, map[string]string{"LICENSE": "MIT License\n\nCopyright (c) 2015 Someone Else\n\nPermission ...\n"})
	_, notice, err := generate(tgz, testPackage(tgz))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(notice), "Copyright (c) 2015 Someone Else\n") || strings.Contains(string(notice), "Test Author") {
		t.Errorf("the copyright line must come from LICENSE:\n%s", notice)
	}
}

func TestIntegrity(t *testing.T) {
	tgz := buildTarball(t, nil)
	pkg := testPackage(tgz)
	bad := pkg
	bad.Integrity = integrityOf([]byte("something else"))
	if _, _, err := generate(tgz, bad); err == nil || !strings.Contains(err.Error(), "integrity mismatch") {
		t.Errorf("mismatched integrity: err = %v", err)
	}
	tampered := bytes.Clone(tgz)
	tampered[len(tampered)/2] ^= 1
	if _, _, err := generate(tampered, pkg); err == nil {
		t.Error("a tampered tarball was accepted")
	}
	if err := verify(tgz, "sha1-"+base64.StdEncoding.EncodeToString(make([]byte, 20))); err == nil {
		t.Error("a sha1 integrity was accepted")
	}
	other := pkg
	other.Version = "9.9.9"
	if _, _, err := generate(tgz, other); err == nil {
		t.Error("a tarball of another version was accepted")
	}
}

func TestReadTarballRejectsGarbage(t *testing.T) {
	if _, err := readTarball([]byte("not a tarball")); err == nil {
		t.Error("garbage accepted")
	}
}

// TestCommittedTablesMatch regenerates the package's tables from the real
// tarball and compares them byte for byte with the committed files.
func TestCommittedTablesMatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: regenerating from the real tarball reads 27 MB of data")
	}
	tgzPath := os.Getenv("RTP_MINECRAFT_DATA_TGZ")
	if tgzPath == "" {
		if dir := defaultCache(); dir != "" {
			tgzPath = filepath.Join(dir, cacheName())
		}
	}
	tgz, err := os.ReadFile(tgzPath)
	if err != nil {
		t.Skipf("no %s tarball to regenerate from (%v): set RTP_MINECRAFT_DATA_TGZ to a copy of %s, or run go generate once to fill the download cache",
			cacheName(), err, pinned.URL)
	}
	src, notice, err := generate(tgz, pinned)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"tables_gen.go": src, "DATA.md": notice} {
		got, err := os.ReadFile(path.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("committed %s differs from the generator's output: run go generate ./world/blockdata/", name)
		}
	}
	if len(src) > 2<<20 {
		t.Errorf("generated file is %d bytes, want well under 2 MB", len(src))
	}
}
