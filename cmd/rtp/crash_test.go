package main_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
	_ "github.com/rtpengine/rtp/internal/sqlitedb" // the SQLite driver, for PRAGMA integrity_check of the files rtp leaves

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/memory"
)

// crashRadius is the unique-placement radius of the crash test, in blocks.
const crashRadius = 8

// delivery is one location handed out by the server under test.
type delivery struct {
	x, z  int64
	round int       // the run of the server that handed it out
	at    time.Time // when the response arrived
}

// TestCrashRecovery builds rtp, runs rtp serve on the procedural world
// with unique placement, drives teleports over HTTP and SIGKILLs the
// server at random moments, restarting it each time on the same data
// folder (and once kills rtp pregen). It asserts that the databases are
// sound, that no location is handed out twice, that none lands closer than
// the radius to one handed out before a kill, and that the memory's runs
// exported a while before a kill are all there after the restart.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rtp and runs it for several seconds; skipped with -short")
	}
	bin := buildRTP(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte(`data_dir: `+dataDir+`
server:
  listen: 127.0.0.1:0
regions:
  default:
    world: world
    shape: {kind: circle, radius: 640}
    sinks:
      general: {capacity: 16}
    pulse: 10ms
    queues: {backlog: 64, cold: 64}
    unique_placement: {radius: `+fmt.Sprint(crashRadius)+`}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

	// One kill during pregen, then restart and serve.
	pregen := exec.Command(bin, "pregen", "--config", cfg)
	var pregenLog bytes.Buffer
	pregen.Stdout, pregen.Stderr = &pregenLog, &pregenLog
	if err := pregen.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
	_ = pregen.Process.Kill()
	_ = pregen.Wait()
	checkIntegrity(t, dataDir)

	const kills = 5
	var all []delivery
	discarded := 0
	var perRestart []int
	for round := 0; round <= kills; round++ {
		srv := startServer(t, bin, cfg)
		c := client.New(srv.addr, client.Options{})
		waitServerReady(t, c)
		if round > 0 {
			unclean, n := srv.recovery(t)
			if !unclean {
				t.Errorf("round %d: the restart after a SIGKILL is not reported unclean\n%s", round, srv.logText())
			}
			discarded += n
			perRestart = append(perRestart, n)
		}
		if round == kills {
			// The last run drives a little, then checks the memory.
			all = append(all, drive(t, c, srv.addr, round, 500*time.Millisecond)...)
			srv.kill()
			break
		}
		runFor := time.Duration(400+rng.IntN(1200)) * time.Millisecond
		got := drive(t, c, srv.addr, round, runFor)
		before := exportIndices(t, c)
		// Go on serving past one batch delay (100 ms) with margin, then
		// kill at a random moment.
		more := driveAsync(c, srv.addr, round, time.Duration(300+rng.IntN(300))*time.Millisecond)
		got = append(got, (<-more)...)
		srv.kill()
		all = append(all, got...)
		checkIntegrity(t, dataDir)

		// The memory exported before the kill must all be back.
		srv2 := startServer(t, bin, cfg)
		c2 := client.New(srv2.addr, client.Options{})
		waitServerReady(t, c2)
		after := exportIndices(t, c2)
		missing := 0
		for i := range before {
			if !after[i] {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("round %d: %d of %d chunks memory held as rejected %v before the kill are gone after the restart", round, missing, len(before), 300*time.Millisecond)
		}
		srv2.kill() // a second unclean end, with no hand-outs in between
	}
	checkIntegrity(t, dataDir)

	exact, near := 0, 0
	seen := map[[2]int64]int{}
	for i, d := range all {
		if _, ok := seen[[2]int64{d.x, d.z}]; ok {
			exact++
		}
		seen[[2]int64{d.x, d.z}] = i
		for _, e := range all[:i] {
			if e.round == d.round {
				continue // the engine's own guarantee, tested elsewhere
			}
			if dx, dz := d.x-e.x, d.z-e.z; dx*dx+dz*dz < crashRadius*crashRadius {
				near++
				break
			}
		}
	}
	t.Logf("%d kills (and one of pregen), %d deliveries, %d exact repeats, %d within %d blocks of an earlier run's, %d hot locations discarded (per restart after hand-outs: %v)",
		kills, len(all), exact, near, crashRadius, discarded, perRestart)
	if len(all) < 50 {
		t.Errorf("only %d deliveries: the test exercised too little", len(all))
	}
	if exact != 0 || near != 0 {
		t.Errorf("%d locations delivered twice and %d closer than %d blocks to one delivered before a kill; want 0", exact, near, crashRadius)
	}
}

// server is a running rtp serve.
type server struct {
	cmd  *exec.Cmd
	addr string
	log  *bytes.Buffer
	mu   *sync.Mutex
}

// discardedRE finds the count in the log line of an unclean restart.
var discardedRE = regexp.MustCompile(`did not shut down cleanly.*?discarded=(\d+)`)

// recovery reads from the server's log whether it found the previous run
// unclean and how many hot locations it discarded.
func (s *server) recovery(t *testing.T) (unclean bool, discarded int) {
	t.Helper()
	m := discardedRE.FindStringSubmatch(s.logText())
	if m == nil {
		return false, 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return true, n
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

type syncWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startServer starts rtp serve and waits for its "listening on" line.
func startServer(t *testing.T, bin, cfg string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0"), log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	s.cmd.Stderr = syncWriter{s.mu, s.log}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case lines <- addr:
				default:
				}
			}
		}
	}()
	select {
	case s.addr = <-lines:
	case <-time.After(60 * time.Second):
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Fatalf("rtp serve did not listen within 60 s\n%s", s.log)
	}
	return s
}

func waitServerReady(t *testing.T, c *client.Client) {
	t.Helper()
	eventually.True(t, 60*time.Second, "the server ready", func() bool { return c.Readyz(t.Context()) == nil })
}

// buildRTP builds the rtp command into a temporary folder and returns its
// path, for the tests that run it as a process: to kill it, to run a
// fleet of them, or to time it as users build it (without the race
// detector the test binary may carry).
func buildRTP(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rtp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// drive asks for teleports from two players at once for d and returns
// what was handed out.
func drive(t *testing.T, c *client.Client, addr string, round int, d time.Duration) []delivery {
	t.Helper()
	return <-driveAsync(c, addr, round, d)
}

// complete tells the server the player arrived, so that the hand-out is
// final (a hand-out left open may be given back, and its place handed out
// again, which is not a second delivery).
func complete(addr string, id uint64) {
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/v1/teleports/%d/complete", addr, id), nil)
	if err != nil {
		return
	}
	req.Header.Set("X-RTP-Request", "1")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func driveAsync(c *client.Client, addr string, round int, d time.Duration) <-chan []delivery {
	ch := make(chan []delivery, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var mu sync.Mutex
		var got []delivery
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					// A player of its own for each request: a player's open
					// hand-out is answered again, not a second delivery.
					player := fmt.Sprintf("r%d-w%d-%d", round, w, n)
					tp, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: player, Wait: time.Second})
					if err != nil {
						continue // a miss, or the deadline
					}
					mu.Lock()
					got = append(got, delivery{x: tp.X, z: tp.Z, round: round, at: time.Now()})
					mu.Unlock()
					complete(addr, tp.ID)
				}
			})
		}
		wg.Wait()
		ch <- got
	}()
	return ch
}

// exportIndices returns the indices of the memory's active runs.
func exportIndices(t *testing.T, c *client.Client) map[int64]bool {
	t.Helper()
	var buf bytes.Buffer
	if err := c.ExportMemory(t.Context(), "default", &buf); err != nil {
		t.Fatal(err)
	}
	var ex memory.Export
	if err := json.Unmarshal(buf.Bytes(), &ex); err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, r := range ex.Active {
		for i := r.Start; i < r.Start+r.Len; i++ {
			out[i] = true
		}
	}
	return out
}

// checkIntegrity opens every SQLite database of the data folder and runs
// PRAGMA integrity_check on it.
func checkIntegrity(t *testing.T, dataDir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "*.db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no database in %s", dataDir)
	}
	for _, f := range files {
		db, err := sql.Open("sqlite3", "file:"+f+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var res string
		if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
			t.Errorf("%s: integrity_check = %q, %v", f, res, err)
		}
		db.Close()
	}
}
