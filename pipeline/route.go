package pipeline

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/lease/token"
)

// Errors of Take. A Take that fails for its context returns the context's
// cause instead (context.Cause).
var (
	// ErrUnknownSink: Request.Sink names no sink of the pipeline.
	ErrUnknownSink = errors.New("pipeline: unknown sink")
	// ErrNoSink: Request.Sink names a kind of sink (login, personal,
	// network) the pipeline was built without.
	ErrNoSink = errors.New("pipeline: sink not enabled")
	// ErrNoQueue: the personal sink was asked for a player without an open
	// queue (PersonalSink.Open).
	ErrNoQueue = errors.New("pipeline: player has no open personal queue")
	// ErrTokenRequired: the network sink was asked by name; it serves by
	// Request.Token only.
	ErrTokenRequired = errors.New("pipeline: the network sink serves by token")
	// ErrPaused: nothing was ready and the request's Paused flag was set,
	// so it did not wait.
	ErrPaused = errors.New("pipeline: paused")
)

// Request is one request for a location (see Pipeline.Take). Its zero
// value, with a Player, asks for the default route.
type Request struct {
	// Player names the player the location is for (required for the
	// personal sink; the default route looks at the player's personal
	// queue first).
	Player string
	// Sink chooses the route:
	//
	//	""                  the player's personal queue when it holds an
	//	                    entry, else the general sink, waiting on it
	//	"general", its name the general sink, waiting on it
	//	"login", its name   the login reserve; when that is empty, the
	//	                    general sink, waiting on it
	//	"personal", its name the player's open personal queue, waiting on it
	//
	// The network sink serves by Token: naming it is ErrTokenRequired.
	// Default "".
	Sink string
	// Token, when set, redeems a network lease (NetworkSink.Redeem)
	// without waiting; Sink and Admit are ignored: the lease was promised.
	// Default "".
	Token token.Token
	// Admit, when set, decides whether an entry just taken may be handed
	// out (the engine's unique-placement claim). An entry it refuses is
	// closed and counted in Stats.Refused, and Take goes on to the next.
	// It must not block. Default nil: every entry is admitted.
	Admit Admitter
	// Paused, when set and true at the moment the request would wait,
	// fails it with ErrPaused instead (what is ready is still served).
	// Wake makes waiting requests look at it again. Default nil: never
	// paused.
	Paused *atomic.Bool
	// Exhausted, when set and true at the moment the request would wait,
	// fails it with ErrExhausted instead (what is ready is still served):
	// the caller's verdict that nothing will come (the engine's region
	// with no selectable place left). Wake makes waiting requests look
	// at it again. Default nil: never exhausted.
	Exhausted *atomic.Bool
	// Stop, when closed, ends a waiting request with ErrClosed (the
	// caller's shutdown). Default nil: only ctx and Close end the wait.
	Stop <-chan struct{}
	// Done is a second channel like Stop, for a caller that has its own
	// (the engine's shutdown is Stop, an HTTP server's drain Done).
	// Default nil.
	Done <-chan struct{}
	// Wait, when positive, bounds how long a miss waits, beside ctx: the
	// request then fails with context.DeadlineExceeded. Its timer starts
	// at the first wait, so a request served at once costs none (a
	// deadline on ctx costs one per request). Default 0: ctx alone
	// bounds the wait.
	Wait time.Duration
}

// Admitter decides whether an entry taken from a sink may be handed out
// (Request.Admit). It is an interface rather than a func so that a caller
// passing a pointer it holds (the engine's region) allocates nothing.
type Admitter interface {
	// Admit reports whether h may be handed out; it may record that it
	// was (a claimed spot). It must not block.
	Admit(h *Hot) bool
}

// AdmitFunc adapts a func to an Admitter.
type AdmitFunc func(h *Hot) bool

// Admit calls f(h).
func (f AdmitFunc) Admit(h *Hot) bool { return f(h) }

// Take serves one request (see Request for the routes): it takes the
// oldest ready entry of the route's sink that Admit accepts and returns it
// with the name of the sink that served it. On a miss it waits for the
// next entry that lands in that sink (a promotion, a transfer, a returning
// lease) until ctx ends, Stop closes or the pipeline closes (ErrClosed).
// The entry then belongs to the caller, who closes it (Hot.Close) or
// gives it back (Hot.Release).
//
// A hit takes no lock (the sink's ring is lock-free) and allocates
// nothing; a waiting request counts once in its sink's demand and misses.
// Take is safe for concurrent use.
func (p *Pipeline) Take(ctx context.Context, req Request) (*Hot, string, error) {
	if p.closed.Load() {
		return nil, "", ErrClosed
	}
	p.opts.Gate.Request()
	h, sink, err := p.take(ctx, &req)
	if h != nil {
		// The sink is one entry short: its replacement starts now.
		p.kick()
	}
	return h, sink, err
}

// take is Take's body.
func (p *Pipeline) take(ctx context.Context, req *Request) (*Hot, string, error) {
	if req.Token != "" {
		if p.network == nil {
			return nil, KindNetwork.String(), ErrNoSink
		}
		h, err := p.network.Redeem(req.Token)
		return h, p.network.Name(), err
	}
	var src source
	switch req.Sink {
	case "":
		if ps := p.personal; ps != nil && ps.PlayerLen(req.Player) > 0 {
			src = source{personal: ps, player: req.Player, sig: &ps.sig}
			if h, ok := p.takeAdmitted(&src, req.Admit); ok {
				return h, ps.name, nil
			}
		}
		src = source{sink: p.general, sig: &p.general.sig}
	case KindLogin.String(), p.loginName():
		l := p.login
		if l == nil {
			return nil, req.Sink, ErrNoSink
		}
		for {
			h, ok := l.Take()
			if !ok {
				break
			}
			if p.admit(h, req.Admit) {
				return h, l.name, nil
			}
		}
		src = source{sink: p.general, sig: &p.general.sig}
	case KindPersonal.String(), p.personalName():
		ps := p.personal
		if ps == nil {
			return nil, req.Sink, ErrNoSink
		}
		if !ps.IsOpen(req.Player) {
			return nil, ps.name, ErrNoQueue
		}
		src = source{personal: ps, player: req.Player, sig: &ps.sig}
	case KindNetwork.String(), p.networkName():
		return nil, req.Sink, ErrTokenRequired
	default:
		s := p.unleased(req.Sink)
		if s == nil {
			return nil, req.Sink, ErrUnknownSink
		}
		src = source{sink: s, sig: &s.sig}
	}
	return p.serve(ctx, &src, req)
}

// source is where a request takes from and waits on: an unleased sink,
// or one player's personal queue.
type source struct {
	sink     *Sink
	personal *PersonalSink
	player   string
	sig      *signal
}

func (s *source) name() string {
	if s.personal != nil {
		return s.personal.name
	}
	return s.sink.name
}

func (s *source) take() (*Hot, bool) {
	if s.personal != nil {
		return s.personal.Take(s.player)
	}
	return s.sink.Take()
}

func (s *source) ready() bool {
	if s.personal != nil {
		return s.personal.PlayerLen(s.player) > 0
	}
	return s.sink.Len() > 0
}

// serve takes from src, waiting for entries to land in it. A retry takes
// only when src holds something, so that a waiting request counts once in
// the sink's demand and misses.
func (p *Pipeline) serve(ctx context.Context, src *source, req *Request) (*Hot, string, error) {
	w := waiting{paused: req.Paused, exhausted: req.Exhausted, stop: req.Stop, done: req.Done, wait: req.Wait}
	defer w.stopTimer()
	for first := true; ; first = false {
		if first || src.ready() {
			if h, ok := p.takeAdmitted(src, req.Admit); ok {
				return h, src.name(), nil
			}
		}
		// Take the signal before looking again, so that an entry landing
		// (or a Wake) between the look and the wait is not lost.
		next := src.sig.wait()
		if src.ready() {
			continue
		}
		if err := p.await(ctx, next, &w); err != nil {
			return nil, src.name(), err
		}
	}
}

// waiting is what bounds a request's wait (Request's Paused, Exhausted,
// Stop, Done and Wait), and the timer of Wait once started.
type waiting struct {
	paused, exhausted *atomic.Bool
	stop, done        <-chan struct{}
	wait              time.Duration
	timer             *time.Timer
}

// stopTimer stops the wait's timer, if it started.
func (w *waiting) stopTimer() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// await waits, once the request found its source empty after taking the
// signal next, until next closes (an entry landed, or a Wake), and
// returns nil to look again; or it returns the error that ends the
// request: ErrPaused or ErrExhausted when the flag is set, the context's
// cause, context.DeadlineExceeded once w.wait has passed since the first
// wait, ErrClosed when Stop or Done closes or the pipeline closes.
func (p *Pipeline) await(ctx context.Context, next <-chan struct{}, w *waiting) error {
	if w.paused != nil && w.paused.Load() {
		return ErrPaused
	}
	if w.exhausted != nil && w.exhausted.Load() {
		return ErrExhausted
	}
	if w.wait > 0 && w.timer == nil {
		w.timer = time.NewTimer(w.wait)
	}
	var expired <-chan time.Time
	if w.timer != nil {
		expired = w.timer.C
	}
	select {
	case <-next:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-expired:
		return context.DeadlineExceeded
	case <-w.stop:
		return ErrClosed
	case <-w.done:
		return ErrClosed
	case <-p.base.Done():
		return ErrClosed
	}
}

// takeAdmitted takes entries from src until one is admitted or src is
// empty.
func (p *Pipeline) takeAdmitted(src *source, admit Admitter) (*Hot, bool) {
	for {
		h, ok := src.take()
		if !ok {
			return nil, false
		}
		if p.admit(h, admit) {
			return h, true
		}
	}
}

// admit applies the request's admission hook to h, closing and counting
// an entry it refuses.
func (p *Pipeline) admit(h *Hot, admit Admitter) bool {
	if admit == nil || admit.Admit(h) {
		return true
	}
	h.Close()
	p.ctr.refused.Add(1)
	return false
}

// unleased returns the unleased single-target sink a request may name
// (the general sink, by "general" or its name), or nil.
func (p *Pipeline) unleased(name string) *Sink {
	if name == KindGeneral.String() || name == p.general.name {
		return p.general
	}
	return nil
}

func (p *Pipeline) loginName() string {
	if p.login == nil {
		return KindLogin.String()
	}
	return p.login.name
}

func (p *Pipeline) personalName() string {
	if p.personal == nil {
		return KindPersonal.String()
	}
	return p.personal.name
}

func (p *Pipeline) networkName() string {
	if p.network == nil {
		return KindNetwork.String()
	}
	return p.network.Name()
}

// Wake makes every waiting Take look at its sink and its Paused and
// Exhausted flags again (call it after setting one).
func (p *Pipeline) Wake() {
	for _, s := range p.singles {
		s.sig.notify()
	}
	if p.personal != nil {
		p.personal.sig.notify()
	}
	p.groupSig.notify()
}

// signal is a broadcast without a lock: wait returns a channel that the
// next notify closes. A waiter takes the channel, then looks at the state
// it waits for, then waits: a notify between the two is not lost. The
// zero value is ready to use.
type signal struct{ ch atomic.Pointer[chan struct{}] }

func (s *signal) wait() <-chan struct{} {
	for {
		if p := s.ch.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if s.ch.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// notify wakes the current waiters. With none (no channel taken since the
// last notify) it allocates nothing.
func (s *signal) notify() {
	if p := s.ch.Swap(nil); p != nil {
		close(*p)
	}
}
