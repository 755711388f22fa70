package lineerr

import (
	"errors"
	"fmt"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.yml", Line: 3, Key: "server.listen", Msg: "bad"}, "a.yml:3: server.listen: bad"},
		{Error{File: "a.yml", Key: "regions.default.world", Msg: "bad"}, "a.yml: regions.default.world: bad"},
		{Error{File: "ttl.yml", Line: 1, Msg: "YAML syntax: x"}, "ttl.yml:1: YAML syntax: x"},
		{Error{Key: "worlds", Msg: "bad"}, "config: worlds: bad"},
		{Error{Msg: "bad"}, "config: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestSyntax(t *testing.T) {
	var v any
	err := yaml.Unmarshal([]byte("a: 1\nb: [\n"), &v)
	if err == nil {
		t.Fatal("the broken YAML parsed")
	}
	e := Syntax("f.yml", err)
	if e.File != "f.yml" || e.Line < 2 || e.Key != "" || len(e.Msg) <= len("YAML syntax: ") || e.Msg[:13] != "YAML syntax: " {
		t.Errorf("Syntax = %+v, want a problem of f.yml at line 2 or later starting \"YAML syntax: \"", e)
	}
}

func TestSortByLine(t *testing.T) {
	errs := []*Error{{Line: 0, Msg: "a"}, {Line: 5, Msg: "b"}, {Line: 2, Msg: "c"}, {Line: 0, Msg: "d"}, {Line: 2, Msg: "e"}}
	SortByLine(errs)
	var got string
	for _, e := range errs {
		got += e.Msg
	}
	if want := "cebad"; got != want {
		t.Errorf("SortByLine order %q, want %q (by line, stable, no line last)", got, want)
	}
}

func TestAll(t *testing.T) {
	a, b := &Error{File: "f", Line: 1, Msg: "a"}, &Error{File: "f", Line: 2, Msg: "b"}
	got, ok := All(errors.Join(a, fmt.Errorf("wrapped: %w", b)))
	if !ok || len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("All(join of two problems) = %v, %v", got, ok)
	}
	if got, ok := All(a); !ok || len(got) != 1 || got[0] != a {
		t.Errorf("All(one problem) = %v, %v", got, ok)
	}
	for _, err := range []error{nil, errors.New("open f: no such file"), errors.Join(a, errors.New("other"))} {
		if got, ok := All(err); ok {
			t.Errorf("All(%v) = %v, true; want false", err, got)
		}
	}
}
