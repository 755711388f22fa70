package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// serveGCPercent and serveGCFloor are the garbage collector's target
// (GOGC) rtp serve runs with unless the environment sets GOGC: the heap
// grows by serveGCPercent of its live size between collections, but
// never by less than serveGCFloor bytes.
//
// A server's heap is mostly long-lived: the world's tile cache, the
// resident chunk of every ready place, the queues and the spatial memory,
// a few hundred MiB under the load-test configuration, against some tens
// of MiB a second of short-lived allocations (a chunk per promotion, the
// requests). With Go's default of 100 the heap grows to twice its live
// size before each collection, so after a start every allocation for the
// first hundreds of MiB lands on memory the process never touched, and the
// first write to each page is a page fault. On a virtual machine whose
// host backs memory lazily such a fault costs tens of microseconds, and
// it is paid by whichever goroutine allocates: a request as often as the
// refill. At 25 the heap grows by a quarter between collections, which
// reuse the memory already touched, and each collection marks little,
// the long-lived part being mostly pointer-free (tiles, chunk columns).
//
// The floor keeps a small heap from collecting all the time: a fresh
// server generating terrain allocates fast while it holds little, and a
// quarter of a few tens of MiB would collect every few milliseconds.
//
// Measured under the load test (1,000 teleports a second for 15 s just
// after the hot sinks filled, two cores, alternated runs): minor page
// faults 46,000 to 52,000 at 100, 3,500 to 6,200 at a plain 25 and
// 11,700 to 25,000 with the floor as first written; the process's
// processor time 6.0 to 6.5 s, 5.2 to 6.3 s and 5.6 to 6.0 s. That floor
// let the heap of a server just started grow unchecked (see
// gcPercentFor); bounded, it keeps the resident set some 40 MiB lower
// and the runtime's scavenger idle while requests come, and the p99
// fell from 2.70 to 2.02 ms (medians of five alternated rounds; see
// benchmarks/profiles, eighth pass). A floor of 32 MiB instead of 64
// then did better again: under the load test a quarter of the live heap
// is more than 32 MiB, so the heap is 18 MiB smaller, and the p99 fell
// in each of five paired rounds (median 2.21 to 1.84 ms), with no more
// processor time; a fresh server's tail at 20/s and 100/s was unchanged.
// On the machine measured, the tail follows the memory a process keeps
// mapped more than how often it collects.
const (
	serveGCPercent = 25
	serveGCFloor   = 32 << 20
)

// runtimeHeapMinimum is the runtime's smallest heap goal at a target of
// 100 (its defaultHeapMinimum): it scales that minimum with the target,
// so a target of p never lets the heap collect below
// runtimeHeapMinimum*p/100 bytes, whatever it holds live.
const runtimeHeapMinimum = 4 << 20

// gcPercentFor returns the collector's target that lets a heap of live
// bytes grow by pct percent of it, or by floor bytes if that is more.
//
// live is what the runtime scales the target by: the heap the last
// collection marked, with the stacks and globals it scanned. The floor's
// target is bounded so that the runtime's minimum goal, which grows with
// the target, stays within live+floor: without the bound a small heap
// (a server just started holds a few MiB) got a target in the tens of
// thousands, and so a minimum goal of gigabytes. A server then grew its
// heap unchecked while it filled its caches (to some 450 MiB under the
// load test, against 260 once filled), and the runtime spent the next
// minute handing the surplus back to the system a few MiB at a time,
// while it answered requests.
func gcPercentFor(live uint64, pct int, floor uint64) int {
	if live == 0 {
		return pct
	}
	need := (floor*100 + live - 1) / live // the percent that gives floor
	if most := (live + floor) * 100 / runtimeHeapMinimum; need > most {
		need = most // the minimum goal is then live+floor
	}
	if need > 1<<20 {
		need = 1 << 20
	}
	return max(pct, int(need))
}

// gcTuner sets the collector's target after every collection from the
// live heap it measured (see gcPercentFor). Start it with startGCTuner.
type gcTuner struct {
	pct   int
	floor uint64
	live  func() uint64 // the live heap after the last collection (see gcPercentFor)
	set   func(int) int // debug.SetGCPercent in a server
	mu    sync.Mutex    // guards done, last and the calls of set
	done  bool          // stopped: no more tuning
	last  int           // the target last set
}

// sentinel is the object whose collection marks the end of a cycle. It
// holds a pointer so that the tiny allocator never batches it with
// others (a batched object may never be collected alone).
type sentinel struct {
	_ *int
	_ [2]uintptr
}

// arm allocates a sentinel whose cleanup, run once a collection has
// found it unreachable, tunes and arms the next one.
func (t *gcTuner) arm() {
	s := new(sentinel)
	runtime.AddCleanup(s, func(t *gcTuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets the target for the live heap now; false once stopped.
func (t *gcTuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	if p := gcPercentFor(t.live(), t.pct, t.floor); p != t.last {
		t.set(p)
		t.last = p
	}
	return true
}

// stop ends the tuning; it returns once no call of set is under way.
func (t *gcTuner) stop() {
	t.mu.Lock()
	t.done = true
	t.mu.Unlock()
}

// liveHeap reads what the runtime scales its target by after the last
// collection: the heap it marked, the stacks and the globals it scanned.
func liveHeap() uint64 {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	return n
}

// startGCTuner tunes the collector with t (its live and set filled in
// for a real process when nil) from now until the returned function is
// called, which restores the target in force before. When the
// environment sets GOGC it does nothing: an operator's setting wins.
func startGCTuner(t *gcTuner) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	if t.live == nil {
		t.live = liveHeap
	}
	if t.set == nil {
		t.set = debug.SetGCPercent
	}
	gcTuners.Lock()
	t.mu.Lock()
	t.last = gcPercentFor(t.live(), t.pct, t.floor)
	if old := t.set(t.last); gcTuners.n == 0 {
		gcTuners.old = old
	}
	gcTuners.n++
	t.mu.Unlock()
	gcTuners.Unlock()
	t.arm()
	return func() {
		t.stop()
		gcTuners.Lock()
		defer gcTuners.Unlock()
		if gcTuners.n--; gcTuners.n == 0 {
			t.set(gcTuners.old)
		}
	}
}

// gcTuners counts the tuners running in the process (servers run in one
// process by tests) and keeps the target in force before the first: the
// last to stop restores it.
var gcTuners struct {
	sync.Mutex
	n, old int
}
