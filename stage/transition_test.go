package stage_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/stage"
)

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *logRecorder) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.records
	h.records = nil
	return rs
}

func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

func TestReasonNames(t *testing.T) {
	want := []string{
		"UNSAFE_BLOCK", "BIOME_EXCLUDED", "OUT_OF_BOUNDS", "CLAIM_PROTECTED",
		"RESERVATION_FAILED", "BUDGET_EXHAUSTED", "SHUTTING_DOWN", "ERROR",
	}
	var got []string
	for _, r := range stage.Reasons() {
		if !r.IsRejection() {
			t.Errorf("%v.IsRejection() = false", r)
		}
		got = append(got, r.String())
		text, err := r.MarshalText()
		if err != nil || string(text) != r.String() {
			t.Errorf("%v.MarshalText() = %q, %v", r, text, err)
		}
		var back stage.Reason
		if err := back.UnmarshalText(text); err != nil || back != r {
			t.Errorf("UnmarshalText(%q) = %v, %v, want %v", text, back, err, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Reasons() = %v, want the fixed list %v", got, want)
	}
	if stage.ReasonNone.IsRejection() {
		t.Error("ReasonNone.IsRejection() = true")
	}
	if got := stage.Reason(200).String(); got != "Reason(200)" {
		t.Errorf("Reason(200).String() = %q", got)
	}
	if _, err := stage.Reason(200).MarshalText(); err == nil {
		t.Error("Reason(200).MarshalText() = nil error")
	}
	var r stage.Reason
	for _, bad := range []string{"", "error", "UNSAFE", "ERROR "} {
		if err := r.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) = nil error", bad)
		}
	}
}

func FuzzReasonUnmarshalText(f *testing.F) {
	for _, r := range stage.Reasons() {
		f.Add(r.String())
	}
	f.Add("NONE")
	f.Add("bogus")
	f.Fuzz(func(t *testing.T, s string) {
		var r stage.Reason
		if err := r.UnmarshalText([]byte(s)); err != nil {
			return
		}
		text, err := r.MarshalText()
		if err != nil || string(text) != s {
			t.Fatalf("UnmarshalText(%q) = %v, which marshals to %q, %v", s, r, text, err)
		}
	})
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    stage.Outcome[int]
		want string
	}{
		{stage.Promoted(3), "promoted"},
		{stage.Rejected[int](stage.ReasonClaimProtected, "griefprevention"), "rejected CLAIM_PROTECTED: griefprevention"},
		{stage.Rejected[int](stage.ReasonOutOfBounds, ""), "rejected OUT_OF_BOUNDS"},
		{stage.Outcome[int]{}, "rejected NONE"},
	}
	for _, tc := range tests {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.o, got, tc.want)
		}
	}
}

func TestTransitionValidate(t *testing.T) {
	var zero stage.Transition[int, int]
	err := zero.Validate()
	if err == nil {
		t.Fatal("zero Transition: Validate() = nil")
	}
	for _, want := range []string{"no name", "no Promote", "no Dispose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, want it to report %q", err, want)
		}
	}
	ok := stage.Transition[int, int]{
		Name:    "promote",
		Promote: func(context.Context, int) (stage.Outcome[int], error) { return stage.Promoted(1), nil },
		Dispose: func(int) {},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
}

// TestTransitionRun: every path of Run, with what it returns, logs and
// disposes.
func TestTransitionRun(t *testing.T) {
	boom := errors.New("region file truncated")
	type hot struct{ x, res int }
	tests := []struct {
		name       string
		promote    stage.Func[int, hot]
		ctx        func() context.Context
		want       stage.Outcome[hot]
		wantDetail string // substring, when want.Detail is not exact
		logged     bool
		disposed   bool
		notCalled  bool
	}{
		{
			name:    "promoted",
			promote: func(_ context.Context, x int) (stage.Outcome[hot], error) { return stage.Promoted(hot{x, 9}), nil },
			want:    stage.Promoted(hot{5, 9}),
		},
		{
			name: "promoted with a stray reason",
			promote: func(_ context.Context, x int) (stage.Outcome[hot], error) {
				return stage.Outcome[hot]{Promoted: true, Value: hot{x, 1}, Reason: stage.ReasonUnsafeBlock, Detail: "x"}, nil
			},
			want: stage.Promoted(hot{5, 1}),
		},
		{
			name: "rejected",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				return stage.Rejected[hot](stage.ReasonUnsafeBlock, "lava at y=12"), nil
			},
			want: stage.Rejected[hot](stage.ReasonUnsafeBlock, "lava at y=12"),
		},
		{
			name: "rejected with a stray value",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				return stage.Outcome[hot]{Value: hot{1, 2}, Reason: stage.ReasonBudgetExhausted, Detail: "quota"}, nil
			},
			want: stage.Rejected[hot](stage.ReasonBudgetExhausted, "quota"),
		},
		{
			name:     "error",
			promote:  func(context.Context, int) (stage.Outcome[hot], error) { return stage.Promoted(hot{}), boom },
			want:     stage.Rejected[hot](stage.ReasonError, boom.Error()),
			logged:   true,
			disposed: true,
		},
		{
			name:       "panic",
			promote:    func(context.Context, int) (stage.Outcome[hot], error) { panic("nil chunk") },
			want:       stage.Rejected[hot](stage.ReasonError, ""),
			wantDetail: "panic: nil chunk",
			logged:     true,
			disposed:   true,
		},
		{
			name: "panic with an error value",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				panic(fmt.Errorf("chunk 3: %w", boom))
			},
			want:       stage.Rejected[hot](stage.ReasonError, ""),
			wantDetail: "panic: chunk 3: region file truncated",
			logged:     true,
			disposed:   true,
		},
		{
			name:       "zero outcome",
			promote:    func(context.Context, int) (stage.Outcome[hot], error) { return stage.Outcome[hot]{}, nil },
			want:       stage.Rejected[hot](stage.ReasonError, ""),
			wantDetail: "without a valid reason",
			logged:     true,
			disposed:   true,
		},
		{
			name: "invalid reason",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				return stage.Rejected[hot](stage.Reason(99), "?"), nil
			},
			want:       stage.Rejected[hot](stage.ReasonError, ""),
			wantDetail: "Reason(99)",
			logged:     true,
			disposed:   true,
		},
		{
			name: "explicit ERROR",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				return stage.Rejected[hot](stage.ReasonError, "verifier unreachable"), nil
			},
			want:     stage.Rejected[hot](stage.ReasonError, "verifier unreachable"),
			logged:   true,
			disposed: true,
		},
		{
			name: "shutting down",
			promote: func(context.Context, int) (stage.Outcome[hot], error) {
				return stage.Promoted(hot{}), nil
			},
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			want:      stage.Rejected[hot](stage.ReasonShuttingDown, context.Canceled.Error()),
			notCalled: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs logRecorder
			var disposed []int
			called := false
			tr := stage.Transition[int, hot]{
				Name: "cold->hot",
				Promote: func(ctx context.Context, x int) (stage.Outcome[hot], error) {
					called = true
					return tc.promote(ctx, x)
				},
				Dispose: func(x int) { disposed = append(disposed, x) },
				Logger:  slog.New(&logs),
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			got := tr.Run(ctx, 5)
			if tc.wantDetail != "" {
				if !strings.Contains(got.Detail, tc.wantDetail) {
					t.Errorf("Run().Detail = %q, want it to contain %q", got.Detail, tc.wantDetail)
				}
				got.Detail = ""
			}
			if got != tc.want {
				t.Errorf("Run() = %#v, want %#v", got, tc.want)
			}
			if !got.Promoted && !got.Reason.IsRejection() {
				t.Errorf("Run() = %v: a rejection without a reason", got)
			}
			if called == tc.notCalled {
				t.Errorf("Promote called = %v, want %v", called, !tc.notCalled)
			}
			wantDisposed := []int(nil)
			if tc.disposed {
				wantDisposed = []int{5}
			}
			if !slices.Equal(disposed, wantDisposed) {
				t.Errorf("disposed %v, want %v", disposed, wantDisposed)
			}
			records := logs.take()
			if !tc.logged {
				if len(records) != 0 {
					t.Errorf("logged %d records, want none", len(records))
				}
				return
			}
			if len(records) != 1 {
				t.Fatalf("logged %d records, want 1", len(records))
			}
			r := records[0]
			a := attrs(r)
			if r.Level != slog.LevelWarn || a["transition"] != "cold->hot" || a["reason"] != "ERROR" {
				t.Errorf("logged %v %q %v, want a warning naming the transition and ERROR", r.Level, r.Message, a)
			}
			if tc.name == "error" && a["error"] != boom.Error() {
				t.Errorf("logged error = %q, want %q", a["error"], boom.Error())
			}
			if strings.HasPrefix(tc.name, "panic") && !strings.Contains(a["stack"], "transition_test.go") {
				t.Errorf("panic logged without the panicking stack: %q", a["stack"])
			}
		})
	}
}

// TestTransitionRunMisconfigured: Run never panics on a bad setup; it still
// rejects with ERROR and logs.
func TestTransitionRunMisconfigured(t *testing.T) {
	var logs logRecorder
	var disposed int
	noPromote := stage.Transition[int, int]{Name: "x", Dispose: func(int) { disposed++ }, Logger: slog.New(&logs)}
	if got := noPromote.Run(context.Background(), 1); got.Reason != stage.ReasonError {
		t.Errorf("Run without Promote = %v, want ERROR", got)
	}
	if disposed != 1 {
		t.Errorf("Run without Promote disposed %d entries, want 1", disposed)
	}
	noDispose := stage.Transition[int, int]{
		Name:    "y",
		Promote: func(context.Context, int) (stage.Outcome[int], error) { return stage.Outcome[int]{}, errors.New("x") },
		Logger:  slog.New(&logs),
	}
	if got := noDispose.Run(context.Background(), 1); got.Reason != stage.ReasonError {
		t.Errorf("Run without Dispose = %v, want ERROR", got)
	}
	records := logs.take()
	if len(records) != 2 || attrs(records[1])["disposed"] != "false" {
		t.Errorf("logged %d records; the one without Dispose must say disposed=false", len(records))
	}
}

// TestTransitionDefaultLogger: without a Logger, warnings go to
// slog.Default().
func TestTransitionDefaultLogger(t *testing.T) {
	var logs logRecorder
	prev := slog.Default()
	slog.SetDefault(slog.New(&logs))
	t.Cleanup(func() { slog.SetDefault(prev) })
	tr := stage.Transition[int, int]{
		Name:    "z",
		Promote: func(context.Context, int) (stage.Outcome[int], error) { return stage.Outcome[int]{}, errors.New("x") },
		Dispose: func(int) {},
	}
	tr.Run(context.Background(), 1)
	if n := len(logs.take()); n != 1 {
		t.Fatalf("slog.Default() received %d records, want 1", n)
	}
}

// TestTransitionThroughStages: the promotion and demotion sequences of the contract
// over real stages, with a counting reservation: reservations opened equal
// reservations closed, failures included, and silent moves keep the rows.
func TestTransitionThroughStages(t *testing.T) {
	type reservation struct{ closed bool }
	type hotEntry struct {
		pos int
		res *reservation
	}
	var opened, closedRes int
	rows := map[int]int{} // persisted rows per position
	coldHooks := stage.Hooks[int]{
		OnAdd:    func(p int) { rows[p]++ },
		OnRemove: func(p int) { rows[p]-- },
	}
	hotHooks := stage.Hooks[hotEntry]{
		OnAdd:    func(e hotEntry) { rows[e.pos]++ },
		OnRemove: func(e hotEntry) { rows[e.pos]-- },
		OnDispose: func(e hotEntry) {
			if e.res != nil && !e.res.closed {
				e.res.closed = true
				closedRes++
			}
		},
	}
	cold, err := stage.NewQueue("cold", 8, coldHooks)
	if err != nil {
		t.Fatal(err)
	}
	hot, err := stage.NewRing("hot", 2, hotHooks)
	if err != nil {
		t.Fatal(err)
	}
	var logs logRecorder
	promote := stage.Transition[int, hotEntry]{
		Name: "cold->hot",
		Promote: func(_ context.Context, p int) (stage.Outcome[hotEntry], error) {
			switch p % 4 {
			case 1:
				return stage.Rejected[hotEntry](stage.ReasonUnsafeBlock, "water"), nil
			case 2:
				return stage.Outcome[hotEntry]{}, errors.New("reservation timed out")
			case 3:
				panic("verifier bug")
			}
			opened++
			return stage.Promoted(hotEntry{p, &reservation{}}), nil
		},
		Dispose: cold.Dispose,
		Logger:  slog.New(&logs),
	}
	for p := range 8 {
		cold.Offer(p)
	}
	for {
		p, ok := cold.PollSilent()
		if !ok {
			break
		}
		out := promote.Run(context.Background(), p)
		switch {
		case out.Promoted:
			hot.OfferSilent(out.Value) // hot has room for both
		case out.Reason == stage.ReasonError:
			// Already disposed (and its row removed) by Run.
		default:
			cold.Dispose(p) // a rejected candidate leaves the pipeline
		}
	}
	if got := len(logs.take()); got != 4 {
		t.Errorf("%d warnings, want 4 (two errors, two panics)", got)
	}
	// Demotion: hot.PollSilent -> close the reservation through the hot
	// stage's disposal path -> cold.Offer of the bare position. The row of
	// the hot entry goes with Dispose; the bare coordinate gets a new one.
	e, _ := hot.PollSilent()
	hot.Dispose(e)
	cold.Offer(e.pos)
	// Shutdown: close everything, recycle nothing.
	hot.Close()
	cold.Close()
	if opened != 2 || closedRes != opened {
		t.Errorf("reservations opened %d, closed %d; want 2 and 2", opened, closedRes)
	}
	for p, n := range rows {
		if n != 0 {
			t.Errorf("position %d: %d rows left after shutdown", p, n)
		}
	}
}

// TestDisposalTerminal checks that disposal is terminal: a hot
// stage's disposal closes the reservation and re-offers nothing; a demotion
// into a full cold stage disposes the bare position once, through the cold
// stage, without recursing into any other disposal; Close recycles nothing.
func TestDisposalTerminal(t *testing.T) {
	for _, impl := range []string{"ring", "queue"} {
		t.Run(impl, func(t *testing.T) {
			newStage := func(name string, capacity int, h stage.Hooks[int]) stage.Stage[int] {
				var s stage.Stage[int]
				var err error
				if impl == "ring" {
					s, err = stage.NewRing(name, capacity, h)
				} else {
					s, err = stage.NewQueue(name, capacity, h)
				}
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			// Entries are positions; reservations are tracked per position.
			open := map[int]bool{}
			var coldDisposed, hotDisposed []int
			cold := newStage("cold", 2, stage.Hooks[int]{
				OnDispose: func(p int) { coldDisposed = append(coldDisposed, p) },
			})
			hot := newStage("hot", 4, stage.Hooks[int]{
				OnDispose: func(p int) {
					hotDisposed = append(hotDisposed, p)
					delete(open, p) // closing the reservation, and nothing else
				},
			})
			for _, p := range []int{1, 2} {
				cold.Offer(p)
			}
			for _, p := range []int{10, 11, 12} {
				open[p] = true
				hot.OfferSilent(p)
			}
			// Demote 10 into the full cold stage.
			p, _ := hot.PollSilent()
			hot.Dispose(p)
			if cold.Offer(p) {
				t.Fatal("Offer into a full cold stage = true")
			}
			if !slices.Equal(hotDisposed, []int{10}) || !slices.Equal(coldDisposed, []int{10}) {
				t.Fatalf("demotion into a full cold stage: hot disposed %v, cold disposed %v, want [10] and [10]", hotDisposed, coldDisposed)
			}
			if hot.Len() != 2 || cold.Len() != 2 {
				t.Fatalf("after the demotion: hot holds %d, cold %d, want 2 and 2 (nothing re-offered)", hot.Len(), cold.Len())
			}
			// Shutdown: the hot entries are disposed, none reaches cold.
			hot.Close()
			if len(open) != 0 {
				t.Fatalf("reservations still open after Close: %v", open)
			}
			if cold.Len() != 2 || len(coldDisposed) != 1 {
				t.Fatalf("hot.Close touched cold: Len %d, disposed %v", cold.Len(), coldDisposed)
			}
			for _, want := range []int{1, 2} {
				if got, ok := cold.Poll(); !ok || got != want {
					t.Fatalf("cold.Poll() = %d, %v, want %d: Close recycled into cold", got, ok, want)
				}
			}
			cold.Close()
		})
	}
}
