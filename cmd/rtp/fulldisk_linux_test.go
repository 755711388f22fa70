package main_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
)

// TestServeOnFullDisk builds rtp and runs rtp serve with its data folder
// on a small file system of its own: a first run fills the terrain
// archive; then the disk is filled to the last byte by another file, and
// rtp serve still starts, serves teleports, and says in /readyz what the
// full disk cost (the archive given back to make room). Mounting the file
// system needs root: elsewhere the test says so and skips.
func TestServeOnFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rtp and runs it; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system for the data folder needs root")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	bin := buildRTP(t)
	dataDir := filepath.Join(disk, "data")
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte(`data_dir: `+dataDir+`
server:
  listen: 127.0.0.1:0
regions:
  default:
    world: world
    shape: {kind: circle, radius: 2048}
    sinks:
      general: {capacity: 4}
    pulse: 10ms
    queues: {backlog: 64, cold: 64}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	teleports := func(c *client.Client, n int) {
		t.Helper()
		for i := range n {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			_, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: fmt.Sprintf("p%d", i), Wait: 20 * time.Second})
			cancel()
			if err != nil {
				t.Fatalf("teleport %d: %v", i, err)
			}
		}
	}

	srv := startServer(t, bin, cfg)
	c := client.New(srv.addr, client.Options{})
	waitServerReady(t, c)
	teleports(c, 8)
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("rtp serve after SIGTERM: %v\n%s", err, srv.logText())
	}
	fi, err := os.Stat(filepath.Join(dataDir, "archive.db"))
	if err != nil || fi.Size() == 0 {
		t.Fatalf("archive after the first run: %v, %v; want tiles in it", fi, err)
	}

	// Fill the disk to the last byte.
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for { // what a 64 KiB write could not take
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil || st.Bavail != 0 {
		t.Fatalf("disk not full: %d blocks free, %v", st.Bavail, err)
	}

	srv = startServer(t, bin, cfg)
	c = client.New(srv.addr, client.Options{})
	waitServerReady(t, c)
	teleports(c, 8)
	resp, err := http.Get(srv.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "disk full (0 bytes free") || !strings.Contains(string(body), "removed the terrain archive") {
		t.Errorf("/readyz on a full disk = %d %s; want 200 with a warning that the archive made room", resp.StatusCode, body)
	}
}
