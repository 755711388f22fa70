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

	"github.com/rtpengine/rtp/internal/diskspace"
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

// TestClassify feeds classifyCode the result codes and system errors
// SQLite reports when it could not open a database (TestDriverErrors
// checks that the driver's errors carry them).
func TestClassify(t *testing.T) {
	const path = "/data/rtp.db"
	sqliteErr := errors.New("sqlite error")
	for _, tc := range []struct {
		se   sqliteError
		kind error
		want string
	}{
		{sqliteError{codeCantOpen, syscall.EACCES}, ErrReadOnly, "sqlitedb: database /data/rtp.db is read-only (open /data/rtp.db: permission denied)"},
		{sqliteError{codeCantOpen, syscall.EPERM}, ErrReadOnly, "is read-only (open /data/rtp.db: operation not permitted)"},
		{sqliteError{codeCantOpen, syscall.EROFS}, ErrReadOnly, "is read-only (open /data/rtp.db: read-only file system)"},
		{sqliteError{codeCantOpen, &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}}, ErrReadOnly, "is read-only (open /data/rtp.db: read-only file system)"},
		{sqliteError{codeReadOnly, nil}, ErrReadOnly, "sqlitedb: database /data/rtp.db is read-only"},
		{sqliteError{codeFull, nil}, ErrDiskFull, "sqlitedb: /data/rtp.db: disk full on /data"},
		{sqliteError{codeIOErr, syscall.ENOSPC}, ErrDiskFull, "no space left on device"},
		{sqliteError{codeCantOpen, syscall.ENOENT}, ErrNoDirectory, "sqlitedb: data directory /data does not exist (open /data/rtp.db: no such file or directory)"},
	} {
		err := fmt.Errorf("journal: %w", sqliteErr)
		got := classifyCode(path, err, tc.se)
		if !errors.Is(got, tc.kind) || !strings.Contains(got.Error(), tc.want) {
			t.Errorf("classifyCode(%+v) = %q (kind %v), want kind %v and %q", tc.se, got, errors.Is(got, tc.kind), tc.kind, tc.want)
		}
		if !errors.Is(got, sqliteErr) {
			t.Errorf("classifyCode(%+v) dropped the original error from the chain", tc.se)
		}
	}
	for _, se := range []sqliteError{{codeCorrupt, nil}, {codeIOErr, syscall.EIO}, {codeBusy, nil}} {
		if got := classifyCode(path, sqliteErr, se); got != sqliteErr {
			t.Errorf("classifyCode(%+v) = %v, want it unchanged", se, got)
		}
	}
	// SQLite reports a write the disk had no room for as a bare I/O
	// error: with almost no space left it is a full disk, in words.
	defer func(f func(string) (diskspace.Usage, error)) { diskUsage = f }(diskUsage)
	free := uint64(4096)
	diskUsage = func(string) (diskspace.Usage, error) {
		return diskspace.Usage{Free: free, Total: 1 << 30}, nil
	}
	got := Explain(path, fmt.Errorf("commit: %w", sqliteErrorFor(codeIOErr)))
	if want := "sqlitedb: /data/rtp.db: disk full (4096 bytes free on /data)"; !errors.Is(got, ErrDiskFull) || !strings.HasPrefix(got.Error(), want) {
		t.Errorf("Explain(I/O error, 4096 bytes free) = %q, want ErrDiskFull and %q", got, want)
	}
	if again := Explain(path, got); again != got {
		t.Errorf("Explain of an explained error = %q, want it unchanged", again)
	}
	free = 1 << 30
	plain := fmt.Errorf("commit: %w", sqliteErrorFor(codeIOErr))
	if got := Explain(path, plain); got != plain {
		t.Errorf("Explain(I/O error, 1 GiB free) = %q, want it unchanged", got)
	}
	if Explain(path, nil) != nil {
		t.Error("Explain(nil) != nil")
	}
	if err := errors.New("something else"); classify(path, err) != err {
		t.Error("classify changed an error that is not SQLite's")
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

// TestDriverErrors provokes SQLite errors through the driver and checks
// that this package reads their codes: SQLITE_FULL (a page limit standing
// in for a full disk), SQLITE_BUSY, SQLITE_READONLY, and SQLITE_NOTADB,
// which is none of the kinds.
func TestDriverErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "e.db")
	db, err := Open(ctx, path, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x BLOB)`); err != nil {
		t.Fatal(err)
	}

	var pages int
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO t VALUES (zeroblob(100000))`)
	if !IsDiskFull(err) || IsBusy(err) {
		t.Fatalf("insert past max_page_count: %v; IsDiskFull %v, IsBusy %v; want SQLITE_FULL", err, IsDiskFull(err), IsBusy(err))
	}
	if got := classify(path, err); !errors.Is(got, ErrDiskFull) || !errors.Is(got, err) {
		t.Errorf("classify(SQLITE_FULL) = %v, want ErrDiskFull wrapping it", got)
	}
	if _, err := db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}

	// Another connection holds the write lock: a write here is busy once
	// the 1 ms busy timeout has passed.
	other := sql.OpenDB(NewConnector(URI(path, false), BusyTimeout(time.Second)))
	defer other.Close()
	otx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otx.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO t VALUES (2)`)
	if !IsBusy(err) || IsDiskFull(err) {
		t.Fatalf("insert while another connection writes: %v; IsBusy %v; want SQLITE_BUSY", err, IsBusy(err))
	}
	if err := otx.Rollback(); err != nil {
		t.Fatal(err)
	}

	ro := sql.OpenDB(NewConnector(URI(path, true)))
	defer ro.Close()
	var n int
	if err := ro.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("read through a read-only connection: %d rows, %v", n, err)
	}
	_, err = ro.Exec(`INSERT INTO t VALUES (3)`)
	if got := classify(path, err); !errors.Is(got, ErrReadOnly) {
		t.Fatalf("write through a read-only connection: %v, classified %v; want ErrReadOnly", err, got)
	}

	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 512)), 0o644); err != nil {
		t.Fatal(err)
	}
	jdb := sql.OpenDB(NewConnector(URI(junk, true)))
	defer jdb.Close()
	err = jdb.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n)
	if _, ok := asSQLite(err); !ok || IsBusy(err) || IsDiskFull(err) || classify(junk, err) != err {
		t.Fatalf("reading a file that is not a database: %v; want an SQLite error of no kind here", err)
	}
}

// TestConnectorSetup: the setup statements run on every connection, and
// one that fails fails the connect with its text in the error.
func TestConnectorSetup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := sql.OpenDB(NewConnector(URI(path, false), BusyTimeout(1234*time.Millisecond), `PRAGMA cache_size = -4321`))
	defer db.Close()
	db.SetMaxOpenConns(2)
	ctx := context.Background()
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for i, c := range []*sql.Conn{c1, c2} {
		var busy, cache int
		if err := c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 1234 {
			t.Errorf("connection %d: busy_timeout = %d, %v; want 1234", i, busy, err)
		}
		if err := c.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil || cache != -4321 {
			t.Errorf("connection %d: cache_size = %d, %v; want -4321", i, cache, err)
		}
	}
	bad := sql.OpenDB(NewConnector(URI(path, false), `PRAGMA no_such_thing(`))
	defer bad.Close()
	if err := bad.Ping(); err == nil || !strings.Contains(err.Error(), "PRAGMA no_such_thing(") {
		t.Fatalf("Ping with a bad setup statement = %v, want an error naming it", err)
	}
	if got, want := URI("/a b/c?d#e%f.db", true), "file:/a b/c%3fd%23e%25f.db?mode=ro"; !strings.HasPrefix(got, want) {
		t.Errorf("URI = %q, want it to begin %q", got, want)
	}
	if got := BusyTimeout(0); got != "PRAGMA busy_timeout = 1" {
		t.Errorf("BusyTimeout(0) = %q", got)
	}
}

func TestCheckTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := CheckFile(ctx, filepath.Join(dir, "missing.db"), time.Second, "a"); err != nil {
		t.Errorf("CheckFile(missing) = %v, want nil", err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(ctx, empty, time.Second, "a"); err != nil {
		t.Errorf("CheckFile(empty) = %v, want nil", err)
	}
	path := filepath.Join(dir, "x.db")
	db, err := Open(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE a (x)`, `CREATE TABLE b (x)`, `CREATE INDEX ai ON a (x)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ours []string
		want string // "" for nil
	}{
		{[]string{"a", "b"}, ""},
		{[]string{"a", "b", "c"}, ""},
		{[]string{"a"}, "holds table rtp did not create (b)"},
		{nil, "holds tables rtp did not create (a, b)"},
	} {
		for name, err := range map[string]error{
			"CheckTables": CheckTables(ctx, db, tc.ours...),
			"CheckFile":   CheckFile(ctx, path, time.Second, tc.ours...),
		} {
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s(ours %q) = %v, want nil", name, tc.ours, err)
			case tc.want != "" && (!errors.Is(err, ErrForeign) || err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s(ours %q) = %v, want ErrForeign with %q", name, tc.ours, err, tc.want)
			}
		}
	}
	db.Close()
}
