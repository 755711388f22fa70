package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Host steal: on a virtual machine the hypervisor can take processor time
// from the guest (the "steal" of /proc/stat), and a load test run while
// it does measures the host as much as the server: on a shared two-core
// machine a null server's p99 went from 0.6 ms to 9 ms in such runs. So
// bench http reports how much was stolen during its run, where the
// system tells it.

// clockTicks is the unit of /proc/stat's times: USER_HZ, 100 on every
// Linux architecture (the kernel converts to it for user space).
const clockTicks = 100

// parseSteal reads the steal time of all processors from the text of
// /proc/stat: the eighth number of its "cpu" line. A line with fewer
// numbers (a kernel before 2.6.11) has none: an error.
func parseSteal(data []byte) (time.Duration, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 9 {
			return 0, fmt.Errorf("/proc/stat: the cpu line has %d times, no steal", len(fields)-1)
		}
		ticks, err := strconv.ParseUint(fields[8], 10, 63)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: steal %q: %w", fields[8], err)
		}
		if ticks > uint64(1<<63-1)/uint64(time.Second) {
			return 0, fmt.Errorf("/proc/stat: steal %d ticks out of range", ticks)
		}
		return time.Duration(ticks) * time.Second / clockTicks, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("/proc/stat: %w", err)
	}
	return 0, errors.New("/proc/stat: no cpu line")
}

// stealMeter measures the steal over a run: start it, then call the
// function it returns. Where the system does not tell (not Linux, no
// /proc), the result is false.
func stealMeter() func() (time.Duration, bool) {
	s0, err := readSteal()
	if err != nil {
		return func() (time.Duration, bool) { return 0, false }
	}
	return func() (time.Duration, bool) {
		s1, err := readSteal()
		if err != nil || s1 < s0 {
			return 0, false
		}
		return s1 - s0, true
	}
}
