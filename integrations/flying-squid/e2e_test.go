// Package flyingsquid_test runs the flying-squid plugin end to end: a real
// flying-squid server with the plugin, rtp serve --world on the server's
// own save, and mineflayer bots that type /rtp.
package flyingsquid_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
)

// The landing contract the bots check (test/bots.js measures it).
const (
	bots   = 20
	rounds = 3
	landMs = 5000
)

const testToken = "e2e-token-0123456789abcdef"

// playerCap is the login sink's player cap: the reserve holds playerCap
// minus the players the plugin reported online.
const playerCap = 30

// The party step: partySize bots teleport together with /rtp party, and
// each lands within groupRadius blocks (rtp's default sinks.group.radius)
// of the party's centre.
const (
	partySize   = 4
	groupRadius = 8
)

// Messages of the plugin (lib/config.js) the test expects.
const msgUnavailable = "Random teleport is unavailable right now; try again in a moment."

// TestFlyingSquid is the end-to-end test of the plugin:
//
//  0. the plugin reports the bots' joins: the login reserve shrinks;
//  1. 20 bots each /rtp three times: each is moved, stands on the ground
//     within 5 s of its command (100 game ticks: more when the server
//     ticks slower), takes no damage and meets no fluid in the 5 s after;
//     then 4 bots form a party (/party invite, /party accept) and /rtp
//     party: every member lands as above, on a column of its own, within
//     the group radius of the party's centre;
//  2. a bot turns the ground under cached places to lava while the server
//     does not save: within 1 s rtp has the report, and no bot (nor any
//     teleport asked of rtp directly) is sent to one of them; after a scan
//     reset, which makes rtp screen the whole region again, no place at all
//     comes from the chunks changed and not saved (read from their stale
//     copy on disk, they would look safe);
//  3. rtp stops: /rtp answers the plugin's message and the server keeps
//     ticking; rtp starts again: /rtp works again, the server untouched.
func TestFlyingSquid(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Minecraft server, rtp and 20 bots for about a minute; skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: this test needs Node.js 18+ and `npm ci` in integrations/flying-squid (.ci/run does both)")
	}
	for _, m := range []string{"flying-squid", "mineflayer", "vec3"} {
		if _, err := os.Stat(filepath.Join("node_modules", m, "package.json")); err != nil {
			t.Skipf("node_modules/%s is missing: run `npm ci` in integrations/flying-squid (.ci/run does)", m)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rtp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/rtpengine/rtp/cmd/rtp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	save := filepath.Join(dir, "world")
	mcPort, rtpPort := freePort(t), freePort(t)
	rtpURL := "http://127.0.0.1:" + strconv.Itoa(rtpPort)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The server generates the chunks within 8 of the origin (blocks
	// -128..127), saves them, and from then on saves only when told.
	mc := startNode(t, node, "server", "test/server.js",
		"MC_PORT="+strconv.Itoa(mcPort), "MC_WORLD="+save, "MC_PREGEN=8",
		"RTP_URL="+rtpURL, "RTP_TOKEN_FILE="+tokenFile, "RTP_WORLD=world")
	mc.await(t, "ready", 90*time.Second)

	cfg := filepath.Join(dir, "rtp.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`auth:
  token_file: %q
regions:
  default:
    sinks:
      general:
        capacity: 64
      login:
        enabled: true
        player_cap: %d
`, tokenFile, playerCap)), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	startRTP := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--world", save, "--data", data,
			"--listen", "127.0.0.1:"+strconv.Itoa(rtpPort), "--x", "0", "--z", "0", "--radius", "120")
		cmd.Stdout, cmd.Stderr = &lockedBuffer{}, &lockedBuffer{}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitUntil(t, "rtp to fill its general sink", 90*time.Second, func() bool {
			st, err := stats(rtpURL)
			return err == nil && st.fill("general") >= 40
		})
		return cmd
	}
	rtp := startRTP()

	b := startNode(t, node, "bots", "test/bots.js", "MC_PORT="+strconv.Itoa(mcPort), "BOTS="+strconv.Itoa(bots))
	b.await(t, "ready", 120*time.Second)
	waitUntil(t, "the plugin to report the bots joined (login reserve of playerCap-bots)", 120*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.capacity("login") == playerCap-bots
	})

	// 1. Landings. The contract is in game time: landMs at the game's 20
	// ticks a second. A server slowed by a loaded machine ticks slower and
	// gets as much more wall time.
	ticks0, start := mc.tick(t), time.Now()
	all := b.run(t, map[string]any{"cmd": "rtp", "rounds": rounds}, 3*time.Minute)
	if len(all) != bots*rounds {
		t.Fatalf("%d teleports reported, want %d: %v", len(all), bots*rounds, all)
	}
	tps := float64(mc.tick(t)-ticks0) / time.Since(start).Seconds()
	allowedMs := int64(landMs * max(1, 20/max(tps, 0.1)))
	var land []float64
	landed, damaged := 0, 0
	for _, r := range all {
		switch {
		case r.Error != "" || r.Message != "":
			t.Errorf("%s round %d: %s%s", r.Bot, r.Round, r.Error, r.Message)
			continue
		case !r.OnGround || r.LandMs > allowedMs:
			t.Errorf("%s round %d: on the ground %v after %d ms, want within %d ms (%.1f ticks a second)", r.Bot, r.Round, r.OnGround, r.LandMs, allowedMs, tps)
		case r.Damage > 0:
			damaged++
			t.Errorf("%s round %d at %.1f %.1f %.1f: %v damage in the 5 s after landing", r.Bot, r.Round, r.X, r.Y, r.Z, r.Damage)
		case r.Fluid != "":
			t.Errorf("%s round %d at %.1f %.1f %.1f: in %s", r.Bot, r.Round, r.X, r.Y, r.Z, r.Fluid)
		}
		if r.OnGround {
			landed++
			land = append(land, float64(r.LandMs))
		}
	}
	slices.Sort(land)
	t.Logf("landings: %d bots, %d teleports, %d on the ground, %d with damage, command to landing p50 %.0f ms, p99 %.0f ms, max %.0f ms; the server at %.1f ticks a second",
		bots, len(all), landed, damaged, quantile(land, 0.50), quantile(land, 0.99), quantile(land, 1), tps)

	// 1b. A party of 4: one group teleport, every member within the
	// group radius of the party's centre.
	waitUntil(t, "rtp to fill its group sink", 60*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.groupFill() >= 1
	})
	before, err := stats(rtpURL)
	if err != nil {
		t.Fatal(err)
	}
	party := b.run(t, map[string]any{"cmd": "party", "size": partySize}, 2*time.Minute)
	if len(party) != partySize {
		t.Fatalf("%d party teleports reported, want %d: %v", len(party), partySize, party)
	}
	var cx, cz float64
	var partyLand []float64
	cols := map[[2]int]bool{}
	for _, r := range party {
		switch {
		case r.Error != "" || r.Message != "":
			t.Fatalf("party member %s: %s%s", r.Bot, r.Error, r.Message)
		case !r.Party:
			t.Errorf("party member %s: not reported as a party teleport", r.Bot)
		case !r.OnGround || r.LandMs > allowedMs:
			t.Errorf("party member %s: on the ground %v after %d ms", r.Bot, r.OnGround, r.LandMs)
		case r.Damage > 0 || r.Fluid != "":
			t.Errorf("party member %s at %.1f %.1f %.1f: damage %v, fluid %q", r.Bot, r.X, r.Y, r.Z, r.Damage, r.Fluid)
		}
		col := [2]int{int(math.Floor(r.X)), int(math.Floor(r.Z))}
		if cols[col] {
			t.Errorf("party member %s landed on column %v, another member's", r.Bot, col)
		}
		cols[col] = true
		cx += float64(col[0]) / partySize
		cz += float64(col[1]) / partySize
		partyLand = append(partyLand, float64(r.LandMs))
	}
	farthest := 0.0
	for _, r := range party {
		d := math.Hypot(math.Floor(r.X)-cx, math.Floor(r.Z)-cz)
		farthest = max(farthest, d)
		if d > groupRadius+1e-9 {
			t.Errorf("party member %s landed at %.1f, %.1f: %.2f blocks from the party's centre %.2f, %.2f, more than %d", r.Bot, r.X, r.Z, d, cx, cz, groupRadius)
		}
	}
	slices.Sort(partyLand)
	t.Logf("party: %d bots landed around %.1f, %.1f, the farthest %.2f blocks from the centre (radius %d); command to landing p50 %.0f ms, max %.0f ms",
		len(party), cx, cz, farthest, groupRadius, quantile(partyLand, 0.5), quantile(partyLand, 1))
	after, err := stats(rtpURL)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.groupServed() - before.groupServed(); got != partySize {
		t.Errorf("rtp's group sink served %d places for the party, want %d", got, partySize)
	}

	// 2. Lava under cached places, not saved. The places: teleports asked
	// of rtp and cancelled, which puts them back in the cache.
	var poisoned []place
	for i := range 24 {
		loc, status := teleport(t, rtpURL, "probe"+strconv.Itoa(i))
		if status != http.StatusOK {
			t.Fatalf("probe teleport: %d", status)
		}
		poisoned = append(poisoned, loc)
		call(t, rtpURL, "DELETE", "/v1/teleports/"+strconv.FormatUint(loc.ID, 10), "", http.StatusNoContent)
	}
	before, err = stats(rtpURL)
	if err != nil {
		t.Fatal(err)
	}
	chunks := map[[2]int]bool{}
	places := make([][3]int, len(poisoned))
	for i, p := range poisoned {
		places[i] = [3]int{p.X, p.Y, p.Z}
		chunks[[2]int{p.X >> 4, p.Z >> 4}] = true
	}
	b.run(t, map[string]any{"cmd": "lava", "places": places}, time.Minute)
	changed := time.Now()
	waitUntil(t, "rtp to hear of the lava", 60*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.Watch.Reported >= before.Watch.Reported+uint64(len(chunks))
	})
	if d := time.Since(changed); d > time.Second {
		t.Errorf("rtp heard of the lava %v after the change, want within 1 s", d)
	}
	isPoisoned := func(x, z int) bool {
		return slices.ContainsFunc(poisoned, func(p place) bool { return p.X == x && p.Z == z })
	}
	// Everything rtp had cached and knew is then forgotten (a scan reset),
	// so it screens the whole region again while the lava is still not
	// on disk: the chunks reported must not be screened from the stale
	// copy. Every place it then caches is drawn and checked.
	call(t, rtpURL, "POST", "/v1/admin/regions/default/scan/reset", "", http.StatusNoContent)
	waitUntil(t, "rtp to fill its general sink again", 120*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.fill("general") >= 40
	})
	drawn := 0
	for i := range 400 {
		loc, status := teleport(t, rtpURL, "after"+strconv.Itoa(i))
		if status != http.StatusOK {
			break
		}
		drawn++
		switch {
		case isPoisoned(loc.X, loc.Z):
			t.Errorf("rtp handed out %d, %d, whose ground is lava, %v after the change", loc.X, loc.Z, time.Since(changed))
		case chunks[[2]int{loc.X >> 4, loc.Z >> 4}]:
			// Its chunk changed and is not saved: rtp read it from the
			// stale copy on disk.
			t.Errorf("rtp handed out %d, %d, in a chunk changed and not saved, %v after the change", loc.X, loc.Z, time.Since(changed))
		}
		call(t, rtpURL, "POST", "/v1/teleports/"+strconv.FormatUint(loc.ID, 10)+"/complete", "", http.StatusNoContent)
	}
	if drawn < 40 {
		t.Errorf("only %d places drawn after the reset", drawn)
	}
	waitUntil(t, "rtp to fill its general sink after the draws", 120*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.fill("general") >= bots
	})
	for _, r := range b.run(t, map[string]any{"cmd": "rtp", "rounds": 1}, time.Minute) {
		if r.Error != "" || r.Message != "" {
			t.Errorf("after the lava, %s: %s%s", r.Bot, r.Error, r.Message)
		} else if isPoisoned(int(math.Floor(r.X)), int(math.Floor(r.Z))) || r.Fluid != "" || r.Damage > 0 {
			t.Errorf("after the lava, %s was sent to %.1f, %.1f (fluid %q, damage %v)", r.Bot, r.X, r.Z, r.Fluid, r.Damage)
		}
	}
	if st, err := stats(rtpURL); err != nil || st.Watch.Held == 0 {
		t.Errorf("no chunk held while the lava is not saved: %+v, %v", st.Watch, err)
	}

	// 3. rtp stops, then starts again; the server runs on. The lava is
	// saved first: what rtp holds does not outlive it.
	if _, err := io.WriteString(mc.in, "save\n"); err != nil {
		t.Fatal(err)
	}
	mc.await(t, "saved", 30*time.Second)
	waitUntil(t, "rtp to see the save and end its holds", 90*time.Second, func() bool {
		st, err := stats(rtpURL)
		return err == nil && st.Watch.Held == 0
	})
	_ = rtp.Process.Signal(syscall.SIGTERM)
	_ = rtp.Wait()
	ticks := mc.tick(t)
	for _, r := range b.run(t, map[string]any{"cmd": "rtp", "rounds": 1}, time.Minute) {
		if r.Message != msgUnavailable {
			t.Errorf("with rtp down, %s: message %q, error %q; want %q", r.Bot, r.Message, r.Error, msgUnavailable)
		}
	}
	// The bots' round may take less than one tick (50 ms) when rtp
	// refuses connections at once: the server keeps ticking when its count
	// goes on within a few seconds.
	now := ticks
	deadline := time.Now().Add(5 * time.Second)
	for now <= ticks+2 && time.Now().Before(deadline) {
		now = mc.tick(t)
	}
	if now <= ticks+2 {
		t.Errorf("the server stopped ticking while rtp was down: %d ticks, then %d 5 s later", ticks, now)
	}
	startRTP()
	for _, r := range b.run(t, map[string]any{"cmd": "rtp", "rounds": 1}, time.Minute) {
		if r.Error != "" || r.Message != "" || !r.OnGround {
			t.Errorf("after rtp restarted, %s: %s%s (on the ground %v)", r.Bot, r.Error, r.Message, r.OnGround)
		}
	}
}

// place is what rtp hands out (the fields the test uses).
type place struct {
	ID      uint64 `json:"id"`
	X, Y, Z int
}

// report is one line of test/bots.js.
type report struct {
	Event, Bot, Cmd string
	Round           int
	X, Y, Z         float64
	OnGround        bool
	LandMs          int64
	Damage          float64
	Fluid, Ground   string
	Message, Error  string
	Count           int64
	Bots            int
	Party           bool
}

// proc is a Node process of the test, its JSON lines on a channel.
type proc struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan report
	stderr *lockedBuffer
}

func startNode(t *testing.T, node, name, script string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, lines: make(chan report, 256), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, p.stderr.tail(4000))
		}
	})
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			// flying-squid's console prompt may come first on a line.
			line := sc.Bytes()
			i := bytes.IndexByte(line, '{')
			if i < 0 {
				continue
			}
			var r report
			if json.Unmarshal(line[i:], &r) == nil && r.Event != "" {
				p.lines <- r
			}
		}
	}()
	return p
}

// await waits for the event, failing on an "error" event, the end of the
// process or the timeout.
func (p *proc) await(t *testing.T, event string, timeout time.Duration) report {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s ended before %q:\n%s", p.name, event, p.stderr.tail(4000))
			}
			if r.Event == "error" {
				t.Fatalf("%s: %s", p.name, r.Error)
			}
			if r.Event == event {
				return r
			}
		case <-timer.C:
			t.Fatalf("%s: no %q within %v:\n%s", p.name, event, timeout, p.stderr.tail(4000))
		}
	}
}

// run sends a command to the bots and returns the teleports reported
// until it is done.
func (p *proc) run(t *testing.T, cmd map[string]any, timeout time.Duration) []report {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	var out []report
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-p.lines:
			switch {
			case !ok:
				t.Fatalf("%s ended during %v:\n%s", p.name, cmd, p.stderr.tail(4000))
			case r.Event == "error":
				t.Fatalf("%s: %s", p.name, r.Error)
			case r.Event == "teleport":
				out = append(out, r)
			case r.Event == "done":
				return out
			}
		case <-timer.C:
			t.Fatalf("%s: %v not done within %v", p.name, cmd, timeout)
		}
	}
}

// tick asks the server for its tick count.
func (p *proc) tick(t *testing.T) int64 {
	t.Helper()
	if _, err := io.WriteString(p.in, "tick\n"); err != nil {
		t.Fatal(err)
	}
	return p.await(t, "tick", 10*time.Second).Count
}

// rtpStats is the part of GET /v1/regions/default/stats the test reads.
type rtpStats struct {
	Pipeline struct {
		Sinks []struct {
			Name     string `json:"name"`
			Kind     string `json:"kind"`
			Fill     int    `json:"fill"`
			Capacity int    `json:"capacity"`
			Group    *struct {
				Players uint64 `json:"players"`
			} `json:"group"`
		} `json:"sinks"`
	} `json:"pipeline"`
	Watch struct {
		Reported uint64 `json:"reported"`
		Held     int    `json:"held"`
	} `json:"watch"`
}

func (s rtpStats) fill(sink string) int {
	for _, k := range s.Pipeline.Sinks {
		if k.Name == sink {
			return k.Fill
		}
	}
	return 0
}

// groupFill is the subspaces ready in the group sink.
func (s rtpStats) groupFill() int {
	n := 0
	for _, k := range s.Pipeline.Sinks {
		if k.Kind == "group" {
			n += k.Fill
		}
	}
	return n
}

// groupServed is the places the group sink handed out.
func (s rtpStats) groupServed() uint64 {
	var n uint64
	for _, k := range s.Pipeline.Sinks {
		if k.Group != nil {
			n += k.Group.Players
		}
	}
	return n
}

func (s rtpStats) capacity(sink string) int {
	for _, k := range s.Pipeline.Sinks {
		if k.Name == sink {
			return k.Capacity
		}
	}
	return -1
}

func stats(base string) (rtpStats, error) {
	var st rtpStats
	res, err := http.Get(base + "/v1/regions/default/stats")
	if err != nil {
		return st, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("stats: %s", res.Status)
	}
	return st, json.NewDecoder(res.Body).Decode(&st)
}

// teleport asks rtp for a place for player; it returns the place and the
// status.
func teleport(t *testing.T, base, player string) (place, int) {
	t.Helper()
	body := call(t, base, "POST", "/v1/regions/default/teleports", `{"player":"`+player+`","waitMs":1000}`, 0)
	var p place
	if body.status == http.StatusOK {
		if err := json.Unmarshal(body.data, &p); err != nil {
			t.Fatal(err)
		}
	}
	return p, body.status
}

type answer struct {
	status int
	data   []byte
}

// call does one request with the admin token; want, when not 0, is the
// status it must answer.
func call(t *testing.T, base, method, path, body string, want int) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("X-RTP-Request", "1")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if want != 0 && res.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, res.StatusCode, data, want)
	}
	return answer{res.StatusCode, data}
}

// waitUntil waits until cond holds, failing t when timeout passes first.
// The bounds are generous: the test runs beside every other package's on
// two cores, and a bound only costs time when the test fails.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	eventually.True(t, timeout, what, cond)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// quantile returns the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
