// Package browsertest starts headless Chromium for the browser tests of
// the visitor's page (web), the operator console (console) and the
// console against a real server (cmd/waitroom): it finds the browser,
// starts it with the same flags everywhere, keeps what the pages write to
// the console, and evaluates JavaScript with a time limit.
//
// When Chromium is not installed the test is skipped with the name of the
// Debian package to install (chromium); under CI=true that is a failure
// instead, so a CI machine cannot silently skip the browser tests.
//
// It is imported only by tests.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/bin/chromium"

// Require skips the test when Chromium is not installed, or fails it
// under CI=true, where it must be.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		msg := fmt.Sprintf("browser tests need Chromium at %s: install the Debian package chromium (apt-get install chromium)", ChromiumPath)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Options say how to start Chromium.
type Options struct {
	// Width and Height are the window's size.
	Width, Height int
	// Quiet also turns off QUIC, component updates and sync.
	Quiet bool
	// StartTimeout is how long Chromium may take to start; 20 s when 0.
	StartTimeout time.Duration
}

// Browser is one headless Chromium process, ended when the test ends.
type Browser struct {
	t   *testing.T
	ctx context.Context
}

// Start calls Require, then starts Chromium for the test, failing it when
// the browser does not start within o.StartTimeout.
func Start(t *testing.T, o Options) *Browser {
	t.Helper()
	Require(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("lang", "en-US"), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(o.Width, o.Height))
	if o.Quiet {
		opts = append(opts, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true))
	}
	wait := o.StartTimeout
	if wait == 0 {
		wait = 20 * time.Second
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The browser lives as long as the context of its first action: start
	// it with an empty Do on ctx, guarded by a timer.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("starting Chromium: %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("Chromium did not start within %v", wait)
	}
	return &Browser{t: t, ctx: ctx}
}

// New starts Chromium (see Start) and returns its first tab.
func New(t *testing.T, o Options) *Tab {
	t.Helper()
	b := Start(t, o)
	return newTab(t, b.ctx)
}

// NewTab opens a tab in a browser context of its own (own cookies, own
// storage), closed when the test ends.
func (b *Browser) NewTab() (*Tab, error) {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		return nil, err
	}
	return newTab(b.t, ctx), nil
}

// Tab is one browser tab and the errors, warnings and exceptions its
// pages wrote to the console.
type Tab struct {
	// T is the test the tab is for.
	T *testing.T
	// Ctx is the tab's chromedp context.
	Ctx context.Context
	// EvalTimeout bounds each evaluation of Holds, WaitUntil and Text
	// (3 s unless changed).
	EvalTimeout time.Duration
	// Poll is how long WaitUntil sleeps between tries (25 ms unless
	// changed).
	Poll time.Duration

	mu       sync.Mutex
	problems []string
}

// newTab watches the console of the tab ctx.
func newTab(t *testing.T, ctx context.Context) *Tab {
	tb := &Tab{T: t, Ctx: ctx, EvalTimeout: 3 * time.Second, Poll: 25 * time.Millisecond}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() || m.Type == chromedp.ConsoleWarning {
				tb.mu.Lock()
				tb.problems = append(tb.problems, fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				tb.mu.Unlock()
			}
		}
	}()
	return tb
}

// ConsoleProblems returns the errors, warnings and exceptions the tab's
// pages wrote so far, each as "type text (url:line)".
func (tb *Tab) ConsoleProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return slices.Clone(tb.problems)
}

// Do runs actions with a time limit of their own (the tab stays open).
func (tb *Tab) Do(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(tb.Ctx, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Eval evaluates a JavaScript expression in the tab's page within d.
func Eval[T any](tb *Tab, d time.Duration, expr string, opts ...chromedp.EvaluateOption) (T, error) {
	ctx, cancel := context.WithTimeout(tb.Ctx, d)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
}

// MustEval is Eval that fails the test on an error.
func MustEval[T any](tb *Tab, d time.Duration, expr string, opts ...chromedp.EvaluateOption) T {
	tb.T.Helper()
	v, err := Eval[T](tb, d, expr, opts...)
	if err != nil {
		tb.T.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// Holds evaluates a JavaScript condition (awaiting a promise) and reports
// whether it is truthy.
func (tb *Tab) Holds(cond string) (bool, error) {
	return Eval[bool](tb, tb.EvalTimeout, "!!("+cond+")", chromedp.EvalAwaitPromise)
}

// WaitUntil evaluates a JavaScript condition until it holds, across
// navigations, and reports whether it did within d.
func (tb *Tab) WaitUntil(d time.Duration, cond string) bool {
	deadline := time.Now().Add(d)
	for {
		if ok, err := tb.Holds(cond); err == nil && ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tb.Poll)
	}
}

// RawText returns the textContent of the first element matching a CSS
// selector, "" when there is none.
func (tb *Tab) RawText(selector string) (string, error) {
	return Eval[string](tb, tb.EvalTimeout, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, selector))
}

// Text is RawText with its runs of white space made single spaces, or
// "<error>" when it could not be read.
func (tb *Tab) Text(selector string) string {
	v, err := tb.RawText(selector)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return strings.Join(strings.Fields(v), " ")
}

// Screenshot captures the tab within d; capture is
// chromedp.CaptureScreenshot() (the viewport) or chromedp.FullScreenshot.
func (tb *Tab) Screenshot(d time.Duration, capture chromedp.Action[[]byte]) ([]byte, error) {
	ctx, cancel := context.WithTimeout(tb.Ctx, d)
	defer cancel()
	return chromedp.Run(ctx, capture)
}
