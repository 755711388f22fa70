//go:build !linux

package cli

import "errors"

// readKernelThreads: only Linux tells (see kthreads.go).
func readKernelThreads() (map[int]threadTime, error) {
	return nil, errors.New("kernel threads are not known on this system")
}
