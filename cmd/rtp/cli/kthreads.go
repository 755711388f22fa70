package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Kernel threads: a thread of the kernel can hold a processor for
// milliseconds without the hypervisor taking anything, so the host steal
// does not show it. On a two-core machine the kernel's DAMON memory
// monitor (kdamond) ran every half second for 1 to 5 ms, and while it did
// the server and the generator shared the other processor: the slowest
// requests of a run came in clusters half a second apart. So bench http
// also reports the processor time the kernel's threads took during its
// run, and the busiest of them.

// pfKthread is the flag (PF_KTHREAD) of /proc/PID/stat's flags field
// that marks a kernel thread.
const pfKthread = 0x00200000

// threadTime is one thread's name and its processor time (user and
// system) since it started.
type threadTime struct {
	name string
	cpu  time.Duration
}

// parseKernelThread reads the text of one /proc/PID/stat: whether it is a
// kernel thread and, if so, its name and processor time. The name is in
// parentheses and may hold spaces and parentheses itself, so the fields
// after it are counted from the last ')'.
func parseKernelThread(data []byte) (t threadTime, kernel bool, err error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return t, false, errors.New("stat: no (name)")
	}
	// After ") ": state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8)
	// flags(9) minflt(10) cminflt(11) majflt(12) cmajflt(13) utime(14)
	// stime(15): fields[0] is field 3.
	fields := bytes.Fields(data[end+1:])
	if len(fields) < 13 {
		return t, false, fmt.Errorf("stat: %d fields after the name, want at least 13", len(fields))
	}
	flags, err := strconv.ParseUint(string(fields[6]), 10, 64)
	if err != nil {
		return t, false, fmt.Errorf("stat: flags %q: %w", fields[6], err)
	}
	if flags&pfKthread == 0 {
		return t, false, nil
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseUint(string(f), 10, 63)
		if err != nil {
			return t, false, fmt.Errorf("stat: time %q: %w", f, err)
		}
		ticks += v
	}
	if ticks > uint64(1<<63-1)/uint64(time.Second) {
		return t, false, fmt.Errorf("stat: %d ticks out of range", ticks)
	}
	return threadTime{name: string(data[open+1 : end]), cpu: time.Duration(ticks) * time.Second / clockTicks}, true, nil
}

// kernelUse is what the kernel's threads took between two readings: their
// processor time in all, and the busiest thread's name and time.
type kernelUse struct {
	total       time.Duration
	busiest     string
	busiestTime time.Duration
}

// kernelDelta compares two readings of the kernel threads, by process
// id, and names each by its name in the later one (a kernel worker's
// name tells its current work, and changes). A thread that started
// between them counts from zero, as does one whose time went backwards
// (its id was reused); one that ended is left out (its last stretch is
// lost, as the system keeps no trace of it).
func kernelDelta(before, after map[int]threadTime) kernelUse {
	var u kernelUse
	for pid, a := range after {
		d := a.cpu
		if b, ok := before[pid]; ok && b.cpu <= a.cpu {
			d -= b.cpu
		}
		if d <= 0 {
			continue
		}
		u.total += d
		if d > u.busiestTime || d == u.busiestTime && a.name < u.busiest {
			u.busiest, u.busiestTime = a.name, d
		}
	}
	return u
}

// kernelMeter measures the kernel threads' processor time over a run:
// start it, then call the function it returns. Where the system does not
// tell (not Linux, no /proc), the result is false.
func kernelMeter() func() (kernelUse, bool) {
	k0, err := readKernelThreads()
	if err != nil {
		return func() (kernelUse, bool) { return kernelUse{}, false }
	}
	return func() (kernelUse, bool) {
		k1, err := readKernelThreads()
		if err != nil {
			return kernelUse{}, false
		}
		return kernelDelta(k0, k1), true
	}
}
