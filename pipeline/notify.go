package pipeline

import "fmt"

// notifyPromote wakes the requests waiting on sig (nil: none wait on
// that sink), then calls Options.OnPromote for sink, if set, recovering
// and logging a panic so that it cannot take a goroutine of the pipeline
// (and the process) down. The caller holds no lock.
func (p *Pipeline) notifyPromote(sink string, sig *signal) {
	if sig != nil {
		sig.notify()
	}
	f := p.opts.OnPromote
	if f == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			p.ctr.callbackPanics.Add(1)
			p.log.Error("pipeline: OnPromote panicked", "sink", sink, "panic", fmt.Sprint(r))
		}
	}()
	f(sink)
}

// notifyLanded calls OnPromote for s if an entry was transferred into it
// since the last call.
func (s *Sink) notifyLanded() {
	if s.landed.Swap(false) {
		s.p.notifyPromote(s.name, &s.sig)
	}
}

// notifyTransfers calls OnPromote once for every sink that received a
// transfer (or a returning network lease) since the last call. Pulse calls
// it after releasing pulseMu.
func (p *Pipeline) notifyTransfers() {
	for _, s := range p.singles {
		s.notifyLanded()
	}
	if p.network != nil {
		p.network.pool.notifyLanded()
	}
	for _, g := range p.groups {
		if g.landed.Swap(false) {
			p.notifyPromote(g.name, &p.groupSig)
		}
	}
}
