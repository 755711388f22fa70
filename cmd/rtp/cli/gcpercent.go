package cli

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is the garbage collector's target (GOGC) rtp serve runs
// with unless the environment sets GOGC.
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
// Measured under the load test (1,000 teleports a second for 15 s just
// after the hot sinks filled, two cores, three alternated runs each):
// minor page faults 50,000 at 100, 20,000 at 50, 5,000 at 25; the
// process's processor time 6.3 s, 5.3 s and 4.7 s.
const serveGCPercent = 25

// applyServeGCPercent sets the collector's target to pct unless the
// environment's GOGC chose one (an operator's setting wins), and returns
// the function that restores the previous target.
func applyServeGCPercent(pct int) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(pct)
	return func() { debug.SetGCPercent(old) }
}
