package memory

import (
	"fmt"
	"time"
)

// AddBadAt records a rejection as AddBad does, but as of the time at
// which it was first recorded (its expiry is at plus its TTL) and without
// calling Options.OnRecord: it replays a journal of the rejections
// recorded since the memory file was saved (see Options.OnRecord). A
// dynamic rejection whose TTL has already run out by the table's clock is
// skipped and reports false; so is a transient one. Replaying a rejection
// the file already holds changes nothing but the counters of Stats.
func (t *Table) AddBadAt(i int64, cause Cause, source string, at time.Time) (kept bool, err error) {
	if !cause.Valid() {
		return false, fmt.Errorf("memory: invalid cause %d", cause)
	}
	ttl := t.opts.TTL(cause, source)
	if cause.Tier() == Transient || ttl == 0 {
		return false, nil
	}
	if ttl > 0 && !at.Add(ttl).After(t.opts.Clock()) {
		return false, nil
	}
	if err := t.addBad(i, cause, source, at); err != nil {
		return false, err
	}
	return true, nil
}
