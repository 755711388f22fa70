package sim

import (
	"time"

	"github.com/rtpengine/rtp/memory"
)

type (
	memoryCause = memory.Cause
	durationT   = time.Duration
)

func oneDay(c memory.Cause) time.Duration {
	if c.Tier() == memory.Dynamic {
		return 24 * time.Hour
	}
	return memory.DefaultTTL(c, "")
}
