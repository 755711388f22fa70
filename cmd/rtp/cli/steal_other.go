//go:build !linux

package cli

import (
	"errors"
	"time"
)

// readSteal: only Linux tells the steal (see steal.go).
func readSteal() (time.Duration, error) {
	return 0, errors.New("host steal is not known on this system")
}
