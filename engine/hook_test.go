package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// handoutLog records what a hand-out hook is called with.
type handoutLog struct {
	mu   sync.Mutex
	locs []engine.Location
	at   []time.Time
}

func (l *handoutLog) hook(loc engine.Location, at time.Time) {
	l.mu.Lock()
	l.locs = append(l.locs, loc)
	l.at = append(l.at, at)
	l.mu.Unlock()
}

func (l *handoutLog) got() ([]engine.Location, []time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.locs), slices.Clone(l.at)
}

// TestOnHandout: every subscribed hook sees each location a teleport or a
// group teleport returns, as returned, dated on the engine's clock, until
// its subscription ends.
func TestOnHandout(t *testing.T) {
	e := newEngine(t, testConfig(t))
	run(t, e)
	e.OnHandout(nil)() // subscribes nothing
	var a, b handoutLog
	stopA := e.OnHandout(a.hook)
	stopB := e.OnHandout(b.hook)

	before := time.Now()
	loc := teleport(t, e, engine.Request{Player: "alice"})
	after := time.Now()
	for name, l := range map[string]*handoutLog{"a": &a, "b": &b} {
		locs, at := l.got()
		if len(locs) != 1 || locs[0] != loc {
			t.Fatalf("hook %s saw %+v, want [%+v]", name, locs, loc)
		}
		if at[0].Before(before) || at[0].After(after) {
			t.Errorf("hook %s dated the hand-out %v, want within [%v, %v]", name, at[0], before, after)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	group, err := e.GroupTeleport(ctx, config.DefaultRegionName, engine.GroupRequest{Players: []string{"bob", "carol"}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Location{loc, group[0].Location, group[1].Location}
	if locs, _ := a.got(); !slices.Equal(locs, want) {
		t.Fatalf("after a group teleport hook a saw %+v, want %+v", locs, want)
	}

	stopA()
	stopA() // harmless
	loc2 := teleport(t, e, engine.Request{Player: "dave"})
	if locs, _ := a.got(); len(locs) != 3 {
		t.Errorf("an unsubscribed hook saw %+v", locs[3:])
	}
	if locs, _ := b.got(); len(locs) != 4 || locs[3] != loc2 {
		t.Errorf("hook b saw %+v, want 4 ending with %+v", locs, loc2)
	}
	stopB()
	teleport(t, e, engine.Request{Player: "erin"})
	if locs, _ := b.got(); len(locs) != 4 {
		t.Errorf("an unsubscribed hook saw %+v", locs[4:])
	}
}
