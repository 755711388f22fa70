package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub dir", "a?b#c%d.db")
	db, err := Open(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	var sync int
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("synchronous = %d, %v; want 1 (NORMAL)", sync, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the path with special characters: %v", err)
	}
	if _, err := Open(context.Background(), filepath.Dir(path), time.Second); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
}

func TestInitSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(name string) *sql.DB {
		db, err := Open(ctx, filepath.Join(dir, name), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	schema := []string{`CREATE TABLE things (x INTEGER)`}
	db := open("a.db")
	for range 2 { // create, then find it in place
		if err := InitSchema(ctx, db, "things", 2, schema); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("user_version = %d, %v; want 2", v, err)
	}
	if err := InitSchema(ctx, db, "things", 1, schema); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("older build on a newer database = %v", err)
	}
	if err := InitSchema(ctx, db, "stuff", 2, nil); err == nil || !strings.Contains(err.Error(), "not a stuff database") {
		t.Fatalf("same version without the table = %v", err)
	}
	foreign := open("b.db")
	if _, err := foreign.Exec(`CREATE TABLE things (y TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := InitSchema(ctx, foreign, "things", 2, schema); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Fatalf("foreign table at version 0 = %v", err)
	}
}

// nobodyEnv is set in the environment of a test binary that a test running
// as root started again as an unprivileged user.
const nobodyEnv = "RTP_SQLITEDB_TEST_AS_NOBODY"

// nobody is the conventional unprivileged user and group id.
const nobody = 65534

// asNobody runs test (the name of the calling test) again in a copy of the
// test binary as user and group nobody, and reports its result, when this
// process runs as root: root writes through permission bits, so a
// read-only directory cannot be made for root by chmod. It returns false
// when the caller is to run the test itself.
func asNobody(t *testing.T, test string) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(nobodyEnv) != "" {
		return false
	}
	if runtime.GOOS != "linux" {
		t.Skip("running as root, where permission bits do not apply; starting the test as another user is done on Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("running as root, where permission bits do not apply, and the test binary is not found to run it as another user: %v", err)
	}
	// The copy and the child's temporary directory must be reachable by
	// nobody: the build directory of the test binary may not be.
	dir, err := os.MkdirTemp("", "sqlitedb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	for _, step := range []func() error{
		func() error { return os.Chmod(dir, 0o755) },
		func() error { return os.Mkdir(tmp, 0o700) },
		func() error { return os.Chown(tmp, nobody, nobody) },
		func() error { return copyFile(filepath.Join(dir, "test.bin"), exe) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(dir, "test.bin"), "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), nobodyEnv+"=1", "TMPDIR="+tmp)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Skipf("running as root, where permission bits do not apply, and the test cannot be started as user nobody: %v", err)
	case err != nil:
		t.Fatalf("%s as user nobody failed: %v\n%s", test, err, out)
	case !strings.Contains(string(out), "--- PASS: "+test):
		t.Fatalf("%s as user nobody did not pass:\n%s", test, out)
	}
	t.Logf("ran as user nobody:\n%s", out)
	return true
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestReadOnly opens databases where nothing can be written, for real (as
// user nobody when the tests run as root), and checks each error names
// the directory or file and says it is read-only.
func TestReadOnly(t *testing.T) {
	if asNobody(t, "TestReadOnly") {
		return
	}
	ctx := context.Background()
	open := func(path string) error {
		t.Helper()
		db, err := Open(ctx, path, time.Second)
		if err == nil {
			db.Close()
			t.Fatalf("Open(%s) succeeded", path)
		}
		return err
	}
	check := func(err error, kind error, wants ...string) {
		t.Helper()
		t.Log(err)
		if !errors.Is(err, kind) {
			t.Errorf("error %q is not %v", err, kind)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	base := t.TempDir()

	roDir := filepath.Join(base, "ro")
	mustMkdir(t, roDir, 0o555)
	err := open(filepath.Join(roDir, "rtp.db"))
	check(err, ErrReadOnly, "sqlitedb: data directory "+roDir+" is read-only", "open "+filepath.Join(roDir, "rtp.db")+": permission denied")
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("error %q does not have the system's error in its chain", err)
	}

	roFile := filepath.Join(base, "ro.db")
	mustCreate(t, roFile)
	if err := os.Chmod(roFile, 0o444); err != nil {
		t.Fatal(err)
	}
	check(open(roFile), ErrReadOnly, "sqlitedb: database file "+roFile+" is read-only")

	// A writable database in a read-only directory: WAL mode cannot start.
	walDir := filepath.Join(base, "wal")
	mustMkdir(t, walDir, 0o755)
	mustCreate(t, filepath.Join(walDir, "rtp.db"))
	if err := os.Chmod(walDir, 0o555); err != nil {
		t.Fatal(err)
	}
	check(open(filepath.Join(walDir, "rtp.db")), ErrReadOnly, "data directory "+walDir+" is read-only", "write-ahead log")

	missing := filepath.Join(roDir, "data", "rtp.db")
	check(open(missing), ErrNoDirectory, "data directory "+filepath.Dir(missing)+" does not exist and could not be created", "parent is read-only")
	if entries, _ := os.ReadDir(walDir); len(entries) != 1 {
		t.Errorf("checks left files behind: %v", entries)
	}
}

func mustMkdir(t *testing.T, dir string, mode fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) }) // so that TempDir can remove it
}

// mustCreate makes a database at path, then closes it.
func mustCreate(t *testing.T, path string) {
	t.Helper()
	db, err := Open(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDirectoryProblems(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, filepath.Join(file, "rtp.db"), time.Second); err == nil || !strings.Contains(err.Error(), "data directory "+file+" is not a directory") {
		t.Errorf("Open under a plain file = %v", err)
	}
	if _, err := Open(ctx, filepath.Join(file, "sub", "rtp.db"), time.Second); !errors.Is(err, ErrNoDirectory) || !strings.Contains(err.Error(), "could not be created") {
		t.Errorf("Open of a directory that cannot be made = %v", err)
	}
	// A missing directory is made, and the database is created in it.
	path := filepath.Join(base, "a", "b", "rtp.db")
	db, err := Open(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 || entries[0].Name() != "rtp.db" {
		t.Fatalf("directory after Open and Close: %v, %v; want only rtp.db", entries, err)
	}
}

// TestClassify feeds classify the errors SQLite reports when it could not
// open a database, as mattn/go-sqlite3 builds them.
func TestClassify(t *testing.T) {
	const path = "/data/rtp.db"
	for _, tc := range []struct {
		err  error
		kind error
		want string
	}{
		{sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.EACCES}, ErrReadOnly, "sqlitedb: database /data/rtp.db is read-only (open /data/rtp.db: permission denied)"},
		{sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.EPERM}, ErrReadOnly, "is read-only (open /data/rtp.db: operation not permitted)"},
		{sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.EROFS}, ErrReadOnly, "is read-only (open /data/rtp.db: read-only file system)"},
		{sqlite3.Error{Code: sqlite3.ErrReadonly}, ErrReadOnly, "sqlitedb: database /data/rtp.db is read-only"},
		{sqlite3.Error{Code: sqlite3.ErrFull}, ErrDiskFull, "sqlitedb: disk of /data/rtp.db is full"},
		{sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}, ErrDiskFull, "no space left on device"},
		{sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.ENOENT}, ErrNoDirectory, "sqlitedb: data directory /data does not exist (open /data/rtp.db: no such file or directory)"},
		{fmt.Errorf("journal: %w", sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.EROFS}), ErrReadOnly, "read-only file system"},
	} {
		got := classify(path, tc.err)
		if !errors.Is(got, tc.kind) || !strings.Contains(got.Error(), tc.want) {
			t.Errorf("classify(%v) = %q (kind %v), want kind %v and %q", tc.err, got, errors.Is(got, tc.kind), tc.kind, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("classify(%v) dropped the original error from the chain", tc.err)
		}
	}
	for _, err := range []error{errors.New("something else"), sqlite3.Error{Code: sqlite3.ErrCorrupt}} {
		if got := classify(path, err); got != err {
			t.Errorf("classify(%v) = %v, want it unchanged", err, got)
		}
	}
	pe := &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}
	if got := classifyAt("/data", "data directory", pe); !errors.Is(got, ErrReadOnly) || got.Error() != "sqlitedb: data directory /data is read-only (open /data/rtp.db: read-only file system)" {
		t.Errorf("classifyAt(EROFS) = %q", got)
	}
	pe.Err = syscall.ENOSPC
	if got := classifyAt("/data", "data directory", pe); !errors.Is(got, ErrDiskFull) {
		t.Errorf("classifyAt(ENOSPC) = %q", got)
	}
	pe.Err = syscall.EIO
	if got := classifyAt("/data", "data directory", pe); errors.Is(got, ErrReadOnly) || !errors.Is(got, syscall.EIO) || !strings.HasPrefix(got.Error(), "sqlitedb: data directory /data: ") {
		t.Errorf("classifyAt(EIO) = %q", got)
	}
}
