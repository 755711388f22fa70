//go:build !unix

package sqlitepersist_test

import "time"

// cpuTime reports no CPU time where getrusage is missing: the benchmark
// then leaves out its cpu-µs/op figure.
func cpuTime() (time.Duration, bool) { return 0, false }
