// Package godeps tells the tests what a package links: the import paths
// `go list -deps` names for it, with the go tool of the machine.
package godeps

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// Of returns the import paths of pkg and of every package it depends on,
// as `go list -deps pkg` prints them (run in the test's working
// directory, so that a relative pattern such as "." is the package under
// test). It skips the test, saying so, when the go tool is not on the
// PATH, and fails it when go list fails.
func Of(t testing.TB, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: no go tool on the PATH to list what %s links (%v)", pkg, err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(goTool, "list", "-deps", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// Matching returns the paths of deps that are, or are under, one of the
// module or package paths of roots.
func Matching(deps []string, roots ...string) []string {
	var out []string
	for _, d := range deps {
		for _, r := range roots {
			if d == r || strings.HasPrefix(d, r+"/") {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
