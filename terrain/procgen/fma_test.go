package procgen

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestNoFusedMultiplyAdd compiles this package for arm64 and for amd64 at
// GOAMD64=v3 (both allow the compiler to fuse x*y+z) and fails if any fused
// multiply-add instruction appears: one would make tiles differ by
// platform. Fix a failure by wrapping the product in float64(...).
func TestNoFusedMultiplyAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package twice; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to compile with: ", err)
	}
	fused := regexp.MustCompile(`\b(V?F(N)?M(ADD|SUB)[A-Z0-9]*)\b`)
	for _, env := range [][]string{
		{"GOOS=linux", "GOARCH=arm64"},
		{"GOOS=linux", "GOARCH=amd64", "GOAMD64=v3"},
	} {
		cmd := exec.Command(goTool, "build", "-gcflags=-S", ".")
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v go build: %v\n%s", env, err, out)
		}
		if !strings.Contains(string(out), "STEXT") {
			t.Fatalf("%v: no assembly listing in the compiler output (%d bytes); the check is miswired", env, len(out))
		}
		var fn string
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, "STEXT") {
				fn = strings.Fields(line)[0]
			}
			if m := fused.FindStringSubmatch(line); m != nil {
				t.Errorf("%v: fused %s in %s:\n\t%s", env, m[1], fn, strings.TrimSpace(line))
			}
		}
	}
}
