package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doc is a design note with a layer table of three layers.
const doc = "# Design\n\n" +
	"Some prose with `a/b` in it, not a table.\n\n" +
	"| layer | packages |\n" +
	"|---|---|\n" +
	"| math | `geom`: shapes; `ShapeSpec`, the one description |\n" +
	"| world | `world`, `world/anvil` (region files), `store` |\n" +
	"| surface | `server` (HTTP), `cmd/rtp` |\n" +
	"\nMore prose: `other`.\n"

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Table{Layers: []Layer{
		{Name: "math", Packages: []string{"geom"}},
		{Name: "world", Packages: []string{"world", "world/anvil", "store"}},
		{Name: "surface", Packages: []string{"server", "cmd/rtp"}},
	}}
	if !tablesEqual(got, want) {
		t.Errorf("Parse(doc) = %+v, want %+v", got, want)
	}
}

func tablesEqual(a, b Table) bool {
	return slices.EqualFunc(a.Layers, b.Layers, func(x, y Layer) bool {
		return x.Name == y.Name && slices.Equal(x.Packages, y.Packages)
	})
}

func TestParseErrors(t *testing.T) {
	const head = "| layer | packages |\n|---|---|\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"no table", "# Design\n\nNo table.\n", "no layer table"},
		{"no separator", "| layer | packages |\n| math | `geom` |\n", "no separator row"},
		{"no rows", head + "\nprose\n", "has no rows"},
		{"twice", head + "| math | `geom` |\n| world | `world`, `geom` |\n", "package geom listed in layer math and in layer world"},
		{"empty row", head + "| math | shapes |\n", "layer math lists no package"},
		{"layer twice", head + "| math | `geom` |\n| math | `memory` |\n", "layer math listed twice"},
		{"no layer", head + "| | `geom` |\n", "names no layer"},
		{"one cell", head + "| math |\n", "has no packages cell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %v, want an error saying %q", tc.doc, err, tc.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	table, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pkg   string
		layer int
		ok    bool
	}{
		{"geom", 0, true},
		{"world/anvil", 1, true},
		{"world/anvil/anviltest", 1, true}, // under a listed package
		{"world/procworld", 1, true},
		{"cmd/rtp/cli", 2, true},
		{"cmd", 0, false},      // above a listed package, not under one
		{"worldly", 0, false},  // a prefix of the name is not a parent
		{"internal", 0, false}, // helpers are in no layer
		{"internal/lru", 0, false},
		{"stores/sqlite", 0, false},
		{"", 0, false},
	} {
		if l, ok := table.Of(tc.pkg); l != tc.layer || ok != tc.ok {
			t.Errorf("Of(%q) = %d, %v, want %d, %v", tc.pkg, l, ok, tc.layer, tc.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	table, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	// good is a graph that keeps the rule: imports down and sideways,
	// through helpers, and anything from the surface.
	good := []Package{
		{Path: "geom", Imports: []string{"internal/lru"}},
		{Path: "world", Imports: []string{"geom", "internal/lru", "fmt"}},
		{Path: "world/anvil", Imports: []string{"world", "store", "internal/landcheck"}},
		{Path: "store"},
		{Path: "server", Imports: []string{"world", "cmd/rtp"}},
		{Path: "cmd/rtp", Imports: []string{"server", "world/anvil"}},
		{Path: "internal/lru"},
		{Path: "internal/landcheck", Imports: []string{"world/anvil", "geom"}},
	}
	with := func(edit func(ps []Package) []Package) []Package {
		ps := make([]Package, len(good))
		for i, p := range good {
			ps[i] = Package{Path: p.Path, Imports: slices.Clone(p.Imports)}
		}
		return edit(ps)
	}
	imports := func(from, to string) func([]Package) []Package {
		return func(ps []Package) []Package {
			for i := range ps {
				if ps[i].Path == from {
					ps[i].Imports = append(ps[i].Imports, to)
				}
			}
			return ps
		}
	}
	for _, tc := range []struct {
		name string
		pkgs []Package
		want []string
	}{
		{"good", good, nil},
		{"up", with(imports("world", "server")), []string{
			"layers: world (layer world) imports server (layer surface): world -> server"}},
		{"two layers up", with(imports("geom", "cmd/rtp")), []string{
			"layers: geom (layer math) imports cmd/rtp (layer surface): geom -> cmd/rtp"}},
		{"through a helper", with(imports("internal/lru", "world")), []string{
			"layers: geom (layer math) imports world (layer world): geom -> internal/lru -> world"}},
		{"through two helpers", with(imports("internal/lru", "internal/landcheck")), []string{
			"layers: geom (layer math) imports world/anvil (layer world): geom -> internal/lru -> internal/landcheck -> world/anvil"}},
		{"unplaced", with(func(ps []Package) []Package {
			return append(ps, Package{Path: "stores/sqlite"})
		}), []string{"layers: stores/sqlite is in no layer: list it in the layer table"}},
		{"unplaced importer", with(func(ps []Package) []Package {
			return append(ps, Package{Path: "tool", Imports: []string{"server"}})
		}), []string{"layers: tool is in no layer: list it in the layer table"}},
		{"listed, missing", with(func(ps []Package) []Package {
			return slices.DeleteFunc(ps, func(p Package) bool { return p.Path == "store" })
		}), []string{"layers: store (layer world) is not a package of the module"}},
		{"outside the module", with(imports("geom", "github.com/x/y")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range Check(table, tc.pkgs) {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

// goPackage is what `go list -json` says of a package, in part.
type goPackage struct {
	ImportPath string
	Imports    []string // its own files' imports, not its tests'
	Deps       []string // every package it links, transitively
}

// module lists the module's packages with `go list`, with paths relative
// to the module's root, and returns the root.
func module(t *testing.T) (root string, pkgs []goPackage) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: the check reads the import graph from go list")
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root = filepath.Dir(strings.TrimSpace(string(gomod)))
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	mod := strings.TrimSpace(string(run("list", "-m")))
	rel := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			switch {
			case p == mod:
				out = append(out, "")
			case strings.HasPrefix(p, mod+"/"):
				out = append(out, strings.TrimPrefix(p, mod+"/"))
			}
		}
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(run("list", "-json=ImportPath,Imports,Deps", "./...")))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		paths := rel([]string{p.ImportPath})
		if len(paths) == 0 {
			t.Fatalf("go list: %s is not in module %s", p.ImportPath, mod)
		}
		pkgs = append(pkgs, goPackage{ImportPath: paths[0], Imports: rel(p.Imports), Deps: rel(p.Deps)})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	watchSources(t, root)
	return root, pkgs
}

// watchSources opens every directory go list reads under root. go test
// caches a test's result by the files the test itself opens, not those a
// command it runs reads: opening the directories makes a new, removed or
// changed file (each entry's size and time) run the test again.
func watchSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestModule checks the module against the layer table of docs/design.md.
// A package the table does not place fails it: add the package to the
// row of its layer (a package under a listed one is already placed).
func TestModule(t *testing.T) {
	root, listed := module(t)
	f, err := os.Open(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := table.Layers[len(table.Layers)-1].Name; got != "surface" {
		t.Errorf("the top layer is %s, want surface", got)
	}
	pkgs := make([]Package, len(listed))
	for i, p := range listed {
		pkgs[i] = Package{Path: p.ImportPath, Imports: p.Imports}
	}
	for _, err := range Check(table, pkgs) {
		t.Error(err)
	}

	// The server takes plain options: it links no configuration file.
	for _, p := range listed {
		if p.ImportPath == "server" && slices.Contains(p.Deps, "config") {
			t.Error("server depends on config: rtp serve maps the file onto server.Options")
		}
	}

	// The check sees the breach it exists for: the engine importing the
	// web map.
	breach := slices.Clone(pkgs)
	for i := range breach {
		if breach[i].Path == "engine" {
			breach[i].Imports = append(slices.Clone(breach[i].Imports), "webmap")
		}
	}
	want := "engine -> webmap"
	if !slices.ContainsFunc(Check(table, breach), func(err error) bool { return strings.HasSuffix(err.Error(), want) }) {
		t.Errorf("Check missed %s", want)
	}
}
