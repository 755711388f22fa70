package sqlite

import "github.com/rtpengine/rtp/internal/diskspace"

// SetDiskUsage makes the stores see the free space usage returns instead
// of the disk's, until the test ends.
func SetDiskUsage(t interface{ Cleanup(func()) }, usage func(dir string) (diskspace.Usage, error)) {
	old := diskUsageOf
	diskUsageOf = usage
	t.Cleanup(func() { diskUsageOf = old })
}
