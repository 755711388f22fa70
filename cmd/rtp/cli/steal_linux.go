//go:build linux

package cli

import (
	"os"
	"time"
)

// readSteal returns the processor time the hypervisor has taken from
// this machine since boot.
func readSteal() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseSteal(data)
}
