//go:build linux

package pacer

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// rester rests one lane of a paced Gate on a timer file descriptor
// (timerfd) read through Go's network poller: the goroutine parks, its
// processor is free at once to the requests the rest makes room for, and
// the poller wakes it when the timer fires, to within microseconds.
//
// The two obvious rests each fail one of those. time.Sleep parks too,
// but a Go process whose goroutines all sleep waits in its poller with a
// timeout of whole milliseconds, so a rest of 150 us lasts up to 1 ms
// (0.5 ms on average at 1,000 teleports a second) and the paced refill
// falls behind demand. A nanosleep system call is precise, but a
// goroutine in a system call keeps its processor (P) until the runtime's
// monitor takes it back, which it does only after noticing the call on
// two of its passes, and it passes every 10 ms when it has found nothing
// to do for a while. An execution trace of rtp serve at 1,000/s on two
// processors showed it: while requests waited for a processor more than
// 0.2 ms, a quarter of the processors' time was held by refill
// goroutines inside such rests (and the writer's file writes), twice the
// time the refill spent running.
//
// A nil *rester (the timer could not be made) rests with time.Sleep.
type rester struct {
	fd int
	f  *os.File // the poller's handle on fd; closing it (or its finalizer) closes fd
}

// newRester returns a rester, or nil if the kernel refuses a timerfd.
func newRester() *rester {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor given to os.NewFile joins the poller.
	return &rester{fd: fd, f: os.NewFile(uintptr(fd), "pacer rest timer")}
}

// rest parks the calling goroutine for d. It must not be called by two
// goroutines at once (each lane has its own, used by the turn holding it).
func (r *rester) rest(d time.Duration) {
	if d <= 0 {
		return
	}
	if r == nil {
		time.Sleep(d)
		return
	}
	start := time.Now()
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(r.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return
	}
	// The read returns the 8-byte count of expirations once the timer
	// has fired; until then the poller parks the goroutine (os.File
	// retries an interrupted read itself).
	var buf [8]byte
	if n, err := r.f.Read(buf[:]); err != nil || n != len(buf) {
		// Never expected of a timerfd; rest what is left the slow way.
		time.Sleep(d - time.Since(start))
	}
}
