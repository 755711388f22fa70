package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigCheckOK(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty file", "", "ok\n1 world (world), 1 region (default), 0 verifiers\n"},
		{"the example", "", "ok\n1 world (world), 1 region (default), 0 verifiers\n"},
		{"several", `ttl_file: ""
worlds:
  lobby: {}
  arena: {procedural: {seed: 9}}
regions:
  spawn: {world: lobby}
  pvp: {world: arena}
verifiers:
  - name: claims
  - {name: GriefPreventionChecker, kind: http, url: "http://127.0.0.1:9/verify"}
`, "ok\n2 worlds (arena, lobby), 2 regions (pvp, spawn), 2 verifiers (claims, GriefPreventionChecker)\n"},
	} {
		path := writeConfig(t, tc.text)
		if tc.name == "the example" {
			path = filepath.Join("..", "..", "..", "config", "rtp.example.yml")
		}
		out, errOut, err := run(t, "config", "check", path)
		if err != nil || out != tc.want || errOut != "" {
			t.Errorf("%s: rtp config check = %q, %q, %v; want %q", tc.name, out, errOut, err, tc.want)
		}
	}
}

func TestConfigCheckReportsEveryProblem(t *testing.T) {
	path := writeConfig(t, `server:
  listen: 8080
regions:
  default:
    shape:
      radius: 100
      inner: 200
    sinks:
      general: {capacity: -1}
  other:
    world: nowhere
    colour: red
`)
	out, errOut, err := run(t, "config", "check", path)
	if got := ExitCode(err); got != 1 || !errors.Is(err, ErrReported) {
		t.Errorf("exit code %d, err %v; want 1 and a reported error", got, err)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	want := []string{
		path + `:2: server.listen: want a string, got an integer (quote it: "8080")`,
		path + ":7: regions.default.shape.inner: 200 blocks (13 chunks) is not less than radius 100 blocks (6 chunks): the hole must be smaller than the shape",
		path + ":9: regions.default.sinks.general.capacity: -1: want 1 to 16777216",
		path + `:11: regions.other.world: no world named "nowhere" (worlds: world)`,
		// The list of the keys a region takes grows with the configuration.
		path + ":12: regions.other.colour: unknown key (want world, shape, distribution, safety, sinks, pulse, budget, queues, allocator, promotion_timeout, memory",
		"5 problems",
	}
	got := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(got) == len(want) && strings.HasPrefix(got[4], want[4]) {
		got[4] = want[4]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant\n%s", errOut, strings.Join(want, "\n"))
	}
}

func TestConfigCheckReadsTheTTLFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ttl.yml"), []byte("causes:\n  nope: 1d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, "data_dir: "+dir+"\n")
	_, errOut, err := run(t, "config", "check", path)
	if ExitCode(err) != 1 || !strings.HasPrefix(errOut, filepath.Join(dir, "ttl.yml")+":2: causes.nope: unknown cause") || !strings.HasSuffix(errOut, "1 problem\n") {
		t.Errorf("rtp config check with a bad ttl.yml = %q, %v", errOut, err)
	}
}

func TestConfigCheckUsage(t *testing.T) {
	for _, args := range [][]string{{"config", "check"}, {"config", "check", "a", "b"}, {"config", "check", "--nope", "a"}} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v: exit code %d (err %v), want 2", args, ExitCode(err), err)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yml")
	_, errOut, err := run(t, "config", "check", missing)
	if ExitCode(err) != 1 || errors.Is(err, ErrReported) || !strings.Contains(err.Error(), "no such file") || errOut != "" {
		t.Errorf("rtp config check missing.yml = %q, %v; want an unreported error for main to print", errOut, err)
	}
	for _, args := range [][]string{{"config", "--help"}, {"config", "check", "--help"}} {
		if out, _, err := run(t, args...); err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("rtp %v = %q, %v; want usage", args, out, err)
		}
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func clearServiceEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{config.EnvDatabaseURL, config.EnvArchiveURL, config.EnvLeasesURL} {
		t.Setenv(v, "")
	}
}

func TestConfigCheckConnectNothing(t *testing.T) {
	clearServiceEnv(t)
	out, errOut, err := run(t, "config", "check", "--connect", writeConfig(t, "archive: {kind: disabled}\n"))
	want := "ok\n1 world (world), 1 region (default), 0 verifiers\nnothing needs connecting: the database, the archive and the leases are all local\n"
	if err != nil || out != want || errOut != "" {
		t.Errorf("rtp config check --connect of a local config = %q, %q, %v; want %q", out, errOut, err, want)
	}
}

// Services that do not answer are each reported, with the password
// masked, and fail the command; the URL may come from the environment.
func TestConfigCheckConnectRefused(t *testing.T) {
	clearServiceEnv(t)
	port := closedPort(t)
	t.Setenv(config.EnvLeasesURL, fmt.Sprintf("redis://:hunter2@127.0.0.1:%d/0", port))
	path := writeConfig(t, fmt.Sprintf(`database:
  kind: postgres
  url: "postgres://rtp:hunter2@127.0.0.1:%d/rtp?sslmode=disable"
leases: {kind: redis}
`, port))
	out, errOut, err := run(t, "config", "check", "--connect", path)
	if ExitCode(err) != 1 || !errors.Is(err, ErrReported) {
		t.Fatalf("exit code %d, err %v; want 1 and a reported error", ExitCode(err), err)
	}
	if strings.Contains(out+errOut+err.Error(), "hunter2") {
		t.Errorf("the password leaks:\n%s%s", out, errOut)
	}
	db := fmt.Sprintf("database postgres://rtp:xxxxx@127.0.0.1:%d/rtp?sslmode=disable", port)
	leases := fmt.Sprintf("leases redis://:xxxxx@127.0.0.1:%d/0 (from RTP_LEASES_URL)", port)
	if want := "ok\n1 world (world), 1 region (default), 0 verifiers\nshared: " + db + ", " + leases + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], db+": failed: cannot connect: ") || !strings.Contains(lines[0], "refused") ||
		!strings.HasPrefix(lines[1], leases+": failed: cannot connect: ") || !strings.Contains(lines[1], "refused") ||
		lines[2] != "2 services of 2 failed" {
		t.Errorf("stderr:\n%s\nwant each service's failure, then \"2 services of 2 failed\"", errOut)
	}
}

// testPostgres returns RTP_TEST_POSTGRES with its search_path set to a
// schema of its own, dropped at cleanup; it skips without the variable.
func testPostgres(t *testing.T) (dsn, schema string) {
	t.Helper()
	base := os.Getenv("RTP_TEST_POSTGRES")
	if base == "" {
		t.Skip("RTP_TEST_POSTGRES is not set: this test needs a PostgreSQL server, " +
			"e.g. RTP_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	var b [6]byte
	rand.Read(b[:])
	schema = "rtp_cli_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to RTP_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema, schema
}

// pgFacts are what the server says of itself, read apart from the CLI.
func pgFacts(t *testing.T, dsn string) (version, db, user string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&db, &user); err != nil {
		t.Fatal(err)
	}
	return version, db, user
}

func TestConfigCheckConnectPostgres(t *testing.T) {
	clearServiceEnv(t)
	dsn, schema := testPostgres(t)
	version, db, user := pgFacts(t, dsn)
	t.Setenv(config.EnvDatabaseURL, dsn)
	t.Setenv(config.EnvArchiveURL, dsn)
	path := writeConfig(t, "database: {kind: postgres}\narchive: {kind: postgres}\n")
	server := fmt.Sprintf("PostgreSQL %s, database %s, user %s", version, db, user)
	dbLine := "database " + config.RedactURL(dsn) + " (from RTP_DATABASE_URL): ok: " + server + ", schema " + schema + ", "
	archiveLine := regexp.MustCompile(`(?m)^archive .* \(from RTP_ARCHIVE_URL\): ok: ` + regexp.QuoteMeta(server) +
		`, archive schema rtp_archive (not yet created|version \d+)$`)

	out, errOut, err := run(t, "config", "check", "--connect", path)
	if err != nil || errOut != "" {
		t.Fatalf("rtp config check --connect = %v, stderr %q", err, errOut)
	}
	if !strings.Contains(out, dbLine+"rtp tables not yet created (the first node to start creates them)\n") || !archiveLine.MatchString(out) {
		t.Errorf("stdout before any node:\n%s\nwant a line starting %q saying not yet created, and the archive's", out, dbLine)
	}

	// A node creates the tables.
	node, err := pgpersist.Open(context.Background(), dsn, pgpersist.Options{Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "config", "check", "--connect", path)
	if want := fmt.Sprintf("%srtp tables at version %d\n", dbLine, pgpersist.SchemaVersion); err != nil || !strings.Contains(out, want) {
		t.Errorf("stdout after a node opened = %q, %v; want %q", out, err, want)
	}

	// Tables newer than this build: a node would refuse them.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "UPDATE schema_version SET version = 99"); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = run(t, "config", "check", "--connect", path)
	if ExitCode(err) != 1 || !strings.Contains(errOut, "database ") || !strings.Contains(errOut, "rtp tables at version 99, newer than this build's") {
		t.Errorf("with tables at version 99: stderr %q, %v; want the database reported as failed", errOut, err)
	}
}

func TestConfigCheckConnectRedis(t *testing.T) {
	clearServiceEnv(t)
	base := os.Getenv("RTP_TEST_REDIS")
	if base == "" {
		t.Skip("RTP_TEST_REDIS is not set: this test needs a Redis server, e.g. RTP_TEST_REDIS=redis://127.0.0.1:6379/0")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/5" // the number reported is the URL's
	opts, err := goredis.ParseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	client := goredis.NewClient(opts)
	defer client.Close()
	info, err := client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("RTP_TEST_REDIS: %v", err)
	}
	m := regexp.MustCompile(`redis_version:(\S+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no redis_version in INFO server:\n%s", info)
	}
	path := writeConfig(t, fmt.Sprintf("leases: {kind: redis, url: %q}\n", u.String()))
	out, errOut, err := run(t, "config", "check", "--connect", path)
	want := "leases " + config.RedactURL(u.String()) + ": ok: Redis " + m[1] + ", database 5\n"
	if err != nil || errOut != "" || !strings.HasSuffix(out, want) {
		t.Errorf("rtp config check --connect = %q, %q, %v; want it to end %q", out, errOut, err, want)
	}
}
