package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// alphabet encodes numbers and shape classes as characters that need no
// escaping in a Go string literal. A number is written least significant
// first in 5-bit digits; a digit with more to follow is offset by 32.
// A shape class c is the single character alphabet[c].
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"

func putNum(b *strings.Builder, n int) {
	if n < 0 {
		panic("gen: negative number in the encoding")
	}
	for n >= 32 {
		b.WriteByte(alphabet[32|n&31])
		n >>= 5
	}
	b.WriteByte(alphabet[n])
}

// Package identifies the data set the tables come from.
type Package struct {
	Name      string
	Version   string
	URL       string
	Integrity string
}

// table is one generated table.
type table struct {
	g      group
	lo, hi int64
	modern int // index into the modern sets
	legacy int // index into the legacy sets
}

// encoder builds the deduplicated pools of the generated file.
type encoder struct {
	names     []string
	nameIdx   map[string]int
	propDefs  []string
	propIdx   map[string]int
	pool      strings.Builder
	records   strings.Builder
	nrecords  int
	recordIdx map[string]int
	modern    []string
	modernIdx map[string]int
	legacy    []string
	legacyIdx map[string]int
}

func newEncoder() *encoder {
	return &encoder{
		nameIdx: map[string]int{}, propIdx: map[string]int{}, recordIdx: map[string]int{},
		modernIdx: map[string]int{}, legacyIdx: map[string]int{},
	}
}

func (e *encoder) name(s string) int {
	if i, ok := e.nameIdx[s]; ok {
		return i
	}
	e.nameIdx[s] = len(e.names)
	e.names = append(e.names, s)
	return len(e.names) - 1
}

// props returns 0 for no properties, else 1 + the definition's index.
func (e *encoder) props(ps []prop) int {
	if len(ps) == 0 {
		return 0
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.name + "=" + strings.Join(p.values, "|")
	}
	def := strings.Join(parts, ",")
	if i, ok := e.propIdx[def]; ok {
		return i + 1
	}
	e.propIdx[def] = len(e.propDefs)
	e.propDefs = append(e.propDefs, def)
	return len(e.propDefs)
}

// classes places a class run in the shape pool, reusing an equal run
// already there, and returns its offset.
func (e *encoder) classes(cs []byte) int {
	s := make([]byte, len(cs))
	for i, c := range cs {
		s[i] = alphabet[c]
	}
	if i := strings.Index(e.pool.String(), string(s)); i >= 0 {
		return i
	}
	off := e.pool.Len()
	e.pool.Write(s)
	return off
}

func (e *encoder) record(b modernBlock) int {
	var r strings.Builder
	putNum(&r, e.name(b.name))
	putNum(&r, e.props(b.props))
	putNum(&r, b.def)
	putNum(&r, e.classes(b.classes))
	putNum(&r, len(b.classes))
	key := r.String()
	if i, ok := e.recordIdx[key]; ok {
		return i
	}
	e.recordIdx[key] = e.nrecords
	e.records.WriteString(key)
	e.nrecords++
	return e.nrecords - 1
}

func (e *encoder) modernSet(bs []modernBlock) int {
	var s strings.Builder
	for _, b := range bs {
		putNum(&s, e.record(b))
	}
	key := s.String()
	if i, ok := e.modernIdx[key]; ok {
		return i
	}
	e.modernIdx[key] = len(e.modern)
	e.modern = append(e.modern, key)
	return len(e.modern) - 1
}

func (e *encoder) legacySet(bs []legacyBlock) int {
	var s strings.Builder
	for _, b := range bs {
		putNum(&s, b.id)
		putNum(&s, e.name(b.name))
		putNum(&s, e.classes(b.classes))
		putNum(&s, len(b.classes))
	}
	key := s.String()
	if i, ok := e.legacyIdx[key]; ok {
		return i
	}
	e.legacyIdx[key] = len(e.legacy)
	e.legacy = append(e.legacy, key)
	return len(e.legacy) - 1
}

// generate turns a verified tarball into the generated Go file and the
// notice file.
func generate(tgz []byte, pkg Package) (src, notice []byte, err error) {
	if err := verify(tgz, pkg.Integrity); err != nil {
		return nil, nil, err
	}
	f, err := readTarball(tgz)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPackage(f, pkg); err != nil {
		return nil, nil, err
	}
	vs, err := selectVersions(f)
	if err != nil {
		return nil, nil, err
	}
	groups := groupVersions(vs)
	e := newEncoder()
	tables := make([]table, len(groups))
	firstModern, lastLegacy := -1, -1
	for i, g := range groups {
		tables[i] = table{g: g, lo: int64(g.first().dataVersion), hi: math.MaxInt32, modern: -1, legacy: -1}
		if i+1 < len(groups) {
			tables[i].hi = int64(groups[i+1].first().dataVersion)
		}
		v := g.first()
		blocks, err := f.dataFile(v.blocks, "blocks.json")
		if err != nil {
			return nil, nil, err
		}
		shapes, err := f.dataFile(v.shapes, "blockCollisionShapes.json")
		if err != nil {
			return nil, nil, err
		}
		if g.legacy() {
			bs, err := loadLegacy(blocks, shapes)
			if err != nil {
				return nil, nil, fmt.Errorf("%w (data of %s)", err, v.name)
			}
			tables[i].legacy = e.legacySet(bs)
			lastLegacy = i
			continue
		}
		bs, err := loadModern(blocks, shapes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (data of %s)", err, v.name)
		}
		tables[i].modern = e.modernSet(bs)
		if firstModern < 0 {
			firstModern = i
		}
	}
	if firstModern < 0 || lastLegacy < 0 {
		return nil, nil, fmt.Errorf("gen: the data needs both pre-1.13 and 1.13+ releases")
	}
	for i := range tables {
		if tables[i].modern < 0 {
			tables[i].modern = tables[firstModern].modern
		}
		if tables[i].legacy < 0 {
			tables[i].legacy = tables[lastLegacy].legacy
		}
	}
	src, err = e.goSource(pkg, tables, groups[firstModern].first().name, groups[lastLegacy].first().name)
	if err != nil {
		return nil, nil, err
	}
	notice, err = noticeFile(f, pkg, tables, groups[firstModern].first().name, groups[lastLegacy].first().name)
	if err != nil {
		return nil, nil, err
	}
	return src, notice, nil
}

// checkPackage makes sure the tarball is the package the generator pins.
func checkPackage(f files, pkg Package) error {
	var meta struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	raw, ok := f["package.json"]
	if !ok {
		return fmt.Errorf("gen: package.json missing from the tarball")
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("gen: package.json: %w", err)
	}
	if meta.Name != pkg.Name || meta.Version != pkg.Version {
		return fmt.Errorf("gen: tarball holds %s@%s, want %s@%s", meta.Name, meta.Version, pkg.Name, pkg.Version)
	}
	return nil
}

func (e *encoder) goSource(pkg Package, tables []table, firstModern, lastLegacy string) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by blockdata/internal/gen from %s %s; DO NOT EDIT.\n\n", pkg.Name, pkg.Version)
	p("package blockdata\n\n")
	p("// Data set the tables are generated from (see DATA.md).\n")
	p("const (\n\tdataSetName = %q\n\tdataSetVersion = %q\n\tdataSetIntegrity = %q\n)\n\n", pkg.Name, pkg.Version, pkg.Integrity)
	p("// Shape values the generator wrote; the package checks them against its own.\n")
	p("const (\n\tgenFull = %d\n\tgenPartial = %d\n)\n\n", classFull, classPartial)
	p("// blockNames lists every block name, space separated.\n")
	p("const blockNames = %q\n\n", strings.Join(e.names, " "))
	p("// propDefs lists the distinct property lists (key=value|value,...), space separated.\n")
	p("const propDefs = %q\n\n", strings.Join(e.propDefs, " "))
	p("// shapePool holds the per-state shape runs the records point into.\n")
	p("const shapePool = %q\n\n", e.pool.String())
	p("// records holds %d modern blocks: name, property list (0 none, else 1+index),\n", e.nrecords)
	p("// default state, shape offset, shape count.\n")
	p("const records = %q\n\n", e.records.String())
	p("// modernSets are the 1.13+ data sets as lists of record indices.\n")
	p("var modernSets = [...]modernSet{\n")
	for _, s := range e.modern {
		p("\t{src: %q},\n", s)
	}
	p("}\n\n")
	p("// legacySets are the pre-1.13 data sets: id, name, shape offset, shape count.\n")
	p("var legacySets = [...]legacySet{\n")
	for _, s := range e.legacy {
		p("\t{src: %q},\n", s)
	}
	p("}\n\n")
	p("// tables are oldest first. Pre-1.13 tables answer block states from the\n")
	p("// %s data; 1.13+ tables answer numeric ids from the %s data.\n", firstModern, lastLegacy)
	p("var tables = [...]Table{\n")
	for i, t := range tables {
		names := make([]string, len(t.g.versions))
		for j, v := range t.g.versions {
			names[j] = strconv.Quote(v.name)
		}
		hi := strconv.FormatInt(t.hi, 10)
		if t.hi == math.MaxInt32 {
			hi = "math.MaxInt32"
		}
		p("\t{index: %d, name: %q, versions: []string{%s}, lo: %d, hi: %s, modern: &modernSets[%d], legacy: &legacySets[%d]},\n",
			i, t.g.first().name, strings.Join(names, ", "), t.lo, hi, t.modern, t.legacy)
	}
	p("}\n")
	src := b.Bytes()
	if bytes.Contains(src, []byte("math.MaxInt32")) {
		src = bytes.Replace(src, []byte("package blockdata\n\n"), []byte("package blockdata\n\nimport \"math\"\n\n"), 1)
	}
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("gen: formatting the generated file: %w", err)
	}
	return out, nil
}

// copyrightLine matches a copyright notice in a licence file.
var copyrightLine = regexp.MustCompile(`(?im)^\s*(copyright\b.*)$`)

// fromPackageJSON marks a copyright line built from package.json.
const fromPackageJSON = "package.json"

// copyright returns the data's copyright line: from the package's LICENSE
// file when the tarball has one, else built from package.json.
func copyright(f files) (line, from string, err error) {
	for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt"} {
		if raw, ok := f[name]; ok {
			if m := copyrightLine.FindSubmatch(raw); m != nil {
				return strings.TrimSpace(string(m[1])), name, nil
			}
		}
	}
	var meta struct {
		Author  json.RawMessage `json:"author"`
		License string          `json:"license"`
	}
	if err := json.Unmarshal(f["package.json"], &meta); err != nil {
		return "", "", fmt.Errorf("gen: package.json: %w", err)
	}
	if meta.License != "MIT" {
		return "", "", fmt.Errorf("gen: package.json: licence %q, want MIT", meta.License)
	}
	var author string
	if err := json.Unmarshal(meta.Author, &author); err != nil {
		var obj struct {
			Name  string `json:"name"`
			Email string `json:"email"`
		}
		if err := json.Unmarshal(meta.Author, &obj); err != nil || obj.Name == "" {
			return "", "", fmt.Errorf("gen: package.json: no author to credit")
		}
		author = obj.Name
		if obj.Email != "" {
			author += " <" + obj.Email + ">"
		}
	}
	if author == "" {
		return "", "", fmt.Errorf("gen: package.json: no author to credit")
	}
	return "Copyright (c) " + author, fromPackageJSON, nil
}

// mitText is the MIT licence's permission notice and disclaimer.
const mitText = `Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

func noticeFile(f files, pkg Package, tables []table, firstModern, lastLegacy string) ([]byte, error) {
	line, from, err := copyright(f)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("<!-- Code generated by blockdata/internal/gen; DO NOT EDIT. -->\n\n")
	p("# Block collision data\n\n")
	p("`tables_gen.go` is generated from the collision shapes and block states of\n")
	p("the npm package `%s`, reduced to one shape class per block state.\n\n", pkg.Name)
	p("| | |\n|---|---|\n")
	p("| Data set | `%s` %s |\n", pkg.Name, pkg.Version)
	p("| Tarball | %s |\n", pkg.URL)
	p("| Integrity | `%s` |\n", pkg.Integrity)
	p("| Licence | MIT |\n\n")
	p("## Tables\n\n")
	p("Each table covers the DataVersions from its first release's up to the next\n")
	p("table's (the newest: all above). Pre-1.13 tables answer block states from the\n")
	p("%s data; 1.13+ tables answer numeric ids from the %s data.\n\n", firstModern, lastLegacy)
	p("| Table | Releases | DataVersions | blocks.json | blockCollisionShapes.json |\n")
	p("|---|---|---|---|---|\n")
	for _, t := range tables {
		names := make([]string, len(t.g.versions))
		for j, v := range t.g.versions {
			names[j] = v.name
		}
		hi := strconv.FormatInt(t.hi-1, 10)
		if t.hi == math.MaxInt32 {
			hi = ""
		}
		v := t.g.first()
		p("| %s | %s | %d–%s | `%s` | `%s` |\n", v.name, strings.Join(names, ", "), t.lo, hi, v.blocks, v.shapes)
	}
	p("\n## Licence of the data\n\n")
	p("The data is used under the MIT licence. ")
	if from == fromPackageJSON {
		p("The tarball has no licence file of its\nown; the copyright line below credits the author named in its package.json.\n\n")
	} else {
		p("The copyright line below is taken from\nthe tarball's %s file.\n\n", from)
	}
	p("```\nMIT License\n\n%s\n\n%s```\n", line, mitText)
	return b.Bytes(), nil
}
