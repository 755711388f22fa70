package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/internal/eventually"
)

// served is a running rtp serve.
type served struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's error, once done is closed
	wrote  chan struct{} // gets a value (without blocking) after each write to stderr
	mu     sync.Mutex    // protects stderr
	stderr strings.Builder
}

type lockedWriter struct{ s *served }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	n, err := w.s.stderr.Write(p)
	w.s.mu.Unlock()
	select {
	case w.s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// waitLog waits until the log holds want, on the writes themselves.
func (s *served) waitLog(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for !strings.Contains(s.log(), want) {
		select {
		case <-s.wrote:
		case <-s.done:
			t.Fatalf("serve stopped before logging %q: %v\n%s", want, s.err, s.log())
		case <-timeout:
			t.Fatalf("serve did not log %q within 30s\n%s", want, s.log())
		}
	}
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// stop cancels the command's context, as a signal does, and returns its
// error.
func (s *served) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
		return s.err
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30s after its context ended\n%s", s.log())
		return nil
	}
}

// startServe runs rtp serve with args and waits for its address.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{cancel: cancel, done: make(chan struct{}), wrote: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	go func() {
		err := Run(ctx, append([]string{"serve"}, args...), pw, lockedWriter{s})
		pw.Close()
		s.err = err
		close(s.done)
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			cancel()
			t.Fatalf("serve printed %q, want \"listening on ADDR\"", line)
		}
		s.addr = addr
	case <-s.done:
		cancel()
		t.Fatalf("serve stopped before listening: %v\n%s", s.err, s.log())
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("serve did not listen within 60s\n%s", s.log())
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
		}
	})
	return s
}

// waitReady polls /readyz until the server is ready.
func waitReady(t *testing.T, c *client.Client) {
	t.Helper()
	var err error
	if _, ok := eventually.Within(60*time.Second, func() bool { err = c.Readyz(t.Context()); return err == nil }); !ok {
		t.Fatalf("server not ready after 60s: %v", err)
	}
}

// TestServe starts rtp serve on a free port, drives it through the
// client, stops it as a signal would and checks that the next start
// restores its locations.
func TestServe(t *testing.T) {
	t.Parallel()
	path, _ := smallConfig(t, "20ms")
	token := "serve-test-token-0123456789"
	s := startServe(t, "--config", path, "--listen", "127.0.0.1:0")
	ctx := t.Context()
	anon := client.New(s.addr, client.Options{})
	c := client.New(s.addr, client.Options{Token: token})
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c)
	regs, err := c.Regions(ctx)
	if err != nil || len(regs) != 1 || regs[0].Name != "default" || regs[0].World != "world" {
		t.Fatalf("Regions = %+v, %v", regs, err)
	}
	// No token is configured: the routes are open on loopback.
	tp, err := anon.Teleport(ctx, "default", client.TeleportRequest{Player: "alex", Wait: 20 * time.Second})
	if err != nil {
		t.Fatalf("Teleport: %v\n%s", err, s.log())
	}
	if tp.World != "world" || tp.Region != "default" || tp.ID == 0 {
		t.Fatalf("Teleport = %+v", tp)
	}
	if err := anon.Complete(ctx, tp.ID); err != nil {
		t.Fatal(err)
	}
	if err := anon.Complete(ctx, tp.ID); client.Code(err) != client.CodeUnknownID {
		t.Fatalf("second Complete = %v, want unknown-id", err)
	}
	_, err = anon.Teleport(ctx, "nowhere", client.TeleportRequest{Player: "alex"})
	if client.Code(err) != client.CodeUnknownRegion {
		t.Fatalf("Teleport to an unknown region = %v", err)
	}

	// The commands that talk to a server.
	out, _, err := run(t, "stats", "--addr", s.addr)
	if err != nil || !strings.Contains(out, "region default on world \"world\"") || !strings.Contains(out, "general ") {
		t.Fatalf("rtp stats = %q, %v", out, err)
	}
	if out, _, err := run(t, "scan", "pause", "--addr", s.addr, "--region", "default"); err != nil || !strings.Contains(out, "paused") {
		t.Fatalf("rtp scan pause = %q, %v", out, err)
	}
	if regs, _ := c.Regions(ctx); !regs[0].Paused {
		t.Fatal("the region is not paused after rtp scan pause")
	}
	if _, _, err := run(t, "scan", "resume", "--addr", s.addr, "--region", "default"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "memory", "export", "--addr", s.addr, "--region", "default")
	if err != nil || !strings.Contains(out, `"world"`) {
		t.Fatalf("rtp memory export --addr = %q, %v", out, err)
	}
	out, _, err = run(t, "bench", "http", "--addr", s.addr, "--rate", "50", "--duration", "200ms", "--complete", "--wait", "20s")
	if err != nil || !strings.Contains(out, "10 sent, 10 ok, 0 errors, 0 misses") {
		t.Fatalf("rtp bench http = %q, %v", out, err)
	}
	// Reload re-reads the file.
	if err := c.Reload(ctx); err != nil {
		t.Fatalf("Reload of the unchanged file: %v", err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(good, "regions: [\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(ctx); client.Code(err) != client.CodeInvalid || !strings.Contains(err.Error(), "rtp.yml") {
		t.Fatalf("Reload of a broken file = %v, want invalid naming the file", err)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}

	// Let the refill put something in cold for the restart to bring back
	// (screening shares the processors with every other test here).
	var before client.Stats
	if _, ok := eventually.Within(60*time.Second, func() bool {
		var err error
		if before, err = c.Stats(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		return before.Pipeline.Cold.Fill > 0
	}); !ok {
		t.Fatalf("no cold location after 60s: %+v", before.Pipeline)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve after its context ended = %v\n%s", err, s.log())
	}
	if !strings.Contains(s.log(), "stopped") {
		t.Errorf("serve did not log its stop:\n%s", s.log())
	}
	st := statsAfterRestart(t, path)
	if st.Restored == 0 {
		t.Fatalf("the next start restored %d locations, want the ones served kept", st.Restored)
	}
	// The reservations were all closed at shutdown.
	if st.Resident.Open != 0 {
		t.Errorf("%d reservations open after a restart", st.Resident.Open)
	}
}

func TestServeToken(t *testing.T) {
	t.Parallel()
	path, dir := smallConfig(t, "20ms")
	tokenFile := filepath.Join(dir, "token")
	token := "serve-test-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, []byte("auth:\n  token_file: "+tokenFile+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--config", path, "--listen", "127.0.0.1:0")
	ctx := t.Context()
	_, err := client.New(s.addr, client.Options{}).Teleport(ctx, "default", client.TeleportRequest{Player: "p"})
	if client.Code(err) != client.CodeUnauthorized {
		t.Fatalf("Teleport without the token = %v, want unauthorized", err)
	}
	c := client.New(s.addr, client.Options{Token: token})
	waitReady(t, c)
	if _, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: "p", Wait: 20 * time.Second}); err != nil {
		t.Fatalf("Teleport with the token: %v", err)
	}
	if _, _, err := run(t, "scan", "reset", "--addr", s.addr, "--region", "default"); client.Code(err) != client.CodeUnauthorized {
		t.Fatalf("scan reset without the token = %v, want unauthorized", err)
	}
	if _, _, err := run(t, "scan", "reset", "--addr", s.addr, "--region", "default", "--token", token); err != nil {
		t.Fatalf("scan reset with the token: %v", err)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestServeHangupReloads checks that SIGHUP reloads the token file, as
// daemons do, instead of ending the process (the signal's default).
func TestServeHangupReloads(t *testing.T) {
	path, dir := smallConfig(t, "20ms")
	tokenFile := filepath.Join(dir, "token")
	oldToken, newToken := "hangup-test-token-old-0123456789", "hangup-test-token-new-0123456789"
	if err := os.WriteFile(tokenFile, []byte(oldToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, []byte("auth:\n  token_file: "+tokenFile+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--config", path, "--listen", "127.0.0.1:0")
	scan := func(token string) error {
		_, _, err := run(t, "scan", "reset", "--addr", s.addr, "--region", "default", "--token", token)
		return err
	}
	if err := scan(oldToken); err != nil {
		t.Fatalf("scan reset with the first token: %v", err)
	}
	if err := os.WriteFile(tokenFile, []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitLog(t, "SIGHUP: reloaded")
	if err := scan(oldToken); client.Code(err) != client.CodeUnauthorized {
		t.Errorf("scan reset with the old token after SIGHUP = %v, want unauthorized", err)
	}
	if err := scan(newToken); err != nil {
		t.Errorf("scan reset with the new token after SIGHUP: %v", err)
	}
	// A reload that fails (a broken configuration file) changes nothing.
	if err := os.WriteFile(path, []byte("server: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitLog(t, "the reload failed")
	if err := scan(newToken); err != nil {
		t.Errorf("scan reset after a failed reload: %v", err)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve after two SIGHUPs stopped with %v, want a clean stop", err)
	}
}

// TestServeMinecraftWorld serves locations from a real 1.16 save.
func TestServeMinecraftWorld(t *testing.T) {
	t.Parallel()
	save := anvilfixture.Path(t, "prismarine-provider-anvil/1.16")
	// The fixture holds one region file, r.0.-1: the region's shape stays
	// inside it.
	path := writeConfig(t, "data_dir: "+t.TempDir()+`
regions:
  default:
    world: world
    shape: {kind: circle, center_x: 256, center_z: -256, radius: 240}
    sinks:
      general: {capacity: 4}
    queues: {backlog: 32, cold: 32}
`)
	s := startServe(t, "--config", path, "--world", save, "--listen", "127.0.0.1:0")
	c := client.New(s.addr, client.Options{})
	ctx := t.Context()
	for i := range 5 {
		tp, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: "p", Wait: 10 * time.Second})
		if err != nil {
			t.Fatalf("teleport %d: %v\n%s", i, err, s.log())
		}
		if dx, dz := tp.X-256, tp.Z+256; dx*dx+dz*dz > 260*260 || tp.World != "world" {
			t.Fatalf("teleport %d = %+v, outside the region", i, tp)
		}
		if err := c.Complete(ctx, tp.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestServeUsage(t *testing.T) {
	path, _ := smallConfig(t, "20ms")
	for _, args := range [][]string{
		{"serve", "extra"},
		{"serve", "--config", path, "--log-level", "loud"},
		{"serve", "--world", t.TempDir(), "--dimension", "moon"},
	} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v = %v (exit %d), want a usage error", args, err, ExitCode(err))
		}
	}
	// A port taken: a clear error, and the engine closed.
	s := startServe(t, "--config", path, "--listen", "127.0.0.1:0")
	_, _, err := run(t, "serve", "--config", path, "--listen", strings.TrimPrefix(s.addr, "http://"), "--data", t.TempDir())
	if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("serve on a taken port = %v", err)
	}
	if _, _, err := run(t, "serve", "--config", filepath.Join(t.TempDir(), "missing.yml")); err == nil {
		t.Fatal("serve with a missing config file succeeded")
	}
	if err := s.stop(t); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestServeWarnsBeyondLoopback: listening on every interface without an
// admin token leaves the mutating routes open to the network, and says so.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	t.Parallel()
	path, _ := smallConfig(t, "20ms")
	s := startServe(t, "--config", path, "--listen", "0.0.0.0:0")
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if log := s.log(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "without an admin token") {
		t.Fatalf("serve on 0.0.0.0 without a token logged no warning:\n%s", log)
	}
}

// TestServeProfiles: --cpu-profile, --trace and --mem-profile each leave
// their recording of the run once serve stops: the allocation profile in
// pprof's compressed form, naming its allocation samples.
func TestServeProfiles(t *testing.T) {
	t.Parallel()
	path, _ := smallConfig(t, "20ms")
	dir := t.TempDir()
	cpu, tr, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "trace.out"), filepath.Join(dir, "mem.pprof")
	s := startServe(t, "--config", path, "--listen", "127.0.0.1:0", "--cpu-profile", cpu, "--trace", tr, "--mem-profile", mem)
	waitReady(t, client.New(s.addr, client.Options{}))
	if err := s.stop(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
	for _, p := range []string{cpu, tr} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a recording", p, err)
		}
	}
	f, err := os.Open(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("--mem-profile wrote no compressed profile: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("--mem-profile: %v", err)
	}
	for _, name := range []string{"alloc_space", "inuse_space"} {
		if !bytes.Contains(data, []byte(name)) {
			t.Errorf("--mem-profile holds no %q samples", name)
		}
	}
}
