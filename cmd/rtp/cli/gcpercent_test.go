package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live  uint64
		pct   int
		floor uint64
		want  int
	}{
		{240 * mib, 25, 64 * mib, 27}, // a quarter is 60 MiB: the floor wins, just
		{512 * mib, 25, 64 * mib, 25}, // a quarter is 128 MiB
		{32 * mib, 25, 64 * mib, 200}, // a small heap grows by the floor
		{1, 25, 64 * mib, 1600},       // the runtime's minimum goal is the floor
		{2 * mib, 25, 64 * mib, 1650}, // likewise: 4 MiB * 16.5 = 2 + 64 MiB
		{8 * mib, 25, 64 * mib, 800},  // past 4 MiB the percent gives the floor
		{0, 25, 64 * mib, 25},         // nothing measured yet
		{100 * mib, 25, 0, 25},        // no floor
	} {
		if got := gcPercentFor(tc.live, tc.pct, tc.floor); got != tc.want {
			t.Errorf("gcPercentFor(%d, %d, %d) = %d, want %d", tc.live, tc.pct, tc.floor, got, tc.want)
		}
	}
}

// fakeGC stands for the runtime's live heap and target.
type fakeGC struct {
	mu   sync.Mutex
	live uint64
	pct  int
	sets []int
}

func (f *fakeGC) liveBytes() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.live }

func (f *fakeGC) set(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.pct
	f.pct = p
	f.sets = append(f.sets, p)
	return old
}

func (f *fakeGC) target() (int, int) { f.mu.Lock(); defer f.mu.Unlock(); return f.pct, len(f.sets) }

func unsetGOGC(t *testing.T) {
	if v, set := os.LookupEnv("GOGC"); set {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
}

// TestGCTuner: the tuner sets the target at once, again after each
// collection as the live heap changes, and restores the old one when
// stopped, after which collections change nothing.
func TestGCTuner(t *testing.T) {
	unsetGOGC(t)
	f := &fakeGC{live: 512 << 20, pct: 100}
	restore := startGCTuner(&gcTuner{pct: 25, floor: 64 << 20, live: f.liveBytes, set: f.set})
	if p, _ := f.target(); p != 25 {
		t.Fatalf("target after start = %d, want 25", p)
	}
	f.mu.Lock()
	f.live = 32 << 20
	f.mu.Unlock()
	eventually.True(t, 10*time.Second, "the target follows the live heap after a collection", func() bool {
		runtime.GC()
		p, _ := f.target()
		return p == 200
	})
	restore()
	p, n := f.target()
	if p != 100 {
		t.Fatalf("target after stop = %d, want the previous 100", p)
	}
	f.mu.Lock()
	f.live = 1 << 30
	f.mu.Unlock()
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // room for a cleanup to run, if one would
	}
	if p2, n2 := f.target(); p2 != p || n2 != n {
		t.Fatalf("target changed to %d (%d sets) after stop, want %d (%d sets)", p2, n2, p, n)
	}
}

// TestGCTunerRealTarget: with the runtime's own live heap and target,
// the target while serving is what gcPercentFor gives, and is restored.
func TestGCTunerRealTarget(t *testing.T) {
	unsetGOGC(t)
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	runtime.GC()
	restore := startGCTuner(&gcTuner{pct: 25, floor: 64 << 20})
	p := debug.SetGCPercent(-2) // reads it; -2 is not a value the tuner sets
	debug.SetGCPercent(p)
	restore()
	if want := gcPercentFor(liveHeap(), 25, 64<<20); p != want {
		t.Errorf("GC percent while serving = %d, want %d for a live heap of %d bytes", p, want, liveHeap())
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after restore = %d, want the previous 100", got)
	}
}

// TestGCTunerRealGoal: with the runtime's own live heap, a small one as a
// test binary's, the heap goal while serving is the live heap and the
// floor, not the gigabytes the runtime's minimum goal would make of the
// floor's large percent. The heap must not grow unchecked while a server
// fills its caches.
func TestGCTunerRealGoal(t *testing.T) {
	unsetGOGC(t)
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	runtime.GC()
	const floor = 64 << 20
	restore := startGCTuner(&gcTuner{pct: 25, floor: floor})
	defer restore()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	base := liveHeap() // live, stacks and globals
	if live >= floor {
		t.Skipf("the test binary's live heap (%d bytes) is past the floor: the floor's bound is not exercised", live)
	}
	// The goal is live plus the floor; allow a percent of rounding.
	if lo, hi := live+floor*99/100, base+floor+floor/100; goal < lo || goal > hi {
		t.Errorf("heap goal %d bytes with %d live (%d with stacks and globals), want live + the %d floor (%d to %d)",
			goal, live, base, uint64(floor), lo, hi)
	}
}

// TestGCTunerGOGCSet: an operator's GOGC wins: nothing is changed.
func TestGCTunerGOGCSet(t *testing.T) {
	t.Setenv("GOGC", "200")
	f := &fakeGC{live: 512 << 20, pct: 200}
	restore := startGCTuner(&gcTuner{pct: 25, floor: 64 << 20, live: f.liveBytes, set: f.set})
	runtime.GC()
	restore()
	if p, n := f.target(); p != 200 || n != 0 {
		t.Errorf("with GOGC set the target became %d after %d sets, want 200 untouched", p, n)
	}
}
