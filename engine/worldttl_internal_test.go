package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/ttl"
)

// TestWatchedTTL: on a watched world ungenerated and unreadable are kept
// until the chunk changes unless ttl.yml sets them; every other cause,
// and an unwatched world, resolve as the policy says.
func TestWatchedTTL(t *testing.T) {
	var e Engine
	e.policy.Store(ttl.Default())
	for _, c := range []memory.Cause{memory.CauseUngenerated, memory.CauseUnreadable} {
		if d := e.watchedTTL(c, ""); d >= 0 {
			t.Errorf("watched %v: TTL %v, want permanent", c, d)
		}
		if d := e.ttl(c, ""); d <= 0 {
			t.Errorf("unwatched %v: TTL %v, want the timed default", c, d)
		}
	}
	for _, c := range []memory.Cause{memory.CauseSafety, memory.CauseUniquePlacement, memory.CauseSafetyExternal, memory.CauseTimeout, memory.CauseNullChunk} {
		if w, u := e.watchedTTL(c, "claims"), e.ttl(c, "claims"); w != u {
			t.Errorf("%v: watched TTL %v, unwatched %v; want the same", c, w, u)
		}
	}
	p, err := ttl.Load(strings.NewReader("causes:\n  ungenerated: 5m\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.policy.Store(p)
	if d := e.watchedTTL(memory.CauseUngenerated, ""); d != 5*time.Minute {
		t.Errorf("ttl.yml causes.ungenerated 5m: watched TTL %v", d)
	}
	if d := e.watchedTTL(memory.CauseUnreadable, ""); d >= 0 {
		t.Errorf("unreadable without an entry: watched TTL %v, want permanent", d)
	}
}

// TestForgetWorldData forgets the ungenerated and unreadable runs of a
// table, and nothing else.
func TestForgetWorldData(t *testing.T) {
	var e Engine
	e.policy.Store(ttl.Default())
	mem, err := memory.New(memory.Options{Len: 100, TTL: e.watchedTTL})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		must(t, mem.AddBad(i, memory.CauseUngenerated, ""))
		must(t, mem.AddBad(20+i, memory.CauseUnreadable, ""))
		must(t, mem.AddBad(40+i, memory.CauseSafety, ""))
	}
	mem.Rebuild()
	for _, r := range mem.Snapshot().Runs {
		if r.Expires != 0 {
			t.Errorf("run %+v expires: want every run static", r)
		}
	}
	if n := forgetWorldData(mem); n != 20 {
		t.Errorf("forgot %d cells, want 20", n)
	}
	for i := range int64(60) {
		if want := i >= 40 && i < 50; mem.IsBad(i) != want {
			t.Errorf("cell %d bad %v, want %v", i, mem.IsBad(i), want)
		}
	}
	if n := forgetWorldData(mem); n != 0 {
		t.Errorf("forgot %d cells the second time, want 0", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
