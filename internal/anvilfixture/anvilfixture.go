// Package anvilfixture finds the real Minecraft Java Edition region files
// that tests read: files saved by real game servers, which nobody on this
// project wrote, named by their path in the fixture set, such as
// "prismarine-provider-anvil/1.16/r.0.-1.mca" or "NBT/root/r.0.0.mca".
//
// A fixture is looked up, in order:
//
//  1. under $RTP_ANVIL_FIXTURES, when it is set (and nowhere else then): a
//     folder laid out as the fixture set, prismarine-provider-anvil/<game
//     version>/r.X.Z.mca and NBT/<name>/r.X.Z.mca;
//  2. for the prismarine-provider-anvil files, in the npm package of that
//     name, which `npm ci` installs in this package's testdata folder
//     (pinned by its package-lock.json; the package ships the files as
//     test/fixtures/<game version>/r.X.Z.mca);
//  3. in shared/fixtures/anvil beside the module's root folder, where a
//     workspace holding several checkouts keeps the whole set.
//
// A test whose fixture is found nowhere is skipped, and the message names
// the variable to set. The NBT files come only from the first and the
// third place. The package is for tests.
package anvilfixture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Env names the environment variable that points at the fixture set.
const Env = "RTP_ANVIL_FIXTURES"

// prismarine is the folder of the fixture set that holds the files the npm
// package prismarine-provider-anvil ships, and that package's name.
const prismarine = "prismarine-provider-anvil"

// npmPackage is the folder, relative to the module's root, where `npm ci`
// installs the pinned prismarine-provider-anvil package.
var npmPackage = filepath.Join("internal", "anvilfixture", "testdata")

// npmFixtures is where that package keeps its region files, relative to
// the module's root.
var npmFixtures = filepath.Join(npmPackage, "node_modules", prismarine, "test", "fixtures")

// Path returns the absolute path of the fixture file or folder rel (a
// slash-separated path in the fixture set), and skips tb when it is found
// nowhere.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	p, err := Lookup(rel)
	if err != nil {
		tb.Skip(err)
	}
	return p
}

// Lookup returns the absolute path of the fixture file or folder rel, or an
// error naming the places it looked in and the variable to set.
func Lookup(rel string) (string, error) {
	return places(os.Getenv(Env)).lookup(rel)
}

// Save is one folder of region files in the fixture set.
type Save struct {
	Name string // its slash-separated path in the set, such as "NBT/root"
	Dir  string // its absolute path
}

// Saves returns every folder of region files the fixture set holds (such
// as "prismarine-provider-anvil/1.16"), sorted by name, each from the first
// place that has it. It skips tb when there is none, and logs when the NBT
// saves are missing.
func Saves(tb testing.TB) []Save {
	tb.Helper()
	p := places(os.Getenv(Env))
	saves := p.saves()
	if len(saves) == 0 {
		tb.Skipf("no anvil fixtures in %s: set %s to the fixture set's folder, or run `npm ci` in %s",
			strings.Join(p.where(), ", "), Env, npmPackage)
	}
	if !slices.ContainsFunc(saves, func(s Save) bool { return strings.HasPrefix(s.Name, "NBT/") }) {
		tb.Logf("the NBT fixture saves are absent: set %s to the fixture set's folder to test them too", Env)
	}
	return saves
}

// placeSet is where fixtures are looked for: the set's folder given by the
// variable, or the npm package's fixtures and the workspace's set.
type placeSet struct {
	env       string // $RTP_ANVIL_FIXTURES, or ""
	npm       string // the npm package's test/fixtures folder, or ""
	workspace string // shared/fixtures/anvil beside the module, or ""
	err       error  // why the module's root is unknown
}

// places returns the places for the variable's value env, finding the
// module's root from the working directory when env is empty.
func places(env string) placeSet {
	if env != "" {
		return placeSet{env: env}
	}
	root, err := moduleRoot()
	if err != nil {
		return placeSet{err: err}
	}
	return placesIn(root)
}

// placesIn returns the default places for a module whose root is root.
func placesIn(root string) placeSet {
	return placeSet{
		npm:       filepath.Join(root, npmFixtures),
		workspace: filepath.Join(filepath.Dir(root), "shared", "fixtures", "anvil"),
	}
}

// candidates lists where rel may be, in lookup order.
func (p placeSet) candidates(rel string) []string {
	native := filepath.FromSlash(rel)
	if p.env != "" {
		return []string{filepath.Join(p.env, native)}
	}
	var out []string
	if rest, ok := strings.CutPrefix(rel, prismarine+"/"); ok && p.npm != "" {
		out = append(out, filepath.Join(p.npm, filepath.FromSlash(rest)))
	} else if rel == prismarine && p.npm != "" {
		out = append(out, p.npm)
	}
	if p.workspace != "" {
		out = append(out, filepath.Join(p.workspace, native))
	}
	return out
}

func (p placeSet) lookup(rel string) (string, error) {
	tried := p.candidates(rel)
	for _, c := range tried {
		if _, err := os.Stat(c); err == nil {
			return filepath.Abs(c)
		}
	}
	if p.err != nil {
		return "", fmt.Errorf("anvil fixture %s: %w; set %s to the fixture set's folder", rel, p.err, Env)
	}
	hint := ""
	if p.env == "" && (rel == prismarine || strings.HasPrefix(rel, prismarine+"/")) {
		hint = ", or run `npm ci` in " + npmPackage
	}
	return "", fmt.Errorf("anvil fixture %s absent (looked at %s): set %s to the fixture set's folder%s",
		rel, strings.Join(tried, ", "), Env, hint)
}

// where lists the folders the places stand for.
func (p placeSet) where() []string {
	var out []string
	for _, d := range []string{p.env, p.npm, p.workspace} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// saves lists the folders of region files found in the places.
func (p placeSet) saves() []Save {
	// Each base holds saves as base.dir/<save>/r.X.Z.mca, named
	// base.prefix+<save> in the fixture set.
	type base struct{ dir, prefix string }
	var bases []base
	for _, set := range []string{p.env, p.npm, p.workspace} {
		if set == "" {
			continue
		}
		if set == p.npm {
			bases = append(bases, base{set, prismarine + "/"})
			continue
		}
		groups, _ := os.ReadDir(set)
		for _, g := range groups {
			if g.IsDir() {
				bases = append(bases, base{filepath.Join(set, g.Name()), g.Name() + "/"})
			}
		}
	}
	var saves []Save
	seen := map[string]bool{}
	for _, b := range bases {
		files, _ := filepath.Glob(filepath.Join(b.dir, "*", "r.*.mca"))
		for _, f := range files {
			name := b.prefix + filepath.Base(filepath.Dir(f))
			if !seen[name] {
				seen[name] = true
				dir, _ := filepath.Abs(filepath.Dir(f))
				saves = append(saves, Save{Name: name, Dir: dir})
			}
		}
	}
	slices.SortFunc(saves, func(a, b Save) int { return strings.Compare(a.Name, b.Name) })
	return saves
}

// moduleRoot returns the closest folder at or above the working directory
// that holds a go.mod file (a test runs in its package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
