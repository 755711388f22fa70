package pipeline

import "context"

// Gate bounds how many screenings run at once across every pipeline that
// shares it. Screening is the refill's bulk work (a chunk's summary, read
// through the archive or generated, for every candidate drawn); promotions
// are not gated: they answer demand and are bounded by MaxPromotions.
//
// A process that answers requests while it fills its caches gives its
// pipelines a gate smaller than its processor count (GOMAXPROCS), so that a
// processor is always free to answer. Without one, a burst of screening
// (terrain generated for a cold archive, say) takes every processor, and
// Go's scheduler then looks for network events only every few
// milliseconds: requests wait tens of milliseconds behind the refill that
// is meant to serve them. A nil *Gate admits everything at once.
type Gate struct {
	slots chan struct{}
}

// NewGate returns a gate admitting n at once (at least 1).
func NewGate(n int) *Gate {
	return &Gate{slots: make(chan struct{}, max(n, 1))}
}

// Size is how many the gate admits at once; 0 for a nil gate (no bound).
func (g *Gate) Size() int {
	if g == nil {
		return 0
	}
	return cap(g.slots)
}

// enter waits for a slot, or for ctx to end (its error is returned).
func (g *Gate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave gives back the slot enter took.
func (g *Gate) leave() {
	if g != nil {
		<-g.slots
	}
}
