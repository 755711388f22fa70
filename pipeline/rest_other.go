//go:build !linux

package pipeline

import "time"

// rest sleeps d (see rest_linux.go for why Linux uses nanosleep).
func rest(d time.Duration) { time.Sleep(d) }
