package ttl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/memory"
)

// loadErrors returns the problems in an error returned by Load.
func loadErrors(t *testing.T, err error) []*LineError {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*LineError
	for _, e := range errs {
		le, ok := e.(*LineError)
		if !ok {
			t.Fatalf("Load error %q (%T) is not a *LineError", e, e)
		}
		out = append(out, le)
	}
	return out
}

func mustLoad(t *testing.T, text string) *Policy {
	t.Helper()
	p, err := Load(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Load(%q) = %v", text, err)
	}
	return p
}

func TestLoadSeedFile(t *testing.T) {
	p, err := LoadFile(filepath.Join("testdata", "seed.yml"))
	if err != nil {
		t.Fatal(err)
	}
	wantCauses := map[memory.Cause]Duration{
		memory.CauseBiome:           Permanent,
		memory.CauseWorldBorder:     Permanent,
		memory.CauseVert:            Permanent,
		memory.CauseSafety:          Permanent,
		memory.CauseUniquePlacement: Duration(30 * Day),
		memory.CauseSafetyExternal:  Duration(14 * Day),
	}
	for c := range memory.Cause(memory.NumCauses) {
		want, wantOK := wantCauses[c]
		if got, ok := p.Cause(c); got != want || ok != wantOK {
			t.Errorf("Cause(%v) = %v, %v, want %v, %v", c, got, ok, want, wantOK)
		}
	}
	for name, want := range map[string]Duration{"WorldGuardChecker": Permanent, "GriefPreventionChecker": Duration(14 * Day)} {
		if got, ok := p.Verifier(name); got != want || !ok {
			t.Errorf("Verifier(%q) = %v, %v, want %v, true", name, got, ok, want)
		}
	}
	if got, want := strings.Join(p.Verifiers(), ","), "GriefPreventionChecker,WorldGuardChecker"; got != want {
		t.Errorf("Verifiers() = %s, want %s", got, want)
	}
}

// validFiles load without error; they seed FuzzLoad too.
var validFiles = []string{
	"",
	"# only a comment\n",
	"---\n",
	"~\n",
	"{}\n",
	"causes:\nverifiers:\n",
	"causes: {}\nverifiers: {}\n",
	"causes:\n  uniquePlacement: 1d\n",
	"causes:\n  uniquePlacement: 86400\n",
	"causes:\n  uniquePlacement: \"86400\"\n",
	"causes:\n  safetyExternal: 0\nverifiers:\n  A: -1\n  B: 0\n  C: 500ms\n",
	"causes: {biome: -1, timeout: 0, safetyExternal: 20t}\n",
	"verifiers:\n  \"123\": 1h\n  true: 2h\n  a:b: 3h\n  'x#y': 4h\n  ünïcødé: 5h\n",
	"causes:\n  uniquePlacement: &d 3d\n  safetyExternal: *d\n",
	"causes: &c\n  uniquePlacement: 2d\n",
	"causes:\n  uniquePlacement: !!str 3600\n",
	"causes:\n  uniquePlacement: 2d\n...\n",
}

func TestLoadValid(t *testing.T) {
	for _, text := range validFiles {
		if _, err := Load(strings.NewReader(text)); err != nil {
			t.Errorf("Load(%q) = %v, want no error", text, err)
		}
	}
}

func TestLoadEmptyIsDefault(t *testing.T) {
	for _, text := range []string{"", "\n\n", "# comment\n", "---\n", "~\n", "{}\n", "causes:\nverifiers:\n", "causes: {}\n"} {
		p := mustLoad(t, text)
		if !p.Equal(Default()) {
			t.Errorf("Load(%q) is not equal to Default()", text)
		}
	}
}

// Integer nodes, quoted and plain strings all reach ParseDuration.
func TestLoadValueForms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want time.Duration
	}{
		{"causes:\n  uniquePlacement: 86400\n", Day},
		{"causes:\n  uniquePlacement: \"86400\"\n", Day},
		{"causes:\n  uniquePlacement: 1d\n", Day},
		{"causes:\n  uniquePlacement: '24h'\n", Day},
		{"causes:\n  uniquePlacement: !!str 3600\n", time.Hour},
		{"causes:\n  uniquePlacement: -1\n", -1},
		{"causes:\n  uniquePlacement: 0\n", 0},
	} {
		p, err := Load(strings.NewReader(tc.text))
		if err != nil {
			t.Errorf("Load(%q) = %v", tc.text, err)
			continue
		}
		if got := p.TTL(memory.CauseUniquePlacement, ""); got != tc.want {
			t.Errorf("Load(%q).TTL(uniquePlacement) = %v, want %v", tc.text, got, tc.want)
		}
	}
	// An alias to a scalar is followed.
	p := mustLoad(t, "causes:\n  uniquePlacement: &d 3d\n  safetyExternal: *d\n")
	if got := p.TTL(memory.CauseSafetyExternal, ""); got != 3*Day {
		t.Errorf("TTL(safetyExternal) through an alias = %v, want %v", got, 3*Day)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
		key  string
		msg  string
	}{
		{"static not -1", "causes:\n  biome: 30d\n", 2, "causes.biome", "static cause never expires; use -1"},
		{"static zero", "causes:\n  vert: 0\n", 2, "causes.vert", "static cause never expires; use -1"},
		{"transient not 0", "causes:\n  timeout: 5s\n", 2, "causes.timeout", "transient cause is never stored; use 0"},
		{"transient -1", "causes:\n  nullChunk: -1\n", 2, "causes.nullChunk", "transient cause is never stored; use 0"},
		{"dynamic negative", "causes:\n  uniquePlacement: -5\n", 2, "causes.uniquePlacement", "negative"},
		{"bad unit", "\ncauses:\n  safetyExternal: 14x\n", 3, "causes.safetyExternal", `invalid duration "14x": unknown unit "x"`},
		{"unknown cause", "causes:\n  lava: -1\n", 2, "causes.lava", "unknown cause (causes: biome,"},
		{"unknown cause case", "causes:\n  Biome: -1\n", 2, "causes.Biome", `did you mean "biome"?`},
		{"unknown top key", "causes: {}\nverifier:\n  A: 1d\n", 2, "verifier", "unknown key (want causes or verifiers)"},
		{"duplicate top key", "causes: {}\ncauses: {}\n", 2, "causes", "duplicate key (first at line 1)"},
		{"duplicate cause", "causes:\n  biome: -1\n  vert: -1\n  biome: -1\n", 4, "causes.biome", "duplicate key (first at line 2)"},
		{"duplicate verifier", "verifiers:\n  A: 1d\n  A: 1d\n", 3, "verifiers.A", "duplicate key (first at line 2)"},
		{"top sequence", "- causes\n", 1, "", "want a mapping with the keys causes and verifiers, got a list"},
		{"top scalar", "hello\n", 1, "", "got a string"},
		{"causes sequence", "causes: [biome]\n", 1, "causes", "want a mapping of cause names to durations, got a list"},
		{"causes scalar", "causes: 14d\n", 1, "causes", "got a string"},
		{"verifiers sequence", "verifiers:\n  - A\n", 2, "verifiers", "got a list"},
		{"value mapping", "causes:\n  safetyExternal: {a: 1}\n", 2, "causes.safetyExternal", "got a mapping"},
		{"value null", "causes:\n  safetyExternal:\n", 2, "causes.safetyExternal", "missing value"},
		{"value float", "causes:\n  safetyExternal: 1.5\n", 2, "causes.safetyExternal", `got a number "1.5"`},
		{"value bool", "verifiers:\n  A: true\n", 2, "verifiers.A", `got a boolean "true"`},
		{"value hex", "causes:\n  safetyExternal: 0x10\n", 2, "causes.safetyExternal", `unknown unit "x"`},
		{"value custom tag", "causes:\n  safetyExternal: !weird 1d\n", 2, "causes.safetyExternal", "tagged !weird"},
		{"key mapping", "causes:\n  {a: 1}: 1d\n", 2, "causes", "want a name as key, got a mapping"},
		{"key null", "verifiers:\n  ~: 1d\n", 2, "verifiers", "want a name as key, got null"},
		{"verifier space", "verifiers:\n  \"Grief Prevention\": 1d\n", 2, `verifiers."Grief Prevention"`, "invalid verifier name: contains whitespace ' '"},
		{"verifier empty", "verifiers:\n  \"\": 1d\n", 2, `verifiers.""`, "invalid verifier name: empty"},
		{"verifier control", "verifiers:\n  \"a\\u0001\": 1d\n", 2, `verifiers."a\x01"`, "contains unprintable U+0001"},
		{"verifier negative", "verifiers:\n  A: -2\n", 2, "verifiers.A", "negative"},
		{"syntax", "causes:\n  biome: -1\n   vert: -1\n", 3, "", "YAML syntax: "},
		{"two documents", "causes: {}\n---\nverifiers: {}\n", 2, "", "more than one YAML document"},
		{"alias to mapping as value", "causes: &m {}\nverifiers:\n  A: *m\n", 3, "verifiers.A", "got a mapping"},
		{"alias cycle", "causes: &c {biome: *c}\n", 1, "causes.biome", "got a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(strings.NewReader(tc.text))
			if err == nil {
				t.Fatalf("Load(%q) = %v, nil, want an error", tc.text, p)
			}
			if p != nil {
				t.Errorf("Load(%q) returned a policy with its error", tc.text)
			}
			errs := loadErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("Load(%q) = %d problems (%v), want 1", tc.text, len(errs), err)
			}
			e := errs[0]
			if e.File != "ttl.yml" || e.Line != tc.line || e.Key != tc.key || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("Load(%q) = %+v, want ttl.yml line %d key %q message containing %q", tc.text, *e, tc.line, tc.key, tc.msg)
			}
		})
	}
}

func TestLoadErrorFormat(t *testing.T) {
	_, err := Load(strings.NewReader("causes:\n  worldBorder: -1\n  vert: -1\n  safety: -1\n  uniquePlacement: 30d\n  safetyExternal: 14d\n  biome: 7d\n"))
	if got, want := err.Error(), "ttl.yml:7: causes.biome: static cause never expires; use -1"; got != want {
		t.Errorf("Load error = %q, want %q", got, want)
	}
	e := &LineError{File: "ttl.yml", Msg: "YAML syntax: x"}
	if got, want := e.Error(), "ttl.yml: YAML syntax: x"; got != want {
		t.Errorf("LineError without line = %q, want %q", got, want)
	}
}

// testdata/bad.yml has one problem on each line listed here; Load must
// report every one of them, in file order.
func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := LoadFile(filepath.Join("testdata", "bad.yml"))
	if err == nil {
		t.Fatal("LoadFile(testdata/bad.yml) = nil error")
	}
	want := []struct {
		line int
		key  string
		msg  string
	}{
		{3, "causes.biome", "static cause never expires"},
		{4, "causes.timeout", "transient cause is never stored"},
		{5, "causes.uniquePlacement", "negative"},
		{6, "causes.safetyExternal", `unit "d" after "h"`},
		{7, "causes.Vert", `did you mean "vert"?`},
		{8, "causes.safety", "got a list"},
		{9, "causes.worldBorder", "missing value"},
		{10, "causes.biome", "duplicate key (first at line 3)"},
		{12, `verifiers."Grief Prevention"`, "whitespace"},
		{13, "verifiers.WorldGuardChecker", "got a number"},
		{15, "verifiers.TownyChecker", "duplicate key (first at line 14)"},
		{16, `verifiers.""`, "empty"},
		{17, "ttls", "unknown key"},
	}
	errs := loadErrors(t, err)
	if len(errs) != len(want) {
		t.Errorf("LoadFile(testdata/bad.yml) = %d problems, want %d:\n%v", len(errs), len(want), err)
	}
	for i := range min(len(errs), len(want)) {
		e, w := errs[i], want[i]
		if e.File != filepath.Join("testdata", "bad.yml") || e.Line != w.line || e.Key != w.key || !strings.Contains(e.Msg, w.msg) {
			t.Errorf("problem %d = %q, want line %d key %q message containing %q", i, e, w.line, w.key, w.msg)
		}
	}
	// Every line appears in the joined message.
	for _, w := range want {
		if needle := "bad.yml:" + strconv.Itoa(w.line) + ": "; !strings.Contains(err.Error(), needle) {
			t.Errorf("joined error lacks %q", needle)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ttl.yml")
	if err := os.WriteFile(path, []byte("causes:\n  uniquePlacement: 2d\n  biome: 1d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":3: causes.biome: ") {
		t.Errorf("LoadFile(%s) error = %v, want it to name the file and line 3", path, err)
	}

	missing := filepath.Join(dir, "missing.yml")
	if _, err := LoadFile(missing); !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "ttl: ") {
		t.Errorf("LoadFile(missing) error = %v, want a ttl error matching fs.ErrNotExist", err)
	}
	p, err := LoadFileOrDefault(missing)
	if err != nil || !p.Equal(Default()) {
		t.Errorf("LoadFileOrDefault(missing) = %v, %v, want Default(), nil", p, err)
	}
	if _, err := LoadFileOrDefault(dir); err == nil {
		t.Errorf("LoadFileOrDefault(a directory) = nil error, want an error")
	}
	if _, err := LoadFileOrDefault(path); err == nil {
		t.Errorf("LoadFileOrDefault(bad file) = nil error, want the file's problems")
	}
	good := filepath.Join(dir, "good.yml")
	if err := os.WriteFile(good, []byte("causes:\n  uniquePlacement: 2d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = LoadFileOrDefault(good)
	if err != nil || p.TTL(memory.CauseUniquePlacement, "") != 2*Day {
		t.Errorf("LoadFileOrDefault(good) = %v, %v, want uniquePlacement 2d", p, err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	text := "# " + strings.Repeat("x", MaxFileSize) + "\n"
	if _, err := Load(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(%d bytes) error = %v, want too large", len(text), err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestLoadReadError(t *testing.T) {
	if _, err := Load(failingReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Load(failing reader) error = %v, want the read error", err)
	}
}
