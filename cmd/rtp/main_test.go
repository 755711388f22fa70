package main

import (
	"bufio"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs main in place of the tests when the test binary is started
// by one of the tests below as the rtp program.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("RTP_TEST_MAIN_ARGS"); ok {
		os.Args = append([]string{"rtp"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func rtpCommand(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RTP_TEST_MAIN_ARGS="+args)
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args string
		code int
		err  string
	}{
		{"version", 0, ""},
		{"nope", 2, "unknown command"},
		{"stats --addr ftp://x", 2, "scheme"},
		{"config check " + filepath.Join(t.TempDir(), "missing.yml"), 1, "missing.yml"},
	} {
		cmd := rtpCommand(t, tc.args)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if got := exitCode(err); got != tc.code || !strings.Contains(stderr.String(), tc.err) {
			t.Errorf("rtp %s: exit %d, stderr %q; want %d and %q", tc.args, got, stderr.String(), tc.code, tc.err)
		}
	}
}

// TestServeSignal starts rtp serve as a process, checks that it answers,
// sends it SIGTERM and expects a clean exit.
func TestServeSignal(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rtp.yml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+dir+"\nregions:\n  default:\n    world: world\n    pulse: 20ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := rtpCommand(t, "serve --config "+cfg+" --listen 127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var addr string
	select {
	case l := <-line:
		var ok bool
		if addr, ok = strings.CutPrefix(l, "listening on "); !ok {
			t.Fatalf("rtp serve printed %q", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rtp serve did not listen within 60s: %s", stderr.String())
	}
	resp, err := http.Get(addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz = %d", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rtp serve after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("rtp serve still running 30s after SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "msg=stopped") {
		t.Errorf("rtp serve did not log its stop:\n%s", stderr.String())
	}
}
