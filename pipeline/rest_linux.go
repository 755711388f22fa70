//go:build linux

package pipeline

import (
	"syscall"
	"time"
)

// rest sleeps d in a nanosleep system call, precise to tens of
// microseconds. time.Sleep is not, for the rests of a paced Gate: a Go
// process whose goroutines all sleep waits in its network poller, whose
// timeout is whole milliseconds, so a rest of 150 us lasts up to 1 ms
// (0.5 ms on average under load) and a lane meant to run a quarter of
// the time runs a tenth, too little for the refill to keep pace with
// demand. The goroutine's thread blocks in the kernel meanwhile, and its
// processor is free to any other goroutine (as in any blocking system
// call).
func rest(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		// A signal (the runtime's preemption, say) cuts it short: sleep
		// the rest.
		if err := syscall.Nanosleep(&ts, &left); err != syscall.EINTR {
			return
		}
		ts = left
	}
}
