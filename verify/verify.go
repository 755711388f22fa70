// Package verify runs the verifiers that may object to a landing place
// (claims, protected regions, a callback to the game side) and attributes
// each rejection to the verifier that made it.
//
// Every verifier is registered under a source name. The name identifies
// the verifier in stats (safetyExternal[GriefPreventionChecker]), in logs,
// and in ttl.yml, whose verifiers section sets how long the places it
// rejects are remembered: a rejection is passed on as
// memory.AddBad(index, memory.CauseSafetyExternal, result.Source).
//
// Verifiers come in two forms. A sync verifier (Register) is a fast
// predicate with no I/O, called inline. An async verifier (RegisterAsync)
// may do I/O; it runs on its own goroutine under a deadline, so a stuck
// one cannot hold Check past its timeout.
package verify

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Location is a block position with its world: what verifiers judge.
type Location struct {
	World   string
	X, Y, Z int64
}

// Result is the outcome of Check.
//
// When Passed is false, Source names the verifier that objected; it is the
// source to pass to memory.AddBad and to count in stats. Err is nil when
// the verifier answered "no"; it is set when the verifier could not answer
// (an error, a timeout, a panic). Callers should then record the rejection
// under a transient cause (memory.CauseTimeout), not remember it as
// safetyExternal, since nothing is known about the place.
type Result struct {
	Passed bool
	Source string
	Err    error
}

// DefaultTimeout bounds each async verifier call when Options.Timeout is
// not set.
const DefaultTimeout = 2 * time.Second

// Options configures a Registry.
type Options struct {
	// Timeout bounds each call of an async verifier. Zero or negative
	// means DefaultTimeout (2s).
	Timeout time.Duration
}

// Errors returned by Register and RegisterAsync.
var (
	ErrInvalidSource   = errors.New("verify: invalid source name")
	ErrDuplicateSource = errors.New("verify: source already registered")
	ErrNilVerifier     = errors.New("verify: nil verifier")
)

// ErrTimeout is in the chain of Result.Err when an async verifier gave no
// answer within the timeout (or the caller's deadline). Result.Err then
// also matches context.DeadlineExceeded.
var ErrTimeout = errors.New("verify: verifier timed out")

// PanicError is Result.Err when a verifier panicked. The panic is
// recovered; the process carries on.
type PanicError struct {
	Source string
	Value  any    // the value passed to panic
	Stack  []byte // the verifier goroutine's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("verify: verifier %s panicked: %v", e.Source, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// errExited is the answer of an async verifier that ended its goroutine
// (runtime.Goexit) without returning.
var errExited = errors.New("exited without returning")

// Registry holds the registered verifiers.
//
// The zero value is an empty registry with the default options; New sets
// options. A Registry is safe for concurrent use: Check never locks and
// sees the verifiers registered when it started (a snapshot), so Register
// and Unregister may run at any time. A Registry must not be copied after
// first use.
type Registry struct {
	timeout time.Duration // set once by New; 0 means DefaultTimeout

	mu   sync.Mutex // serializes Register and Unregister
	snap atomic.Pointer[snapshot]
}

// A snapshot is never modified once published: writers copy it.
//
// Design note: writers copy the slices and swap the pointer so that Check,
// the hot path, reads without a lock or an allocation. A sync.RWMutex was
// rejected because Check would hold the read lock across async verifiers
// (up to the timeout), stalling Register behind it; registration is rare
// and the lists are short, so copying them is cheap.
type snapshot struct {
	all   []*entry // registration order
	sync  []*entry // the sync ones among all, in order
	async []*entry // the async ones among all, in order
}

type entry struct {
	source string
	sync   func(Location) bool
	async  func(context.Context, Location) (bool, error)
}

// New returns an empty registry with the given options.
func New(opts Options) *Registry {
	return &Registry{timeout: opts.Timeout}
}

// Timeout returns the bound on each async verifier call.
func (r *Registry) Timeout() time.Duration {
	if r.timeout <= 0 {
		return DefaultTimeout
	}
	return r.timeout
}

// Register adds a sync verifier: fn reports whether loc is acceptable. It
// is called inline on the caller's goroutine, so it must be fast and do no
// I/O. It must be safe for concurrent calls.
//
// Register fails with ErrInvalidSource when source is empty, not valid
// UTF-8, or holds whitespace or unprintable characters (the rule of
// verifier names in ttl.yml), ErrDuplicateSource when a verifier with that
// source is registered, and ErrNilVerifier when fn is nil.
func (r *Registry) Register(source string, fn func(Location) bool) error {
	if fn == nil {
		return fmt.Errorf("%w for %q", ErrNilVerifier, source)
	}
	return r.add(&entry{source: source, sync: fn})
}

// RegisterAsync adds a verifier that may do I/O. Check calls fn on a
// goroutine of its own with a context that ends after the registry's
// timeout or when the caller's context ends, whichever is first. fn
// should return when ctx is done; if it does not, Check still returns at
// the deadline (the verifier counts as timed out) and the goroutine lives
// on until fn returns. fn must be safe for concurrent calls. A non-nil
// error counts as an objection that could not be decided (Result.Err).
//
// It fails like Register.
func (r *Registry) RegisterAsync(source string, fn func(ctx context.Context, loc Location) (bool, error)) error {
	if fn == nil {
		return fmt.Errorf("%w for %q", ErrNilVerifier, source)
	}
	return r.add(&entry{source: source, async: fn})
}

func (r *Registry) add(e *entry) error {
	if err := checkSource(e.source); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	var all []*entry
	if old != nil {
		if slices.ContainsFunc(old.all, func(x *entry) bool { return x.source == e.source }) {
			return fmt.Errorf("%w: %q", ErrDuplicateSource, e.source)
		}
		all = old.all
	}
	r.publishLocked(append(slices.Clip(all), e))
	return nil
}

// Unregister removes the verifier registered under source and reports
// whether there was one. Checks already running may still call it.
func (r *Registry) Unregister(source string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if old == nil {
		return false
	}
	i := slices.IndexFunc(old.all, func(x *entry) bool { return x.source == source })
	if i < 0 {
		return false
	}
	r.publishLocked(slices.Delete(slices.Clone(old.all), i, i+1))
	return true
}

// publishLocked installs a new snapshot holding all, which the caller
// owns no more. r.mu must be held.
func (r *Registry) publishLocked(all []*entry) {
	s := &snapshot{all: all}
	for _, e := range all {
		if e.sync != nil {
			s.sync = append(s.sync, e)
		} else {
			s.async = append(s.async, e)
		}
	}
	r.snap.Store(s)
}

// Sources returns the registered source names in registration order. The
// caller owns the slice.
func (r *Registry) Sources() []string {
	s := r.snap.Load()
	if s == nil {
		return nil
	}
	out := make([]string, len(s.all))
	for i, e := range s.all {
		out[i] = e.source
	}
	return out
}

// Check asks the verifiers about loc and returns the first objection.
//
// Sync verifiers run first, inline, in registration order; the first that
// objects ends the check before any async verifier is called (they may do
// I/O). Then all async verifiers run at once, each on its own goroutine;
// the result is the first of them in registration order that did not
// pass: it objected, failed, timed out or panicked. So the verifier
// blamed does not depend on which answers arrived first. Check returns as
// soon as that is settled, cancelling the context of the async verifiers
// still running, and never later than the timeout (see RegisterAsync).
//
// With no verifiers, or none objecting, the result is Passed. A panic in
// any verifier is recovered and reported as a *PanicError in Result.Err.
// With only sync verifiers Check does not allocate.
func (r *Registry) Check(ctx context.Context, loc Location) Result {
	s := r.snap.Load()
	if s == nil {
		return Result{Passed: true}
	}
	for _, e := range s.sync {
		if ok, err := callSync(e, loc); !ok || err != nil {
			return Result{Source: e.source, Err: err}
		}
	}
	if len(s.async) == 0 {
		return Result{Passed: true}
	}
	return r.checkAsync(ctx, s.async, loc)
}

// callSync calls a sync verifier, turning a panic into an error.
func callSync(e *entry, loc Location) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, &PanicError{Source: e.source, Value: v, Stack: debug.Stack()}
		}
	}()
	return e.sync(loc), nil
}

// answer is what one async verifier said.
type answer struct {
	i   int // index in the async list
	ok  bool
	err error
}

func (r *Registry) checkAsync(ctx context.Context, async []*entry, loc Location) Result {
	timeout := r.Timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // lets verifiers that respect ctx return at once

	// Buffered for every verifier, so none ever blocks sending its answer
	// after Check has returned.
	answers := make(chan answer, len(async))
	for i, e := range async {
		go callAsync(ctx, e, i, loc, timeout, answers)
	}

	got := make([]*answer, len(async))
	next := 0 // every verifier before next has passed
	for next < len(async) {
		if a := got[next]; a != nil {
			if !a.ok || a.err != nil {
				return Result{Source: async[next].source, Err: a.err}
			}
			next++
			continue
		}
		select {
		case a := <-answers:
			got[a.i] = &a
		case <-ctx.Done():
			// Take the answers that made it, then blame the first
			// verifier in order that did not pass.
			for drained := false; !drained; {
				select {
				case a := <-answers:
					got[a.i] = &a
				default:
					drained = true
				}
			}
			for ; next < len(async); next++ {
				a := got[next]
				if a == nil {
					return Result{Source: async[next].source, Err: contextError(ctx, async[next].source, timeout)}
				}
				if !a.ok || a.err != nil {
					return Result{Source: async[next].source, Err: a.err}
				}
			}
		}
	}
	return Result{Passed: true}
}

// callAsync runs one async verifier and always sends exactly one answer,
// even if fn panics or exits its goroutine.
func callAsync(ctx context.Context, e *entry, i int, loc Location, timeout time.Duration, answers chan<- answer) {
	a := answer{i: i}
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				a.ok, a.err = false, &PanicError{Source: e.source, Value: v, Stack: debug.Stack()}
			} else {
				a.ok, a.err = false, fmt.Errorf("verify: verifier %s: %w", e.source, errExited)
			}
		}
		answers <- a
	}()
	ok, err := e.async(ctx, loc)
	returned = true
	a.ok = ok
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The verifier gave up because its context ended: report it as
		// Check does when it stops waiting, so the outcome does not depend
		// on which of the two happened first.
		a.ok, a.err = false, contextError(ctx, e.source, timeout)
	default:
		a.ok, a.err = false, fmt.Errorf("verify: verifier %s: %w", e.source, err)
	}
}

// contextError explains why a verifier that gave no answer counts as
// failed: its deadline passed, or the caller cancelled.
func contextError(ctx context.Context, source string, timeout time.Duration) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s gave no answer before the deadline (timeout %v): %w", ErrTimeout, source, timeout, err)
	}
	return fmt.Errorf("verify: verifier %s gave no answer: %w", source, context.Cause(ctx))
}

// checkSource applies the rule of verifier names in ttl.yml: non-empty,
// valid UTF-8, printable, no whitespace.
func checkSource(source string) error {
	switch {
	case source == "":
		return fmt.Errorf("%w: empty", ErrInvalidSource)
	case !utf8.ValidString(source):
		return fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidSource, source)
	}
	for _, r := range source {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("%w %q: contains whitespace", ErrInvalidSource, source)
		case !unicode.IsPrint(r):
			return fmt.Errorf("%w %q: contains unprintable %U", ErrInvalidSource, source, r)
		}
	}
	return nil
}
