package sqlitedb

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readOnlyDisk mounts a small file system at a new directory, lets fill
// write into it, then remounts it read-only. It skips the test where the
// process may not mount (mounting needs root).
func readOnlyDisk(t *testing.T, fill func(dir string)) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only file system needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	fill(dir)
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	return dir
}

// TestCheckFileReadOnlyDisk: on a read-only disk, where SQLite says only
// "unable to open database file", CheckFile says the file is read-only
// and names it.
func TestCheckFileReadOnlyDisk(t *testing.T) {
	ctx := context.Background()
	var path string
	readOnlyDisk(t, func(dir string) {
		path = filepath.Join(dir, "x.db")
		db, err := Open(ctx, path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE a (x)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
	})
	err := CheckFile(ctx, path, time.Second, "a")
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("CheckFile on a read-only disk = %v, want ErrReadOnly naming %s", err, path)
	}
}
