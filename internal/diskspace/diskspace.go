// Package diskspace reports how much room the file system holding a
// directory has left, so that the stores can yield before the disk fills
// and say "disk full" in words when it has.
package diskspace

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by Of where the system cannot tell.
var ErrUnsupported = errors.New("diskspace: not supported on this system")

// Usage is the room of one file system, in bytes.
type Usage struct {
	// Free is what an unprivileged process may still write.
	Free uint64
	// Total is the file system's size.
	Total uint64
}

// Of returns the usage of the file system holding dir. It fails with
// ErrUnsupported where the system cannot tell, and with the system's error
// when dir cannot be examined.
func Of(dir string) (Usage, error) {
	u, err := of(dir)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return Usage{}, fmt.Errorf("diskspace: %s: %w", dir, err)
	}
	return u, err
}

// Floor is the free space a store that can give way keeps for others: the
// smaller of percent of the file system's size and bytes. A zero or
// negative bound does not count; with both so, Floor is 0.
func Floor(u Usage, percent float64, bytes int64) uint64 {
	var floor uint64
	have := false
	if percent > 0 {
		floor, have = uint64(float64(u.Total)*percent/100), true
	}
	if bytes > 0 && (!have || uint64(bytes) < floor) {
		floor = uint64(bytes)
	}
	return floor
}
