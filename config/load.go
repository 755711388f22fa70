package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/lineerr"
	"github.com/rtpengine/rtp/internal/yamlnode"

	yaml "go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest config file Load accepts, in bytes.
const MaxFileSize = 1 << 20

// Limits on the work of one Load, so that no input costs more than a
// bounded time: YAML aliases can make a small file name a huge tree.
const (
	maxValues   = 1 << 18 // YAML nodes visited, aliases followed
	maxProblems = 100     // problems reported; the rest are counted
	maxKept     = 1000    // problems kept to sort by line
	maxMerge    = 8       // nesting of merge keys (<<)
)

// Load reads a config file from r; name names it in errors ("rtp.yml",
// or its path). An empty file (or one holding only comments) is Default.
//
// Sections the file leaves out keep their defaults, and a section it
// gives merges over the defaults field by field: "server: {listen:
// ':9000'}" changes the listen address and nothing else. A present worlds
// or regions map replaces the default entries, and each of its entries
// starts from DefaultWorld or DefaultRegion and merges over it in the same
// way. A present list (verifiers, a safety rule list) replaces the
// default list; each verifier starts from DefaultVerifier. A null value
// ("safety:" with nothing after it) keeps the defaults; a null scalar is
// an error.
//
// On any problem Load returns a nil Config and every problem found, as
// *LineError values joined with errors.Join, in line order (a file that
// cannot be read gives a plain error instead): size, YAML syntax,
// a second document, unknown keys, duplicate keys, values of the wrong
// kind, keys the kind in force does not use (a circle's radius_x), and
// everything Validate reports, each with the line of its key.
func Load(r io.Reader, name string) (*Config, error) {
	c, _, err := load(r, name)
	return c, err
}

// LoadFile reads the config file at path, like Load, naming path in
// errors.
func LoadFile(path string) (*Config, error) {
	c, _, err := loadFile(path)
	return c, err
}

func loadFile(path string) (*Config, *decoder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return load(f, path)
}

// load reads and validates a file; the decoder it returns knows the
// lines of the keys the file sets.
func load(r io.Reader, name string) (*Config, *decoder, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("config: reading %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, nil, &LineError{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	c := Default()
	d := &decoder{file: name, lines: map[string]int{}, failed: map[string]bool{}}
	d.document(data, c)
	if !d.syntax {
		d.report(c.problems())
		d.report(d.unused(c))
	}
	if err := d.err(); err != nil {
		return nil, d, err
	}
	return c, d, nil
}

// decoder walks a parsed YAML document over a Config holding the
// defaults, by reflection on the yaml tags of its fields, and collects
// every problem with its line.
type decoder struct {
	file    string
	errs    []*LineError
	syntax  bool            // the file did not parse
	lines   map[string]int  // key path -> line, for every key the file sets
	failed  map[string]bool // key paths whose value was not taken
	values  int             // nodes visited
	dropped int             // problems beyond maxKept, counted only
}

func (d *decoder) errorf(line int, key keyPath, format string, args ...any) {
	if len(d.errs) >= maxKept {
		d.dropped++
		return
	}
	d.errs = append(d.errs, &LineError{File: d.file, Line: line, Key: key.String(), Msg: fmt.Sprintf(format, args...)})
}

// fail reports a value that was not taken: the default stays, and
// problems that depend on key are not reported.
func (d *decoder) fail(line int, key keyPath, format string, args ...any) {
	d.errorf(line, key, format, args...)
	d.failed[key.String()] = true
}

// report adds the problems found on the decoded Config, with lines,
// leaving out those that follow from a value that was not taken.
func (d *decoder) report(ps []problem) {
	for _, p := range ps {
		if d.consequence(p) {
			continue
		}
		d.errorf(d.line(p.key), p.key, "%s", p.msg)
	}
}

func (d *decoder) consequence(p problem) bool {
	for _, k := range append([]keyPath{p.key}, p.related...) {
		for i := len(k); i > 0; i-- {
			if d.failed[k[:i].String()] {
				return true
			}
		}
	}
	return false
}

// line returns the line of key, or of the closest enclosing key the file
// sets; 0 if none.
func (d *decoder) line(key keyPath) int {
	for i := len(key); i > 0; i-- {
		if l, ok := d.lines[key[:i].String()]; ok {
			return l
		}
	}
	return 0
}

// err returns the problems in line order (those without a line last),
// at most maxProblems of them.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	lineerr.SortByLine(d.errs)
	errs := make([]error, 0, min(len(d.errs), maxProblems+1))
	seen := make(map[LineError]bool, len(d.errs))
	dups := 0
	for _, e := range d.errs {
		// A merged or aliased mapping can repeat one problem.
		if seen[*e] {
			dups++
			continue
		}
		seen[*e] = true
		if len(errs) < maxProblems {
			errs = append(errs, e)
		}
	}
	if more := len(d.errs) - dups + d.dropped - len(errs); more > 0 {
		errs = append(errs, &LineError{File: d.file, Msg: fmt.Sprintf("%d more problems not shown", more)})
	}
	return errors.Join(errs...)
}

func (d *decoder) document(data []byte, c *Config) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			d.syntaxError(err)
		}
		return
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return
		}
		root = doc.Content[0]
	}
	if n := yamlnode.Deref(root); n.Kind != yaml.MappingNode && !yamlnode.IsNull(n) {
		d.fail(n.Line, nil, "want a mapping of sections (server, data_dir, worlds, regions, ...), got %s", yamlnode.KindName(n))
	} else {
		d.value(root, reflect.ValueOf(c).Elem(), nil)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		d.fail(next.Line, nil, "more than one YAML document; a config file holds one")
	case !errors.Is(err, io.EOF):
		d.syntaxError(err)
	}
}

// syntaxError turns a YAML parser error ("yaml: line 3: ...") into a
// *LineError.
func (d *decoder) syntaxError(err error) {
	d.syntax = true
	d.errs = append(d.errs, lineerr.Syntax(d.file, err))
}

var durationType = reflect.TypeFor[time.Duration]()
var secretType = reflect.TypeFor[Secret]()

// spend counts n values read at key, and reports false (and the problem,
// once) when the file has made Load read more than maxValues.
func (d *decoder) spend(n int, line int, key keyPath) bool {
	if d.values > maxValues {
		return false
	}
	if d.values += n; d.values > maxValues {
		d.fail(line, key, "more than %d values to read (aliases expand to too much): simplify the file", maxValues)
		return false
	}
	return true
}

// value decodes n into v, the value at key.
func (d *decoder) value(n *yaml.Node, v reflect.Value, key keyPath) {
	if !d.spend(1, n.Line, key) {
		return
	}
	n = yamlnode.Deref(n)
	t := v.Type()
	switch {
	case t == durationType:
		d.scalar(n, v, key)
	case t.Kind() == reflect.Struct:
		d.structure(n, v, key)
	case t.Kind() == reflect.Map:
		d.mapping(n, v, key)
	case t.Kind() == reflect.Slice:
		d.sequence(n, v, key)
	case t.Kind() == reflect.Pointer:
		if yamlnode.IsNull(n) {
			return
		}
		p := reflect.New(t.Elem())
		if !v.IsNil() {
			p.Elem().Set(v.Elem())
		}
		d.value(n, p.Elem(), key)
		// A struct takes what it could read; a scalar that failed leaves
		// the pointer as it was.
		if !d.failed[key.String()] || t.Elem().Kind() == reflect.Struct {
			v.Set(p)
		}
	default:
		d.scalar(n, v, key)
	}
}

// field is a struct field with a YAML key.
type field struct {
	name  string
	index int
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the fields of struct type t that have a yaml tag, in
// order.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fs = append(fs, field{name: name, index: i})
	}
	fieldCache.Store(t, fs)
	return fs
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, key keyPath) {
	if yamlnode.IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, key, "want a mapping, got %s", yamlnode.KindName(n))
		return
	}
	fs := fieldsOf(v.Type())
	d.entries(n, key, nil, func(name string, k, val *yaml.Node) {
		i := slices.IndexFunc(fs, func(f field) bool { return f.name == name })
		if i < 0 {
			d.fail(k.Line, key.name(name), "unknown key%s (want %s)", didYouMean(name, fs), keyList(fs))
			return
		}
		fk := key.key(name)
		d.lines[fk.String()] = k.Line
		d.value(val, v.Field(fs[i].index), fk)
	})
}

// mapping decodes a map of named entries: it replaces the default map,
// and each entry starts from its type's default.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, key keyPath) {
	if yamlnode.IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, key, "want a mapping of names to entries, got %s", yamlnode.KindName(n))
		return
	}
	t := v.Type()
	m := reflect.MakeMap(t)
	d.entries(n, key, nil, func(name string, k, val *yaml.Node) {
		ek := key.name(name)
		d.lines[ek.String()] = k.Line
		e := reflect.New(t.Elem()).Elem()
		e.Set(entryDefault(t.Elem()))
		d.value(val, e, ek)
		m.SetMapIndex(reflect.ValueOf(name), e)
	})
	v.Set(m)
}

// sequence decodes a list: it replaces the default list.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, key keyPath) {
	if yamlnode.IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n.Line, key, "want a list, got %s", yamlnode.KindName(n))
		return
	}
	t := v.Type()
	s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
	for i, item := range n.Content {
		ik := key.index(i)
		d.lines[ik.String()] = item.Line
		e := s.Index(i)
		e.Set(entryDefault(t.Elem()))
		d.value(item, e, ik)
	}
	v.Set(s)
}

// entryDefault returns what a new map entry or list element of type t
// starts from.
func entryDefault(t reflect.Type) reflect.Value {
	switch t {
	case reflect.TypeFor[World]():
		return reflect.ValueOf(DefaultWorld())
	case reflect.TypeFor[Region]():
		return reflect.ValueOf(DefaultRegion())
	case reflect.TypeFor[Verifier]():
		return reflect.ValueOf(DefaultVerifier())
	}
	return reflect.Zero(t)
}

// entries calls fn for every entry of the mapping m whose key is a name
// seen for the first time, and reports the other entries. Merge keys
// (<<) bring in the entries of other mappings that m does not set itself;
// of several merged mappings the first that sets a key wins.
//
// stack holds the mappings whose merge keys led to m.
func (d *decoder) entries(m *yaml.Node, key keyPath, stack []*yaml.Node, fn func(name string, k, v *yaml.Node)) {
	stack = append(stack[:len(stack):len(stack)], m)
	type entry struct {
		name string
		k, v *yaml.Node
	}
	var own, merged []entry
	first := make(map[string]int, len(m.Content)/2) // name -> line
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kv := yamlnode.Deref(k)
		if kv.Kind == yaml.ScalarNode && kv.ShortTag() == "!!merge" {
			d.merge(v, key, stack, func(name string, k, v *yaml.Node) {
				merged = append(merged, entry{name, k, v})
			})
			continue
		}
		if kv.Kind != yaml.ScalarNode || yamlnode.IsNull(kv) {
			d.errorf(k.Line, key, "want a name as key, got %s", yamlnode.KindName(kv))
			continue
		}
		name := kv.Value
		if line, dup := first[name]; dup {
			d.errorf(k.Line, key.name(name), "duplicate key (first at line %d)", line)
			continue
		}
		first[name] = k.Line
		own = append(own, entry{name, k, v})
	}
	for _, e := range merged {
		if _, set := first[e.name]; !set {
			first[e.name] = e.k.Line
			own = append(own, e)
		}
	}
	for _, e := range own {
		fn(e.name, e.k, e.v)
	}
}

// merge calls fn for the entries a merge key's value brings in: one
// mapping or a list of them.
func (d *decoder) merge(v *yaml.Node, key keyPath, stack []*yaml.Node, fn func(name string, k, v *yaml.Node)) {
	v = yamlnode.Deref(v)
	if len(stack) > maxMerge {
		d.fail(v.Line, key, "merge keys (<<) nested more than %d deep", maxMerge)
		return
	}
	var maps []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{v}
	case yaml.SequenceNode:
		for _, item := range v.Content {
			maps = append(maps, yamlnode.Deref(item))
		}
	}
	if len(maps) == 0 {
		d.fail(v.Line, key, "a merge key (<<) wants a mapping or a list of mappings, got %s", yamlnode.KindName(v))
		return
	}
	for _, m := range maps {
		if !d.spend(1+len(m.Content)/2, m.Line, key) {
			return
		}
		if m.Kind != yaml.MappingNode {
			d.fail(m.Line, key, "a merge key (<<) wants a mapping or a list of mappings, got %s in the list", yamlnode.KindName(m))
			continue
		}
		if slices.Contains(stack, m) {
			d.fail(m.Line, key, "a merge key (<<) brings in a mapping that contains it")
			continue
		}
		d.entries(m, key, stack, fn)
	}
}

// scalar decodes a string, bool, integer, float or duration.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, key keyPath) {
	t := v.Type()
	want := "a string"
	switch {
	case t == durationType:
		want = "a duration like 500ms, 2s or 1m"
	case t.Kind() == reflect.Bool:
		want = "true or false"
	case v.CanInt():
		want = "an integer"
	case v.CanFloat():
		want = "a number"
	}
	switch {
	case n.Kind != yaml.ScalarNode:
		d.fail(n.Line, key, "want %s, got %s", want, yamlnode.KindName(n))
		return
	case yamlnode.IsNull(n):
		d.fail(n.Line, key, "missing value: want %s", want)
		return
	}
	tag := n.ShortTag()
	switch {
	case t == durationType:
		if tag != "!!str" && tag != "!!int" {
			d.fail(n.Line, key, "want %s, got %s", want, yamlnode.KindName(n))
			return
		}
		x, err := time.ParseDuration(n.Value)
		if err != nil {
			d.fail(n.Line, key, "invalid duration %q: want %s (units ns, us, ms, s, m, h)", n.Value, want)
			return
		}
		v.SetInt(int64(x))
	case t == secretType && tag != "!!str":
		// Never quote a secret back, not even a mistyped one.
		d.fail(n.Line, key, "want a string, got %s (put the value in quotes)", yamlnode.KindName(n))
		return
	case t.Kind() == reflect.String:
		if tag != "!!str" {
			d.fail(n.Line, key, "want a string, got %s (quote it: %q)", yamlnode.KindName(n), n.Value)
			return
		}
		v.SetString(n.Value)
	case t.Kind() == reflect.Bool:
		var b bool
		if tag != "!!bool" || n.Decode(&b) != nil {
			d.fail(n.Line, key, "want true or false, got %s %q", yamlnode.KindName(n), n.Value)
			return
		}
		v.SetBool(b)
	case v.CanInt():
		var x int64
		if tag == "!!float" && isDigits(n.Value) {
			// YAML resolves an integer too large for int64 as a float.
			d.fail(n.Line, key, "integer %s out of range", n.Value)
			return
		}
		if tag != "!!int" {
			d.fail(n.Line, key, "want an integer, got %s %q", yamlnode.KindName(n), n.Value)
			return
		}
		if n.Decode(&x) != nil || v.OverflowInt(x) {
			d.fail(n.Line, key, "integer %s out of range", n.Value)
			return
		}
		v.SetInt(x)
	case v.CanFloat():
		var x float64
		if tag != "!!int" && tag != "!!float" || n.Decode(&x) != nil {
			d.fail(n.Line, key, "want a number, got %s %q", yamlnode.KindName(n), n.Value)
			return
		}
		v.SetFloat(x)
	default:
		// Every field type of Config is handled above; a test walks them.
		d.fail(n.Line, key, "cannot hold a value of Go type %v", t)
	}
}

// unused reports the keys a file sets that the kind in force does not
// use: a circle's radius_x, a procedural world's path, a claims
// verifier's url. Validate cannot tell them from defaults.
func (d *decoder) unused(c *Config) []problem {
	var v validator
	check := func(p keyPath, kindKey string, kind, used string, keys ...string) {
		for _, k := range keys {
			if _, set := d.lines[p.key(k).String()]; set {
				v.add(p.key(k), []keyPath{p.key(kindKey)}, "only used by %s (%s is %s)", used, kindKey, kind)
			}
		}
	}
	if c.Database.Kind == KindPostgres {
		check(keyPath{"database"}, "kind", c.Database.Kind, "the sqlite database", "path")
	}
	if c.Archive.Kind == KindPostgres {
		check(keyPath{"archive"}, "kind", c.Archive.Kind, "the sqlite archive", "path")
	}
	for _, name := range sortedKeys(c.Worlds) {
		p := keyPath{"worlds"}.name(name)
		switch w := c.Worlds[name]; w.Kind {
		case KindProcedural:
			check(p, "kind", w.Kind, "minecraft worlds", "path", "dimension", "region_dir")
		case KindMinecraft:
			check(p, "kind", w.Kind, "procedural worlds", "procedural", "tile_cache")
		}
	}
	for _, name := range sortedKeys(c.Regions) {
		r := c.Regions[name]
		p := keyPath{"regions"}.name(name).key("shape")
		switch r.Shape.Kind {
		case geom.ShapeCircle, geom.ShapeSquare:
			check(p, "kind", r.Shape.Kind, "the rectangle shape", "radius_x", "radius_z", "inner_x", "inner_z", "rotation")
		case geom.ShapeRectangle:
			check(p, "kind", r.Shape.Kind, "the circle and square shapes", "radius", "inner")
		}
		p = keyPath{"regions"}.name(name).key("distribution")
		switch r.Distribution.Kind {
		case Flat:
			check(p, "kind", r.Distribution.Kind, "the weighted distribution", "exponent")
			check(p, "kind", r.Distribution.Kind, "the normal distribution", "mean", "deviation")
		case Weighted:
			check(p, "kind", r.Distribution.Kind, "the normal distribution", "mean", "deviation")
		case Normal:
			check(p, "kind", r.Distribution.Kind, "the weighted distribution", "exponent")
		}
	}
	for i, vf := range c.Verifiers {
		if vf.Kind == KindClaims {
			check(keyPath{"verifiers"}.index(i), "kind", vf.Kind, "http verifiers", "url", "timeout")
		}
	}
	return v.ps
}

// isDigits reports whether s is an optionally signed run of decimal
// digits (and YAML's '_' separators).
func isDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789_") == ""
}

func keyList(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// didYouMean suggests the key name was meant as, ignoring case, '_' and
// '-' ("maxBodyBytes", "max-body-bytes").
func didYouMean(name string, fs []field) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, f := range fs {
		if norm(f.name) == norm(name) {
			return fmt.Sprintf(" (did you mean %s?)", f.name)
		}
	}
	return ""
}
