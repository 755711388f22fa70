package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run executes the command line and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestHelpAndVersion(t *testing.T) {
	out, _, err := run(t, "--help")
	if err != nil || !strings.Contains(out, "memory") || !strings.Contains(out, "version") {
		t.Fatalf("rtp --help = %q, %v; want the command list", out, err)
	}
	out, _, err = run(t, "version")
	if err != nil || out != "rtp "+version()+"\n" || !strings.HasPrefix(out, "rtp "+Version) {
		t.Fatalf("rtp version = %q, %v", out, err)
	}
	if flag, _, err := run(t, "--version"); err != nil || flag != out {
		t.Fatalf("rtp --version = %q, %v; want %q as rtp version prints", flag, err, out)
	}
	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3"
	if out, _, err := run(t, "--version"); err != nil || out != "rtp v1.2.3\n" {
		t.Fatalf("rtp --version with the linked version v1.2.3 = %q, %v", out, err)
	}
	for _, args := range [][]string{{"memory", "--help"}, {"memory", "inspect", "--help"}, {"memory", "simulate", "--help"}} {
		if out, _, err := run(t, args...); err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("rtp %v = %q, %v; want usage", args, out, err)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"version", "extra"}, {"memory", "inspect"}, {"memory", "simulate", "--unsafe", "x"}} {
		_, _, err := run(t, args...)
		if got := ExitCode(err); got != 2 {
			t.Errorf("rtp %v: exit code %d (err %v), want 2", args, got, err)
		}
	}
	if got := ExitCode(nil); got != 0 {
		t.Errorf("ExitCode(nil) = %d, want 0", got)
	}
}
