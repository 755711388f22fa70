package yamlnode

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestKindNameAndNull(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: [1]\nb: {x: 1}\nc: 1.5\nd: ~\ne: &x hi\nf: *x\ng: true\nh: 7\n"), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Content[0]
	want := map[string]string{"a": "a list", "b": "a mapping", "c": "a number", "d": "null",
		"e": "a string", "f": "an alias", "g": "a boolean", "h": "an integer"}
	for i := 0; i < len(m.Content); i += 2 {
		k, v := m.Content[i].Value, m.Content[i+1]
		if got := KindName(v); got != want[k] {
			t.Errorf("KindName(%s) = %q, want %q", k, got, want[k])
		}
		if got := IsNull(v); got != (k == "d") {
			t.Errorf("IsNull(%s) = %v", k, got)
		}
		if k == "f" && Deref(v).Value != "hi" {
			t.Errorf("Deref(alias) = %q, want hi", Deref(v).Value)
		}
	}
	if !IsNull(&yaml.Node{}) {
		t.Error("IsNull(zero node) = false")
	}
}

func TestSyntaxLine(t *testing.T) {
	for _, tc := range []struct {
		err  string
		line int
		msg  string
	}{
		{"yaml: line 3: mapping values are not allowed", 3, "mapping values are not allowed"},
		{"yaml: did not find expected key", 0, "did not find expected key"},
		{"yaml: line x: odd", 0, "line x: odd"},
	} {
		line, msg := SyntaxLine(errors.New(tc.err))
		if line != tc.line || msg != tc.msg {
			t.Errorf("SyntaxLine(%q) = %d, %q; want %d, %q", tc.err, line, msg, tc.line, tc.msg)
		}
	}
}
