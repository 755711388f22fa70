package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
)

var here = Location{World: "world", X: 100, Y: 64, Z: -200}

func pass(Location) bool   { return true }
func object(Location) bool { return false }

func mustRegister(t *testing.T, r *Registry, source string, fn func(Location) bool) {
	t.Helper()
	if err := r.Register(source, fn); err != nil {
		t.Fatalf("Register(%q) = %v", source, err)
	}
}

func mustRegisterAsync(t *testing.T, r *Registry, source string, fn func(context.Context, Location) (bool, error)) {
	t.Helper()
	if err := r.RegisterAsync(source, fn); err != nil {
		t.Fatalf("RegisterAsync(%q) = %v", source, err)
	}
}

func TestRegisterErrors(t *testing.T) {
	var r Registry
	mustRegister(t, &r, "GriefPreventionChecker", pass)
	asyncPass := func(context.Context, Location) (bool, error) { return true, nil }
	tests := []struct {
		name  string
		err   error
		want  error
		wants string
	}{
		{"empty", r.Register("", pass), ErrInvalidSource, "empty"},
		{"space", r.Register("Grief Prevention", pass), ErrInvalidSource, "whitespace"},
		{"tab", r.RegisterAsync("a\tb", asyncPass), ErrInvalidSource, "whitespace"},
		{"nbsp", r.Register("a\u00a0b", pass), ErrInvalidSource, "whitespace"},
		{"control", r.Register("a\x01", pass), ErrInvalidSource, "unprintable U+0001"},
		{"zero width", r.Register("a\u200bb", pass), ErrInvalidSource, "unprintable U+200B"},
		{"bad utf8", r.Register("a\xff", pass), ErrInvalidSource, "UTF-8"},
		{"duplicate sync", r.Register("GriefPreventionChecker", pass), ErrDuplicateSource, "GriefPreventionChecker"},
		{"duplicate async", r.RegisterAsync("GriefPreventionChecker", asyncPass), ErrDuplicateSource, "GriefPreventionChecker"},
		{"nil sync", r.Register("A", nil), ErrNilVerifier, `"A"`},
		{"nil async", r.RegisterAsync("B", nil), ErrNilVerifier, `"B"`},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.want) || !strings.Contains(tc.err.Error(), tc.wants) || !strings.HasPrefix(tc.err.Error(), "verify: ") {
			t.Errorf("%s: error = %v, want %v mentioning %q", tc.name, tc.err, tc.want, tc.wants)
		}
	}
	if got := r.Sources(); !slices.Equal(got, []string{"GriefPreventionChecker"}) {
		t.Errorf("Sources() = %q after failed registrations, want only GriefPreventionChecker", got)
	}
}

func TestZeroRegistry(t *testing.T) {
	var r Registry
	if got := r.Check(t.Context(), here); got != (Result{Passed: true}) {
		t.Errorf("Check on an empty registry = %+v, want Passed", got)
	}
	if r.Unregister("x") {
		t.Errorf("Unregister on an empty registry = true")
	}
	if r.Sources() != nil {
		t.Errorf("Sources() = %q, want nil", r.Sources())
	}
	if r.Timeout() != DefaultTimeout {
		t.Errorf("Timeout() = %v, want %v", r.Timeout(), DefaultTimeout)
	}
	for _, tc := range []struct {
		opt, want time.Duration
	}{{0, DefaultTimeout}, {-time.Second, DefaultTimeout}, {300 * time.Millisecond, 300 * time.Millisecond}} {
		if got := New(Options{Timeout: tc.opt}).Timeout(); got != tc.want {
			t.Errorf("New(Options{Timeout: %v}).Timeout() = %v, want %v", tc.opt, got, tc.want)
		}
	}
}

func TestUnregister(t *testing.T) {
	var r Registry
	mustRegister(t, &r, "A", pass)
	mustRegister(t, &r, "B", func(l Location) bool { return l.X != 1 })
	mustRegister(t, &r, "C", func(l Location) bool { return l.X != 1 })
	if got := r.Check(t.Context(), Location{X: 1}); got.Source != "B" {
		t.Errorf("Check = %+v, want B", got)
	}
	if !r.Unregister("B") {
		t.Errorf("Unregister(B) = false, want true")
	}
	if r.Unregister("B") {
		t.Errorf("second Unregister(B) = true, want false")
	}
	if got := r.Sources(); !slices.Equal(got, []string{"A", "C"}) {
		t.Errorf("Sources() = %q, want [A C]", got)
	}
	if got := r.Check(t.Context(), Location{X: 1}); got.Source != "C" {
		t.Errorf("Check after Unregister(B) = %+v, want C", got)
	}
	// Registered again, B comes last.
	mustRegister(t, &r, "B", object)
	if got := r.Sources(); !slices.Equal(got, []string{"A", "C", "B"}) {
		t.Errorf("Sources() = %q, want [A C B]", got)
	}
	if got := r.Check(t.Context(), Location{X: 2}); got.Source != "B" || got.Passed {
		t.Errorf("Check = %+v, want B", got)
	}
	if got := r.Check(t.Context(), Location{X: 1}); got.Source != "C" {
		t.Errorf("Check = %+v, want C", got)
	}
}

// The location reaches every verifier intact.
func TestLocationPassedThrough(t *testing.T) {
	var r Registry
	var seenSync, seenAsync Location
	mustRegister(t, &r, "S", func(l Location) bool { seenSync = l; return true })
	mustRegisterAsync(t, &r, "A", func(_ context.Context, l Location) (bool, error) { seenAsync = l; return true, nil })
	if got := r.Check(t.Context(), here); !got.Passed {
		t.Fatalf("Check = %+v, want Passed", got)
	}
	if seenSync != here || seenAsync != here {
		t.Errorf("verifiers saw %+v and %+v, want %+v", seenSync, seenAsync, here)
	}
}

// verifierSpec is one verifier of the attribution model.
type verifierSpec struct {
	async     bool
	objects   bool          // answers false
	fails     bool          // async: returns an error
	panics    bool          // panics instead of answering
	delay     time.Duration // async: time before answering
	ignoreCtx bool          // async: sleeps its delay even after ctx is done
}

// Attribution checked against a model on random registries: the result
// names the first sync verifier that does not pass, else the first async
// one in registration order, whatever order the async answers arrive in,
// and Check returns as soon as that is settled. Time is fake (synctest),
// so the delays cost nothing and the elapsed time is exact.
func TestCheckAttributionModel(t *testing.T) {
	const timeout = 2 * time.Second
	delays := []time.Duration{0, 10 * time.Millisecond, 500 * time.Millisecond, 1900 * time.Millisecond, 3 * time.Second}
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := range 400 {
		specs := make([]verifierSpec, 1+rng.IntN(6))
		for i := range specs {
			s := &specs[i]
			s.async = rng.IntN(2) == 0
			switch rng.IntN(8) {
			case 0:
				s.objects = true
			case 1:
				s.panics = true
			case 2:
				s.fails = s.async
			}
			if s.async {
				s.delay = delays[rng.IntN(len(delays))]
				s.ignoreCtx = rng.IntN(2) == 0
			}
		}
		synctest.Test(t, func(t *testing.T) {
			r := New(Options{Timeout: timeout})
			calls := make([]atomic.Int32, len(specs))
			release := make(chan struct{}) // frees verifiers that ignore ctx
			for i, s := range specs {
				name := fmt.Sprintf("v%d", i)
				if !s.async {
					mustRegister(t, r, name, func(Location) bool {
						calls[i].Add(1)
						if s.panics {
							panic("sync " + name)
						}
						return !s.objects
					})
					continue
				}
				mustRegisterAsync(t, r, name, func(ctx context.Context, _ Location) (bool, error) {
					calls[i].Add(1)
					if s.ignoreCtx {
						select {
						case <-time.After(s.delay):
						case <-release:
							return true, nil
						}
					} else {
						select {
						case <-time.After(s.delay):
						case <-ctx.Done():
							return false, ctx.Err()
						}
					}
					switch {
					case s.panics:
						panic(errors.New("async " + name))
					case s.fails:
						return true, errors.New("callback failed")
					}
					return !s.objects, nil
				})
			}

			// The model.
			want, wantElapsed, wantTimeout, syncDecided := Result{Passed: true}, time.Duration(0), false, false
			for i, s := range specs {
				if !s.async && (s.objects || s.panics) {
					want, syncDecided = Result{Source: fmt.Sprintf("v%d", i)}, true
					break
				}
			}
			if !syncDecided {
				for i, s := range specs {
					if !s.async {
						continue
					}
					wantElapsed = max(wantElapsed, min(s.delay, timeout))
					if s.delay > timeout {
						want, wantTimeout = Result{Source: fmt.Sprintf("v%d", i)}, true
						break
					}
					if s.objects || s.panics || s.fails {
						want = Result{Source: fmt.Sprintf("v%d", i)}
						break
					}
				}
			}

			start := time.Now()
			got := r.Check(t.Context(), here)
			elapsed := time.Since(start)
			if got.Passed != want.Passed || got.Source != want.Source {
				t.Fatalf("iteration %d, specs %+v: Check = %+v, want %+v", iter, specs, got, want)
			}
			if elapsed != wantElapsed {
				t.Errorf("iteration %d, specs %+v: Check took %v, want %v", iter, specs, elapsed, wantElapsed)
			}
			wantErr := !got.Passed && (wantTimeout || got.Source != "" && (specs[indexOf(got.Source)].panics || specs[indexOf(got.Source)].fails))
			if (got.Err != nil) != wantErr {
				t.Errorf("iteration %d, specs %+v: Check error = %v, want error %v", iter, specs, got.Err, wantErr)
			}
			if wantTimeout && (!errors.Is(got.Err, ErrTimeout) || !errors.Is(got.Err, context.DeadlineExceeded)) {
				t.Errorf("iteration %d: Check error = %v, want ErrTimeout and DeadlineExceeded", iter, got.Err)
			}
			if !got.Passed && !wantTimeout && specs[indexOf(got.Source)].panics {
				var pe *PanicError
				if !errors.As(got.Err, &pe) || pe.Source != got.Source || len(pe.Stack) == 0 {
					t.Errorf("iteration %d: Check error = %v, want a *PanicError from %s with a stack", iter, got.Err, got.Source)
				}
			}
			close(release)
			synctest.Wait()
			// Sync verifiers run in order up to the first objection; async
			// ones only when no sync verifier objected, all of them.
			decided := false
			for i, s := range specs {
				wantCalls := int32(1)
				if s.async && syncDecided || !s.async && decided {
					wantCalls = 0
				}
				if c := calls[i].Load(); c != wantCalls {
					t.Errorf("iteration %d, specs %+v: v%d called %d times, want %d", iter, specs, i, c, wantCalls)
				}
				if !s.async && (s.objects || s.panics) {
					decided = true
				}
			}
		})
	}
}

func indexOf(source string) int {
	var i int
	fmt.Sscanf(source, "v%d", &i)
	return i
}

// A stuck verifier that ignores its context cannot hold Check past the
// timeout; its goroutine ends as soon as the verifier returns.
func TestStuckVerifierTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(Options{Timeout: 2 * time.Second})
		unstick := make(chan struct{})
		var returned atomic.Bool
		mustRegisterAsync(t, r, "Fast", func(context.Context, Location) (bool, error) { return true, nil })
		mustRegisterAsync(t, r, "Stuck", func(context.Context, Location) (bool, error) {
			<-unstick // ignores ctx
			returned.Store(true)
			return true, nil
		})
		start := time.Now()
		got := r.Check(t.Context(), here)
		if elapsed := time.Since(start); elapsed != 2*time.Second {
			t.Errorf("Check took %v, want the 2s timeout", elapsed)
		}
		if got.Passed || got.Source != "Stuck" || !errors.Is(got.Err, ErrTimeout) || !errors.Is(got.Err, context.DeadlineExceeded) {
			t.Errorf("Check = %+v, want Stuck timed out", got)
		}
		if !strings.Contains(got.Err.Error(), "Stuck") {
			t.Errorf("error %q does not name the verifier", got.Err)
		}
		// The stuck goroutine is still there; released, it exits (the
		// bubble would report a deadlock at its end otherwise).
		synctest.Wait()
		if returned.Load() {
			t.Fatal("stuck verifier returned before release")
		}
		close(unstick)
		synctest.Wait()
		if !returned.Load() {
			t.Fatal("stuck verifier did not return after release")
		}
	})
}

// Verifiers that respect ctx leave no goroutine once Check has returned:
// Check cancels them when the answer is settled.
func TestNoGoroutineLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r Registry
		var waiting, done atomic.Int32
		mustRegisterAsync(t, &r, "Objects", func(context.Context, Location) (bool, error) { return false, nil })
		for i := range 5 {
			mustRegisterAsync(t, &r, fmt.Sprintf("Slow%d", i), func(ctx context.Context, _ Location) (bool, error) {
				waiting.Add(1)
				defer done.Add(1)
				select {
				case <-ctx.Done():
					return false, ctx.Err()
				case <-time.After(time.Hour):
					return true, nil
				}
			})
		}
		start := time.Now()
		got := r.Check(t.Context(), here)
		if got.Source != "Objects" || got.Err != nil || time.Since(start) != 0 {
			t.Errorf("Check = %+v after %v, want Objects at once", got, time.Since(start))
		}
		synctest.Wait() // every goroutine of the bubble has exited or is durably blocked
		if w, d := waiting.Load(), done.Load(); d != w {
			t.Errorf("%d of %d ctx-respecting verifiers still running after Check returned", w-d, w)
		}
		if time.Since(start) != 0 {
			t.Errorf("verifiers ended only after %v", time.Since(start))
		}
	})
}

// Outside a bubble, on the real clock: the timeout holds and goroutines
// end. Kept short so it costs little.
func TestTimeoutRealClock(t *testing.T) {
	r := New(Options{Timeout: 50 * time.Millisecond})
	unstick := make(chan struct{})
	exited := make(chan struct{})
	mustRegisterAsync(t, r, "Stuck", func(context.Context, Location) (bool, error) {
		defer close(exited)
		<-unstick
		return true, nil
	})
	before := runtime.NumGoroutine()
	start := time.Now()
	got := r.Check(t.Context(), here)
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("Check took %v, want about 50ms", elapsed)
	}
	if !errors.Is(got.Err, ErrTimeout) {
		t.Errorf("Check = %+v, want a timeout", got)
	}
	close(unstick)
	<-exited
	eventually.Within(10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the stuck verifier returned, %d before Check", n, before)
	}
}

func TestCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(Options{Timeout: 2 * time.Second})
		mustRegisterAsync(t, r, "Waits", func(ctx context.Context, _ Location) (bool, error) {
			<-ctx.Done()
			return false, ctx.Err()
		})

		// Cancelled by the caller: not a timeout.
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		got := r.Check(ctx, here)
		if time.Since(start) != 100*time.Millisecond || got.Source != "Waits" || !errors.Is(got.Err, context.Canceled) || errors.Is(got.Err, ErrTimeout) {
			t.Errorf("Check with a cancelled context = %+v after %v, want Canceled at 100ms", got, time.Since(start))
		}

		// Cancelled before the call.
		got = r.Check(ctx, here)
		if !errors.Is(got.Err, context.Canceled) || got.Source != "Waits" {
			t.Errorf("Check with a done context = %+v, want Canceled", got)
		}

		// A caller deadline shorter than the timeout wins.
		ctx, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel2()
		start = time.Now()
		got = r.Check(ctx, here)
		if time.Since(start) != 300*time.Millisecond || !errors.Is(got.Err, ErrTimeout) {
			t.Errorf("Check with a 300ms deadline = %+v after %v, want a timeout at 300ms", got, time.Since(start))
		}
	})
}

func TestAsyncErrorAndPanic(t *testing.T) {
	errDown := errors.New("callback: connection refused")
	tests := []struct {
		name  string
		fn    func(context.Context, Location) (bool, error)
		check func(error) bool
	}{
		{"error", func(context.Context, Location) (bool, error) { return true, errDown },
			func(err error) bool { return errors.Is(err, errDown) && strings.Contains(err.Error(), "V") }},
		{"panic error", func(context.Context, Location) (bool, error) { panic(errDown) },
			func(err error) bool {
				var pe *PanicError
				return errors.As(err, &pe) && pe.Value == errDown && errors.Is(err, errDown) && pe.Source == "V"
			}},
		{"panic string", func(context.Context, Location) (bool, error) { panic("boom") },
			func(err error) bool {
				var pe *PanicError
				return errors.As(err, &pe) && pe.Value == "boom" && strings.Contains(err.Error(), "boom")
			}},
		{"panic nil", func(context.Context, Location) (bool, error) { panic(nil) },
			func(err error) bool {
				var pn *runtime.PanicNilError
				return errors.As(err, &pn)
			}},
		{"goexit", func(context.Context, Location) (bool, error) { runtime.Goexit(); return true, nil },
			func(err error) bool { return errors.Is(err, errExited) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var r Registry
				mustRegisterAsync(t, &r, "V", tc.fn)
				start := time.Now()
				got := r.Check(t.Context(), here)
				if got.Passed || got.Source != "V" || !tc.check(got.Err) {
					t.Errorf("Check = %+v (%T), want V failed with the right error", got, got.Err)
				}
				if time.Since(start) != 0 {
					t.Errorf("Check waited %v, want an immediate answer", time.Since(start))
				}
			})
		})
	}
}

func TestSyncPanic(t *testing.T) {
	var r Registry
	mustRegister(t, &r, "OK", pass)
	mustRegister(t, &r, "Boom", func(Location) bool { panic("nil map") })
	got := r.Check(t.Context(), here)
	var pe *PanicError
	if got.Passed || got.Source != "Boom" || !errors.As(got.Err, &pe) || pe.Value != "nil map" || len(pe.Stack) == 0 {
		t.Errorf("Check = %+v, want Boom with a *PanicError", got)
	}
	// The registry still works.
	if !r.Unregister("Boom") || !r.Check(t.Context(), here).Passed {
		t.Errorf("registry unusable after a panic")
	}
}

// Check runs while verifiers come and go: each result must be explained
// by some registry state. v<i> objects only at X == i; "Base" never
// objects and stays.
func TestConcurrentRegisterCheck(t *testing.T) {
	var r Registry
	mustRegister(t, &r, "Base", pass)
	const n = 8
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for !stop.Load() {
				i := rng.IntN(n)
				name := fmt.Sprintf("v%d", i)
				if rng.IntN(2) == 0 {
					_ = r.Register(name, func(l Location) bool { return l.X != int64(i) })
				} else if rng.IntN(3) == 0 {
					_ = r.RegisterAsync(name, func(_ context.Context, l Location) (bool, error) { return l.X != int64(i), nil })
				} else {
					r.Unregister(name)
				}
			}
		})
	}
	var checks atomic.Int64
	for c := range 2 {
		wg.Go(func() {
			for k := 0; k < 3000; k++ {
				x := int64((k + c) % (n + 1)) // X == n: nobody objects
				got := r.Check(context.Background(), Location{X: x})
				checks.Add(1)
				want := fmt.Sprintf("v%d", x)
				if !got.Passed && (got.Source != want || got.Err != nil) || got.Passed && got.Source != "" {
					t.Errorf("Check(X=%d) = %+v, want Passed or %s", x, got, want)
					return
				}
				if x == n && !got.Passed {
					t.Errorf("Check(X=%d) = %+v, want Passed", x, got)
					return
				}
			}
		})
	}
	eventually.Within(time.Minute, func() bool { return checks.Load() >= 6000 || t.Failed() })
	stop.Store(true)
	wg.Wait()
	if src := r.Sources(); len(src) == 0 || src[0] != "Base" {
		t.Errorf("Sources() = %q, want Base first", src)
	}
}

func TestCheckSyncDoesNotAllocate(t *testing.T) {
	var r Registry
	for i := range 4 {
		mustRegister(t, &r, fmt.Sprintf("v%d", i), pass)
	}
	ctx := t.Context()
	if a := testing.AllocsPerRun(1000, func() { r.Check(ctx, here) }); a != 0 {
		t.Errorf("Check with sync verifiers allocates %v times, want 0", a)
	}
}

func BenchmarkCheckSync(b *testing.B) {
	var r Registry
	for i := range 4 {
		if err := r.Register(fmt.Sprintf("v%d", i), func(l Location) bool { return l.X != int64(i)-100 }); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if !r.Check(ctx, here).Passed {
			b.Fatal("objection")
		}
	}
}

func BenchmarkCheckSyncParallel(b *testing.B) {
	var r Registry
	for i := range 4 {
		if err := r.Register(fmt.Sprintf("v%d", i), pass); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Check(ctx, here)
		}
	})
}

func BenchmarkCheckAsync(b *testing.B) {
	var r Registry
	for i := range 2 {
		if err := r.RegisterAsync(fmt.Sprintf("v%d", i), func(context.Context, Location) (bool, error) { return true, nil }); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if !r.Check(ctx, here).Passed {
			b.Fatal("objection")
		}
	}
}
