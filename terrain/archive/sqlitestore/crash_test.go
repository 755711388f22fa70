package sqlitestore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rtpengine/rtp/terrain/archive"
)

// crashEnv names the database a crash child writes to; crashSeedEnv seeds
// its choices.
const (
	crashEnv     = "RTP_SQLITESTORE_CRASH_DB"
	crashSeedEnv = "RTP_SQLITESTORE_CRASH_SEED"
)

var crashLimits = archive.Limits{MaxEntries: 40, MaxBytes: 300_000}

// TestCrashChild is the child process of TestSIGKILL: it writes, reads and
// deletes records in a loop, acknowledging each completed operation on
// stdout, until it is killed. Run directly, it does nothing.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestSIGKILL; runs only when " + crashEnv + " is set")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	s, err := Open(context.Background(), path, Options{Limits: crashLimits, TouchDelay: time.Millisecond})
	if err != nil {
		fmt.Printf("open-failed %v\n", err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	var written []string
	out := os.Stdout                         // unbuffered: a line written is acknowledged
	stop := time.Now().Add(30 * time.Second) // a safety net; the parent kills much sooner
	for i := 0; time.Now().Before(stop); i++ {
		switch op := rng.IntN(10); {
		case op < 6 || len(written) == 0:
			n := 1 + rng.IntN(20_000)
			k := key(fmt.Sprintf("crash-%d-%d", seed, i), n)
			if err := s.Put(context.Background(), record(k, n)); err != nil {
				fmt.Fprintf(out, "error put %v\n", err)
				os.Exit(2)
			}
			written = append(written, k)
			fmt.Fprintf(out, "put %s\n", k)
		case op < 9:
			k := written[rng.IntN(len(written))]
			if _, _, err := s.Get(context.Background(), record(k, 0).Digest); err != nil {
				fmt.Fprintf(out, "error get %v\n", err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "get %s\n", k)
		default:
			k := written[rng.IntN(len(written))]
			if err := s.Delete(context.Background(), record(k, 0).Digest); err != nil {
				fmt.Fprintf(out, "error delete %v\n", err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "delete %s\n", k)
		}
	}
	s.Close()
}

// TestSIGKILL kills a writing child process at random moments, several
// times, and checks after each kill that nothing is torn: integrity_check
// passes, the counters equal COUNT/SUM, every row is intact, the last
// acknowledged write survived, and the store reopens without a repair.
func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary several times; skipped in -short mode")
	}
	path := dbPath(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const rounds = 6
	totalPuts := 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path, fmt.Sprintf("%s=%d", crashSeedEnv, round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill at a random moment once the child is writing.
		var acked []string
		first, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: child wrote nothing", round)
		}
		acked = append(acked, first)
		time.Sleep(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for l := range lines {
			acked = append(acked, l)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, not by SIGKILL; output %q", round, err, acked)
		}
		// The last acknowledged put, unless deleted later: at most one more
		// operation can have run after the last acknowledgement, which can
		// evict nothing this recent (40 entries, 20 KB records, 300 KB).
		lastPut, deleted := "", map[string]bool{}
		for _, l := range acked {
			op, k, _ := strings.Cut(l, " ")
			switch op {
			case "put":
				lastPut = k
				delete(deleted, k)
				totalPuts++
			case "delete":
				deleted[k] = true
			case "get":
			default:
				t.Fatalf("round %d: child reported %q", round, l)
			}
		}
		keys := checkDB(t, path)
		if lastPut != "" && !deleted[lastPut] && !keys[lastPut] {
			t.Fatalf("round %d: the last acknowledged put %q is missing after SIGKILL", round, lastPut)
		}
		var logs logBuffer
		s, err := Open(context.Background(), path, Options{Limits: crashLimits, Logger: logs.logger()})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		st, err := s.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != int64(len(keys)) || st.Entries > crashLimits.MaxEntries || st.Bytes > crashLimits.MaxBytes {
			t.Fatalf("round %d: Stats = %+v with %d rows", round, st, len(keys))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if logs.String() != "" {
			t.Fatalf("round %d: reopen logged %q, want nothing to repair", round, logs.String())
		}
		t.Logf("round %d: killed after %d acknowledged operations; %d records retained", round, len(acked), len(keys))
	}
	if totalPuts < rounds {
		t.Fatalf("only %d puts in %d rounds: the children barely ran", totalPuts, rounds)
	}
}
