// Package layers holds the module's layering to its word: it reads the
// layer table of docs/design.md (Parse) and checks an import graph against
// it (Check). Its test runs the check on the module itself, from `go list`,
// so that a package reaching up a layer, or a package the table does not
// place, fails the build's tests.
//
// # The rule
//
// The table lists the layers bottom up, each with its packages. A package
// belongs to the layer that lists it or, when it is not listed, to the
// layer of the nearest listed directory above it (terrain/archive/pgstore
// is in the layer of terrain/archive). The shared helpers under the
// module's internal/ directory belong to no layer: any package may import
// them, and what a helper imports counts as imported by the package that
// imports the helper. Every other package must belong to a layer.
//
// A package below the top layer (the surface) may import, directly or
// through helpers, only packages of its own layer or of a layer listed
// before it. The surface may import anything. Only the imports of a
// package's own files count, not those of its tests: a test may drive its
// package through a higher layer (the engine's tests build their Spec
// with package config), and a test binary is linked into nothing.
package layers

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Table is the layer table: its layers, bottom up. The zero value is an
// empty table.
type Table struct {
	Layers []Layer
}

// Layer is one row of the table.
type Layer struct {
	Name string
	// Packages are the packages the row lists, as paths relative to the
	// module's root ("terrain/archive").
	Packages []string
}

// header is the header row of the layer table, spaces aside.
const header = "|layer|packages|"

// packageName matches a backquoted token that names a package: a path of
// lower-case words (letters, digits, '-', '_', '.'). Other backquoted
// tokens in a row (`ShapeSpec`) are prose.
var packageName = regexp.MustCompile("`([a-z][a-z0-9_.-]*(?:/[a-z][a-z0-9_.-]*)*)`")

// Parse reads the layer table from a Markdown document: the first table
// whose header row is "| layer | packages |". Each row names its layer in
// its first cell and lists its packages in the second, each in backquotes
// (`terrain/archive`). It fails when there is no such table, when a row
// lists no package or repeats a layer, or when a package is listed twice.
func Parse(r io.Reader) (Table, error) {
	sc := bufio.NewScanner(r)
	var t Table
	in, seen := false, map[string]string{}
	var errs []error
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !in {
			if strings.EqualFold(strings.ReplaceAll(line, " ", ""), header) {
				in = true
				if !sc.Scan() || !strings.HasPrefix(strings.TrimSpace(sc.Text()), "|-") {
					return Table{}, errors.New("layers: the layer table has no separator row")
				}
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			errs = append(errs, fmt.Errorf("layers: row %q has no packages cell", line))
			continue
		}
		l := Layer{Name: strings.TrimSpace(cells[0])}
		for _, m := range packageName.FindAllStringSubmatch(strings.Join(cells[1:], "|"), -1) {
			p := m[1]
			if other, dup := seen[p]; dup {
				errs = append(errs, fmt.Errorf("layers: package %s listed in layer %s and in layer %s", p, other, l.Name))
				continue
			}
			seen[p] = l.Name
			l.Packages = append(l.Packages, p)
		}
		switch {
		case l.Name == "":
			errs = append(errs, fmt.Errorf("layers: row %q names no layer", line))
		case len(l.Packages) == 0:
			errs = append(errs, fmt.Errorf("layers: layer %s lists no package", l.Name))
		case slices.ContainsFunc(t.Layers, func(o Layer) bool { return o.Name == l.Name }):
			errs = append(errs, fmt.Errorf("layers: layer %s listed twice", l.Name))
		}
		t.Layers = append(t.Layers, l)
	}
	if err := sc.Err(); err != nil {
		return Table{}, fmt.Errorf("layers: %w", err)
	}
	if !in {
		return Table{}, errors.New("layers: no layer table (a header row \"| layer | packages |\")")
	}
	if len(t.Layers) == 0 {
		errs = append(errs, errors.New("layers: the layer table has no rows"))
	}
	if err := errors.Join(errs...); err != nil {
		return Table{}, err
	}
	return t, nil
}

// Helper reports whether pkg is a shared helper: the module's internal
// directory or a package under it.
func Helper(pkg string) bool {
	return pkg == "internal" || strings.HasPrefix(pkg, "internal/")
}

// Of returns the index in t.Layers of the layer pkg belongs to: the row
// listing pkg, else the row listing its nearest parent directory. It
// reports false for a shared helper (see Helper) and for a package no row
// covers.
func (t Table) Of(pkg string) (int, bool) {
	if Helper(pkg) {
		return 0, false
	}
	for p := pkg; ; {
		for i, l := range t.Layers {
			if slices.Contains(l.Packages, p) {
				return i, true
			}
		}
		j := strings.LastIndexByte(p, '/')
		if j < 0 {
			return 0, false
		}
		p = p[:j]
	}
}

// Package is one package of the module and the module packages its own
// files import, as paths relative to the module's root.
type Package struct {
	Path    string
	Imports []string
}

// Check checks pkgs, every package of the module, against t. It returns
// one error per problem, sorted: a package t lists that pkgs lack, a
// package (not a helper) no row covers, and a package below the top layer
// that reaches a package of a higher layer, with the import path that
// reaches it ("engine -> webmap", or through helpers "geom ->
// internal/x -> world"). A package outside pkgs that a package imports is
// ignored (it is not the module's).
func Check(t Table, pkgs []Package) []error {
	byPath := make(map[string]Package, len(pkgs))
	for _, p := range pkgs {
		byPath[p.Path] = p
	}
	var problems []string
	for _, l := range t.Layers {
		for _, p := range l.Packages {
			if _, ok := byPath[p]; !ok {
				problems = append(problems, fmt.Sprintf("layers: %s (layer %s) is not a package of the module", p, l.Name))
			}
		}
	}
	top := len(t.Layers) - 1
	for _, p := range pkgs {
		li, ok := t.Of(p.Path)
		switch {
		case Helper(p.Path):
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("layers: %s is in no layer: list it in the layer table", p.Path))
			continue
		case li == top:
			continue
		}
		for _, path := range reach(byPath, p) {
			to := path[len(path)-1]
			if lj, ok := t.Of(to); ok && lj > li {
				problems = append(problems, fmt.Sprintf("layers: %s (layer %s) imports %s (layer %s): %s",
					p.Path, t.Layers[li].Name, to, t.Layers[lj].Name, strings.Join(path, " -> ")))
			}
		}
	}
	slices.Sort(problems)
	errs := make([]error, len(problems))
	for i, s := range problems {
		errs[i] = errors.New(s)
	}
	return errs
}

// reach returns, for each module package that p imports directly or
// through helpers, the shortest import path from p to it, in the order
// found (breadth first, each package's imports in the order given).
// Helpers on the way are part of the paths; the packages past a package
// that is not a helper are not followed.
func reach(byPath map[string]Package, p Package) [][]string {
	var out [][]string
	seen := map[string]bool{p.Path: true}
	queue := [][]string{{p.Path}}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		for _, imp := range byPath[path[len(path)-1]].Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if _, ok := byPath[imp]; !ok {
				continue
			}
			next := append(slices.Clip(path), imp)
			out = append(out, next)
			if Helper(imp) {
				queue = append(queue, next)
			}
		}
	}
	return out
}
