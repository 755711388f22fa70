package pipeline

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/memory"
)

// Recovery is what a Persister's Load found of the previous run.
type Recovery struct {
	// Unclean reports that the previous run did not shut down in order
	// (it was killed, or crashed): its last writes may be lost.
	Unclean bool
	// Discarded are the rows that were hot when the previous run ended
	// uncleanly, one Location per row, which Load deleted rather than
	// restored: each may have been handed out after the last commit that
	// reached the disk, so serving it again could deliver one place twice.
	// Empty after a clean shutdown.
	Discarded []Location
}

// Mark is one rejection recorded in a region's spatial memory, as a
// Journal keeps it.
type Mark struct {
	// Seq orders the marks of a Journal; Record assigns it.
	Seq    uint64
	Index  int64
	Cause  memory.Cause
	Source string
	// At is when the rejection was recorded: replaying it with
	// memory.Table.AddBadAt keeps its original expiry.
	At time.Time
}

// Spot is one column handed out, for unique placement.
type Spot struct {
	X, Z int64
	At   time.Time // the latest hand-out of the column
}

// Journal keeps, beside a region's locations and through the same writer,
// what the region's spatial memory and placements learnt since the last
// snapshot of the memory file: a rejection or a spot recorded is committed
// in the batch of the location writes around it, so a process killed
// loses at most one batch delay of them. The memory file stays the
// snapshot; after a save the region trims the marks it covers.
//
// Record, Trim and Claim never wait for the disk. Implementations are safe
// for concurrent use.
type Journal interface {
	// Record queues a mark (its Seq is ignored) and returns the sequence
	// number it was given.
	Record(m Mark) uint64
	// Position returns the sequence number of the last mark recorded
	// (by any region of the store): a snapshot taken after Position
	// returns covers every mark up to it.
	Position() uint64
	// Trim queues the deletion of this region's marks up to seq.
	Trim(seq uint64)
	// Marks returns this region's marks not trimmed, in Seq order, once
	// everything queued before the call is durable.
	Marks(ctx context.Context) ([]Mark, error)
	// Claim queues a spot; a later claim of the same column moves its
	// time forward.
	Claim(s Spot)
	// TrimSpots queues the deletion of this region's spots claimed
	// before before: unique placement no longer needs them, and the
	// journal would otherwise grow with every hand-out.
	TrimSpots(before time.Time)
	// Spots returns this region's spots claimed at or after since, once
	// everything queued before the call is durable, and deletes the older
	// ones.
	Spots(ctx context.Context, since time.Time) ([]Spot, error)
}

// hotResult is the outcome of awaitHot.
type hotResult int

const (
	hotDurable hotResult = iota // the entry may be served
	hotDemote                   // not now: back to cold
	hotForeign                  // never: the row is another node's
)

// awaitHot marks loc's row hot through the Persister and waits until that
// is durable, so that no entry is served from a sink before the disk knows
// it may have been: after a crash such rows are discarded, never restored
// (see Recovery). The wait is one commit of the Persister's writer: a few
// milliseconds for an urgent mark, the next batch of writes for the
// others (see Persister.MarkHot). A mark that could not be made durable
// (the disk fails) still lets the entry through, unless the Persister is
// shared by a fleet (strictPersister): a local Persister logs the failure
// and keeps retrying, and withholding places would not make the rows it
// cannot write any safer, while a shared one may see the row handed to
// another node. A mark refused with ErrNotOwned drops the entry (see
// ErrNotOwned). It demotes when ctx ends or the pipeline is unloading.
func (p *Pipeline) awaitHot(ctx context.Context, loc Location, urgent bool) hotResult {
	if p.opts.Persister == nil {
		return hotDurable
	}
	if p.detached.Load() {
		return hotDemote
	}
	done := make(chan error, 1)
	p.opts.Persister.MarkHot(loc, urgent, func(err error) { done <- err })
	select {
	case err := <-done:
		return p.hotResultOf(err)
	case <-ctx.Done():
		return hotDemote
	}
}

// hotResultOf is the outcome of a hot mark whose commit reported err.
func (p *Pipeline) hotResultOf(err error) hotResult {
	switch {
	case err == nil:
		return hotDurable
	case errors.Is(err, ErrNotOwned):
		return hotForeign
	case p.strictHot():
		return hotDemote
	}
	return hotDurable
}

// onHot is awaitHot without a goroutine waiting: it marks loc's row hot
// and calls then with the outcome once the mark's commit is done, or
// with hotDemote once the pipeline closes. then runs once, on the
// Persister's goroutine (which calls every mark's back after a commit,
// so it must be quick and never block), at once on the caller's without
// a Persister or once detached, or on a goroutine of its own at Close.
// The wait is work of the pipeline: Settle and Close wait for it.
//
// A promotion used to wait for its mark in awaitHot. Under a steady
// demand each commit then woke every promotion it carried at once, a
// tenth of a second's worth, and they crowded the processors' run queues
// ahead of the requests that came meanwhile.
func (p *Pipeline) onHot(loc Location, urgent bool, then func(hotResult)) {
	if p.opts.Persister == nil {
		then(hotDurable)
		return
	}
	if p.detached.Load() {
		then(hotDemote)
		return
	}
	p.startWork()
	var once atomic.Bool
	finish := func(r hotResult) {
		if !once.Swap(true) {
			defer p.endWork()
			then(r)
		}
	}
	stop := context.AfterFunc(p.base, func() { finish(hotDemote) })
	p.opts.Persister.MarkHot(loc, urgent, func(err error) {
		stop()
		finish(p.hotResultOf(err))
	})
}
