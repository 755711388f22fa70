//go:build !linux

package pacer

import "time"

// rester rests one lane of a paced Gate. Outside Linux it is time.Sleep,
// which parks the goroutine (its processor free to others) but may
// oversleep a short rest up to the Go poller's millisecond (see
// rest_linux.go for the Linux rester).
type rester struct{}

func newRester() *rester { return nil }

func (*rester) rest(d time.Duration) { time.Sleep(d) }
