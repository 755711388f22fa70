//go:build linux

package cli

import (
	"os"
	"strconv"
)

// readKernelThreads returns the processor time of every kernel thread
// now, by process id, from /proc. A thread that ends while it is read is
// skipped; a stat that cannot be parsed is an error.
func readKernelThreads() (map[int]threadTime, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]threadTime{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile, or hidden from us
		}
		t, kernel, err := parseKernelThread(data)
		if err != nil {
			return nil, err
		}
		if kernel {
			out[pid] = t
		}
	}
	return out, nil
}
