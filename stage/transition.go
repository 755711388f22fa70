package stage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Reason is why a transition rejected an entry. Every rejection carries one;
// ReasonNone is the Reason of a promotion and is never a rejection reason.
type Reason uint8

// The rejection reasons of the seed, in its order.
const (
	ReasonNone              Reason = iota // not a rejection
	ReasonUnsafeBlock                     // the ground or headroom is unsafe
	ReasonBiomeExcluded                   // the biome is not allowed
	ReasonOutOfBounds                     // outside the shape, border or vertical bounds
	ReasonClaimProtected                  // a verifier (claims) objects
	ReasonReservationFailed               // the chunk could not be reserved
	ReasonBudgetExhausted                 // no quota or capacity left for it
	ReasonShuttingDown                    // the pipeline is stopping
	ReasonError                           // the transition failed or panicked
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonNone:              "NONE",
	ReasonUnsafeBlock:       "UNSAFE_BLOCK",
	ReasonBiomeExcluded:     "BIOME_EXCLUDED",
	ReasonOutOfBounds:       "OUT_OF_BOUNDS",
	ReasonClaimProtected:    "CLAIM_PROTECTED",
	ReasonReservationFailed: "RESERVATION_FAILED",
	ReasonBudgetExhausted:   "BUDGET_EXHAUSTED",
	ReasonShuttingDown:      "SHUTTING_DOWN",
	ReasonError:             "ERROR",
}

// Reasons returns every rejection reason (all but ReasonNone), in order.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonNone + 1; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// String returns the fixed name of r, such as "UNSAFE_BLOCK", or
// "Reason(n)" for a value that is not a Reason.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// IsRejection reports whether r is one of the rejection reasons.
func (r Reason) IsRejection() bool { return r > ReasonNone && r < numReasons }

// MarshalText encodes r by its name. It fails for a value that is not a
// Reason.
func (r Reason) MarshalText() ([]byte, error) {
	if r >= numReasons {
		return nil, fmt.Errorf("stage: invalid reason %d", uint8(r))
	}
	return []byte(reasonNames[r]), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (r *Reason) UnmarshalText(text []byte) error {
	for i, name := range reasonNames {
		if string(text) == name {
			*r = Reason(i)
			return nil
		}
	}
	return fmt.Errorf("stage: unknown reason %q", text)
}

// Outcome is the result of a transition: either Promoted, with the promoted
// entry in Value, or a rejection with a Reason and a human-readable Detail.
// The zero Outcome is a rejection without a reason, which Transition.Run
// treats as a failure of the transition (ReasonError): a forgotten result
// never counts as a promotion.
type Outcome[To any] struct {
	Promoted bool
	Value    To     // the promoted entry; the zero value for a rejection
	Reason   Reason // ReasonNone for a promotion
	Detail   string
}

// Promoted returns the outcome of a promotion to v.
func Promoted[To any](v To) Outcome[To] {
	return Outcome[To]{Promoted: true, Value: v}
}

// Rejected returns the outcome of a rejection.
func Rejected[To any](reason Reason, detail string) Outcome[To] {
	return Outcome[To]{Reason: reason, Detail: detail}
}

// String describes o, as "promoted" or "rejected REASON: detail".
func (o Outcome[To]) String() string {
	switch {
	case o.Promoted:
		return "promoted"
	case o.Detail == "":
		return "rejected " + o.Reason.String()
	}
	return "rejected " + o.Reason.String() + ": " + o.Detail
}

// Func is the body of a transition: it promotes src (doing I/O, reserving a
// chunk) or rejects it with a reason. On a promotion, src is consumed: what
// it held now belongs to the promoted value or has been released. On a
// rejection, src still belongs to the caller of Transition.Run. A Func that
// returns an error must release whatever it acquired itself; its Outcome is
// then ignored.
type Func[From, To any] func(ctx context.Context, src From) (Outcome[To], error)

// Transition is an edge between two stages of a pipeline (screening
// backlog -> cold, promotion cold -> hot, demotion hot -> cold). It wraps its
// Func so that the stage contract's rules hold whatever the Func does:
//
//   - every rejection carries a reason;
//   - an error, a panic, a rejection without a valid reason, or a rejection
//     with ReasonError becomes Rejected(ReasonError, detail), is logged at
//     warning level, and disposes the source entry through Dispose;
//   - a context already done when Run starts yields
//     Rejected(ReasonShuttingDown) without calling the Func.
//
// A Transition is safe for concurrent use once set up; its fields must not
// change after its first Run. The zero value is not usable (see Validate).
type Transition[From, To any] struct {
	// Name identifies the transition in logs. Required.
	Name string
	// Promote is the transition's body. Required.
	Promote Func[From, To]
	// Dispose ends a source entry that failed: normally the Dispose method
	// of the stage the entry was polled from, so that the stage's OnDispose
	// remains the only disposal path. Required.
	Dispose func(From)
	// Logger receives the warnings. Default: slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of t's setup.
func (t *Transition[From, To]) Validate() error {
	var errs []error
	if t.Name == "" {
		errs = append(errs, errors.New("stage: transition has no name"))
	}
	if t.Promote == nil {
		errs = append(errs, fmt.Errorf("stage: transition %q has no Promote func", t.Name))
	}
	if t.Dispose == nil {
		errs = append(errs, fmt.Errorf("stage: transition %q has no Dispose func", t.Name))
	}
	return errors.Join(errs...)
}

// Run runs the transition on src, which the caller has already removed from
// its stage (with PollSilent), and returns the outcome. Ownership afterwards:
// the promoted Value belongs to the caller; after a rejection with any reason
// but ReasonError, src does too (to recycle, record or dispose); after
// ReasonError, src has been disposed. Run never panics because of the Func.
func (t *Transition[From, To]) Run(ctx context.Context, src From) (out Outcome[To]) {
	if err := ctx.Err(); err != nil {
		return Rejected[To](ReasonShuttingDown, context.Cause(ctx).Error())
	}
	if t.Promote == nil {
		return t.fail(ctx, src, "stage: transition has no Promote func", nil, nil)
	}

	panicked := true
	defer func() {
		if !panicked {
			return
		}
		r := recover()
		if r == nil {
			return // runtime.Goexit: nothing to report to
		}
		out = t.fail(ctx, src, fmt.Sprintf("panic: %v", r), nil, debug.Stack())
	}()
	out, err := t.Promote(ctx, src)
	panicked = false

	switch {
	case err != nil:
		return t.fail(ctx, src, err.Error(), err, nil)
	case out.Promoted:
		out.Reason, out.Detail = ReasonNone, ""
		return out
	case out.Reason == ReasonError:
		return t.fail(ctx, src, out.Detail, nil, nil)
	case !out.Reason.IsRejection():
		return t.fail(ctx, src, fmt.Sprintf("rejected without a valid reason (reason %v, detail %q)", out.Reason, out.Detail), nil, nil)
	}
	var zero To
	out.Value = zero
	return out
}

// fail logs a failed transition, disposes src and returns Rejected(ERROR).
func (t *Transition[From, To]) fail(ctx context.Context, src From, detail string, err error, stack []byte) Outcome[To] {
	logger := t.Logger
	if logger == nil {
		logger = slog.Default()
	}
	attrs := []slog.Attr{
		slog.String("transition", t.Name),
		slog.String("reason", ReasonError.String()),
		slog.String("detail", detail),
	}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	if stack != nil {
		attrs = append(attrs, slog.String("stack", string(stack)))
	}
	if t.Dispose == nil {
		attrs = append(attrs, slog.Bool("disposed", false))
	}
	logger.LogAttrs(ctx, slog.LevelWarn, "stage: transition failed", attrs...)
	if t.Dispose != nil {
		t.Dispose(src)
	}
	return Rejected[To](ReasonError, detail)
}
