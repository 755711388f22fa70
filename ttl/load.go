package ttl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rtpengine/rtp/internal/lineerr"
	"github.com/rtpengine/rtp/internal/yamlnode"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/memory"
)

// MaxFileSize is the largest ttl.yml Load accepts, in bytes.
const MaxFileSize = 1 << 20

// LineError is one problem in a ttl.yml, located by line: File is
// "ttl.yml" for Load and the path for LoadFile, Line is 1-based (0 when
// the YAML parser did not say), Key names the entry ("causes.biome"; ""
// for the whole file). Load returns every problem of a file at once,
// joined with errors.Join; each is a *LineError. It is the type of
// config.LineError too, so the problems of rtp.yml and of its ttl.yml
// print and sort alike.
type LineError = lineerr.Error

// Load reads a ttl.yml from r. An empty file (or one holding only
// comments) is the defaults. On any problem it returns a nil Policy and
// every problem found, joined with errors.Join: YAML syntax errors, a
// second document, unknown keys, duplicate keys, values of the wrong kind
// and values a cause's tier does not accept. Problems in the file are
// *LineError values naming "ttl.yml" and the line.
func Load(r io.Reader) (*Policy, error) {
	return load("ttl.yml", r)
}

// LoadFile reads the ttl.yml at path, like Load, naming path in errors.
// A missing file is an error (one that matches fs.ErrNotExist); use
// LoadFileOrDefault where a missing file means the defaults.
func LoadFile(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ttl: %w", err)
	}
	defer f.Close()
	return load(path, f)
}

// LoadFileOrDefault is LoadFile, except that a file that does not exist
// gives Default and no error. Any other problem (permissions, a directory,
// bad content) is still an error.
func LoadFileOrDefault(path string) (*Policy, error) {
	p, err := LoadFile(path)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	return p, err
}

func load(name string, r io.Reader) (*Policy, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("ttl: reading %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("ttl: %s: larger than %d bytes", name, MaxFileSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Default(), nil
		}
		return nil, syntaxError(name, err)
	}
	l := loader{file: name, p: &Policy{}}
	l.document(&doc)
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		l.errorf(next.Line, "", "more than one YAML document; ttl.yml holds one")
	case !errors.Is(err, io.EOF):
		l.errs = append(l.errs, syntaxError(name, err))
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	return l.p, nil
}

// syntaxError turns a YAML parser error ("yaml: line 3: ...") into a
// *LineError.
func syntaxError(name string, err error) error { return lineerr.Syntax(name, err) }

// loader walks a parsed ttl.yml, filling p and collecting every problem.
type loader struct {
	file string
	p    *Policy
	errs []error
}

func (l *loader) errorf(line int, key, format string, args ...any) {
	l.errs = append(l.errs, &LineError{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) document(doc *yaml.Node) {
	root := doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return
		}
		root = doc.Content[0]
	}
	root = yamlnode.Deref(root)
	if yamlnode.IsNull(root) {
		return
	}
	if root.Kind != yaml.MappingNode {
		l.errorf(root.Line, "", "want a mapping with the keys causes and verifiers, got %s", yamlnode.KindName(root))
		return
	}
	l.each(root, "", func(name string, k, v *yaml.Node) {
		switch name {
		case "causes":
			l.causes(v)
		case "verifiers":
			l.verifiers(v)
		default:
			l.errorf(k.Line, keyPath("", name), "unknown key (want causes or verifiers)")
		}
	})
}

// each calls fn for every entry of the mapping m whose key is a name seen
// for the first time, and reports the other entries.
func (l *loader) each(m *yaml.Node, section string, fn func(name string, k, v *yaml.Node)) {
	first := make(map[string]int, len(m.Content)/2) // name -> line
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kv := yamlnode.Deref(k)
		if kv.Kind != yaml.ScalarNode || yamlnode.IsNull(kv) {
			l.errorf(k.Line, section, "want a name as key, got %s", yamlnode.KindName(kv))
			continue
		}
		name := kv.Value
		if line, dup := first[name]; dup {
			l.errorf(k.Line, keyPath(section, name), "duplicate key (first at line %d)", line)
			continue
		}
		first[name] = k.Line
		fn(name, k, v)
	}
}

// section returns the mapping under a top-level key; ok is false when it
// is empty or not a mapping (which is reported).
func (l *loader) section(v *yaml.Node, key, what string) (*yaml.Node, bool) {
	v = yamlnode.Deref(v)
	switch {
	case yamlnode.IsNull(v):
		return nil, false
	case v.Kind != yaml.MappingNode:
		l.errorf(v.Line, key, "want a mapping of %s, got %s", what, yamlnode.KindName(v))
		return nil, false
	}
	return v, true
}

func (l *loader) causes(v *yaml.Node) {
	m, ok := l.section(v, "causes", "cause names to durations")
	if !ok {
		return
	}
	l.each(m, "causes", func(name string, k, v *yaml.Node) {
		key := keyPath("causes", name)
		c, ok := memory.ParseCause(name)
		if !ok {
			l.errorf(k.Line, key, "unknown cause%s (causes: %s)", didYouMean(name), causeList())
			return
		}
		d, err := durationNode(v)
		if err != nil {
			l.errorf(k.Line, key, "%v", err)
			return
		}
		switch c.Tier() {
		case memory.Static:
			if !d.Permanent() {
				l.errorf(k.Line, key, "static cause never expires; use -1")
				return
			}
		case memory.Transient:
			if d != 0 {
				l.errorf(k.Line, key, "transient cause is never stored; use 0")
				return
			}
		}
		l.p.causes[c], l.p.set[c] = d, true
	})
}

func (l *loader) verifiers(v *yaml.Node) {
	m, ok := l.section(v, "verifiers", "verifier names to durations")
	if !ok {
		return
	}
	l.each(m, "verifiers", func(name string, k, v *yaml.Node) {
		key := keyPath("verifiers", name)
		if err := checkName(name); err != nil {
			l.errorf(k.Line, key, "invalid verifier name: %v", err)
			return
		}
		d, err := durationNode(v)
		if err != nil {
			l.errorf(k.Line, key, "%v", err)
			return
		}
		if l.p.verifiers == nil {
			l.p.verifiers = make(map[string]Duration)
		}
		l.p.verifiers[name] = d
	})
}

// checkName reports whether name can name a verifier: non-empty, valid
// UTF-8, printable and without whitespace. Package verify applies the same
// rule to source names.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty")
	}
	if !utf8.ValidString(name) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range name {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("contains whitespace %q", r)
		case !unicode.IsPrint(r):
			return fmt.Errorf("contains unprintable %U", r)
		}
	}
	return nil
}

// keyPath joins a section and an entry name for messages, quoting names
// that would not read clearly.
func keyPath(section, name string) string {
	if checkName(name) != nil || strings.Contains(name, ".") && section == "" {
		name = strconv.Quote(name)
	}
	if section == "" {
		return name
	}
	return section + "." + name
}

func causeList() string {
	names := make([]string, memory.NumCauses)
	for i := range names {
		names[i] = memory.Cause(i).String()
	}
	return strings.Join(names, ", ")
}

func didYouMean(name string) string {
	for i := range memory.NumCauses {
		if c := memory.Cause(i).String(); strings.EqualFold(c, name) {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
	}
	return ""
}
