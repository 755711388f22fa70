package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchNullServer runs bench http, with completions and a join burst,
// against rtp bench null-server recording an execution trace, and stops
// the server as a signal would: the trace is then complete.
func TestBenchNullServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	tracePath := filepath.Join(t.TempDir(), "null.trace")
	go func() {
		err := Run(ctx, []string{"bench", "null-server", "--listen", "127.0.0.1:0", "--trace", tracePath}, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("null-server printed nothing: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("null-server printed %q, want \"listening on ADDR\"", line)
	}
	out, stderr, err := run(t, "bench", "http", "--addr", addr, "--rate", "400", "--duration", "250ms", "--complete", "--joins", "30")
	if err != nil {
		t.Fatalf("bench http against the null server: %v\n%s%s", err, out, stderr)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"100 sent, 100 ok, 0 errors, 0 misses", "completed: 100",
		"join burst: 30 players, 30 joined (0 errors); 30 ok, 0 misses, 0 errors", "burst served by sink: login 30"} {
		if !strings.Contains(flat, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("null-server after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("null-server did not stop within 10s of its context ending")
	}
	// An execution trace begins with its format's header line.
	if b, err := os.ReadFile(tracePath); err != nil || len(b) < 1024 || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("trace: %d bytes, %v; want a trace of the run", len(b), err)
	}
	if _, _, err := run(t, "bench", "null-server", "--listen", "127.0.0.1:0", "--trace", filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Fatalf("null-server with a trace file it cannot create = %v, want an error naming --trace", err)
	}

	if _, _, err := run(t, "bench", "null-server", "--listen", "256.0.0.1:x"); err == nil || !strings.Contains(err.Error(), "null-server") {
		t.Fatalf("null-server on a bad address = %v, want an error", err)
	}
}

// TestHoldResident checks that --resident's memory is resident: every
// page written, the process's resident set grown by about as much (on
// Linux, where /proc tells).
func TestHoldResident(t *testing.T) {
	const mib = 48
	// Memory earlier tests freed goes back to the system first, so that
	// the scavenger returning it meanwhile cannot hide the growth.
	debug.FreeOSMemory()
	before, ok := residentBytes(t)
	held := holdResident(mib)
	if len(held) != mib {
		t.Fatalf("holdResident(%d) made %d blocks", mib, len(held))
	}
	for i, b := range held {
		if len(b) != 1<<20 {
			t.Fatalf("block %d is %d bytes, want 1 MiB", i, len(b))
		}
		for j := 0; j < len(b); j += 4 << 10 {
			if b[j] == 0 {
				t.Fatalf("block %d page %d never written", i, j>>12)
			}
		}
	}
	if ok {
		after, _ := residentBytes(t)
		if grew := after - before; grew < mib<<20*9/10 {
			t.Errorf("resident set grew by %d MiB holding %d MiB", grew>>20, mib)
		}
	}
	runtime.KeepAlive(held)
}

// residentBytes reads the process's resident set from /proc/self/statm;
// ok is false where there is none.
func residentBytes(t *testing.T) (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("statm %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("statm %q: %v", b, err)
	}
	return pages * int64(os.Getpagesize()), true
}

// TestBenchNullServerResidentBounds: --resident outside its bounds is a
// usage error before anything is allocated or bound.
func TestBenchNullServerResidentBounds(t *testing.T) {
	for _, v := range []string{"-1", strconv.Itoa(maxResidentMiB + 1)} {
		_, stderr, err := run(t, "bench", "null-server", "--listen", "127.0.0.1:0", "--resident", v)
		if err == nil || !strings.Contains(err.Error()+stderr, "--resident") {
			t.Errorf("--resident %s: err %v, stderr %q; want a usage error naming --resident", v, err, stderr)
		}
	}
}
