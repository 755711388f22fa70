package browsertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rtpengine/rtp/internal/chromium"
)

// FindChromium returns the browser to drive (see chromium.Find).
func FindChromium() string { return chromium.Find() }

// Flags are the browser's launch flags (see chromium.Flags).
func Flags(userDataDir string, width, height int) []chromedp.ExecAllocatorOption {
	return chromium.Flags(userDataDir, width, height)
}

// Browser is one headless Chromium with one tab. It records every console
// error, uncaught exception and browser log error of the tab. Its methods
// are safe for concurrent use; Close ends the browser.
type Browser struct {
	Ctx    context.Context // the tab's context, for chromedp.Do and Run
	cancel func()
	done   chan struct{}

	mu     sync.Mutex
	errors []string
}

// Launch starts the browser at path with a fresh profile in userDataDir and
// a window of width x height CSS pixels.
func Launch(ctx context.Context, path, userDataDir string, width, height int) (*Browser, error) {
	if path == "" {
		return nil, errors.New("browsertest: no chromium binary")
	}
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(path)}, Flags(userDataDir, width, height)...)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	b := &Browser{Ctx: tctx, done: make(chan struct{})}
	b.cancel = func() { tcancel(); acancel(); <-b.done }
	if err := chromedp.Do(tctx); err != nil {
		tcancel()
		acancel()
		return nil, fmt.Errorf("browsertest: start chromium: %w", err)
	}
	messages := chromedp.Console(tctx)
	go func() {
		defer close(b.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.record(fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
			}
		}
	}()
	return b, nil
}

func (b *Browser) record(s string) {
	b.mu.Lock()
	b.errors = append(b.errors, s)
	b.mu.Unlock()
}

// Errors returns the console errors, exceptions and log errors so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Close ends the browser and waits for its console reader.
func (b *Browser) Close() { b.cancel() }

// Eval evaluates a JavaScript expression in the tab of ctx, waits for the
// promise it yields, if any, and decodes the result as a T.
func Eval[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// Idle waits until the page's window.rtpMap has started and its idle()
// settles; it fails when the page does not settle within timeout.
//
// Right after a navigation (a reload) the poll may run in the JavaScript
// context the navigation is replacing; Chromium then answers that it
// cannot find the context, and the poll starts again in the new one.
func Idle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`typeof window.rtpMap === 'object' && window.rtpMap.debug().started`,
			chromedp.WithPollingTimeout(max(time.Until(deadline), time.Millisecond))))
		if err == nil {
			break
		}
		if !replaced(err) || !time.Now().Before(deadline) {
			return fmt.Errorf("browsertest: page did not start: %w", err)
		}
		select { // a moment for the new context to exist
		case <-ctx.Done():
			return fmt.Errorf("browsertest: page did not start: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	ok, err := Eval[bool](ctx, fmt.Sprintf(`window.rtpMap.idle(%d)`, timeout.Milliseconds()))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("browsertest: page not idle after %v", timeout)
	}
	return nil
}

// replaced reports whether err says the page's JavaScript context went
// away under the call, as a navigation replaces it.
func replaced(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}
