package pipeline

import (
	"errors"

	"github.com/rtpengine/rtp/memory"
)

// ErrExhausted: nothing was ready and the request's Exhausted flag was
// set, so it did not wait (see Request.Exhausted).
var ErrExhausted = errors.New("pipeline: region exhausted")

// rejected records a rejection of index in memory (see remember) and, when
// memory keeps it, parks the index (see heldSet) so that no draw picks it
// again before memory's selection sees the rejection. The caller then
// disposes of the entry through its stage, which releases nothing more.
func (p *Pipeline) rejected(index int64, c memory.Cause, source string) {
	p.remember(index, c, source)
	if m := p.opts.Memory; m.Remembers(c, source) {
		p.held.park(index, m.Generation)
	}
}

// Holding returns how many chunks have a location in the pipeline now,
// from the draw of the candidate (screening included) through cold,
// promotion and the hot sinks (network leases included) to its hand-out:
// zero means the pipeline holds nothing to serve and is working on
// nothing. Indices kept from draws only until memory's selection sees
// their rejection are not counted. It takes one lock and does no I/O.
func (p *Pipeline) Holding() int {
	p.held.sweep()
	return p.held.len()
}
