package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// browserPath returns Debian's chromium (make system-deps installs it).
// Without it the test is skipped, but under CI=true it fails: CI must run
// the browser.
func browserPath(t *testing.T) string {
	t.Helper()
	testkit.External(t, "chromium")
	for _, p := range []string{"chromium", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	missingComponent(t, "chromium is not installed: run make system-deps (CI runs the browser test)")
	return ""
}

// TestDebugPageInBrowser loads /debug/vigil of a real vigil, under a
// mixed load (ok echo calls, a tool error, a client cancel, a DELETE with
// a call in flight, a slow call), in headless Chromium at 1400x1000, and
// reads it as a person would: the per-tool counts of the table, the three
// charts drawn, the cancelled and the slow call in the first screenful
// with their trace links, a filter link that narrows the list, and no
// console error (CSP violations, failed loads, exceptions). It writes a
// screenshot to the test's artifact directory and, with
// VIGIL_SCREENSHOT=path, there too.
func TestDebugPageInBrowser(t *testing.T) {
	chrome := browserPath(t)
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	ctx := t.Context()
	mcp := svc.base + "/mcp"

	// The load.
	a := newE2EClient(mcp, hc)
	require.NoError(t, a.initialize(ctx))
	const echoes = 20
	for i := range echoes {
		m, err := a.callTool(ctx, "echo", map[string]any{"text": fmt.Sprint("hello ", i)}, "")
		require.NoError(t, err)
		require.Nil(t, m.Error)
	}
	bad, err := a.callTool(ctx, "echo", map[string]any{}, "") // no text: the tool fails
	require.NoError(t, err)
	assert.True(t, bad.Error != nil || strings.Contains(string(bad.Result), `"isError":true`), "the tool error: %s", bad.Result)
	slow, err := a.callTool(ctx, "sleep", map[string]any{"ms": 300}, "")
	require.NoError(t, err)
	require.Nil(t, slow.Error)

	inFlight := func(session string) func() (bool, error) {
		return func() (bool, error) {
			snap, err := svcDebug(hc, svc.base)
			return err == nil && slices.ContainsFunc(snap.InFlight, func(r debugRequest) bool {
				return r.Name == "sleep" && r.SessionID == session
			}), err
		}
	}
	cancelled := a.startCall(ctx, "sleep", map[string]any{"ms": 30000}, "")
	svcEventually(t, "the sleep to cancel in flight", 10*time.Second, inFlight(a.session))
	end, err := a.cancel(ctx, cancelled)
	require.NoError(t, err)
	require.NoError(t, end.err)
	cancelledID := fmt.Sprint(cancelled.id)

	b := newE2EClient(mcp, hc)
	require.NoError(t, b.initialize(ctx))
	closed := b.startCall(ctx, "sleep", map[string]any{"ms": 30000}, "")
	svcEventually(t, "the sleep to DELETE under in flight", 10*time.Second, inFlight(b.session))
	require.NoError(t, b.deleteSession(ctx))
	<-closed.done

	var snap debugSnapshot
	svcEventually(t, "both cancellations counted", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(hc, svc.base)
		return err == nil && len(snap.Cancellations) == 2 && slices.ContainsFunc(snap.Stats, func(r keyRow) bool {
			return r.Key == "tools/call sleep" && r.Total.Cancelled == 2
		}), err
	})
	causes := map[string]string{}
	for _, c := range snap.Cancellations {
		causes[c.SessionID] = c.Reason
	}
	assert.Equal(t, map[string]string{a.session: "client_cancel", b.session: "transport_close"}, causes)

	// The browser.
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	defer cancelTimeout()

	// Every console error, exception and browser log error (a CSP
	// violation, a failed load) of the tab, read on a goroutine.
	var mu sync.Mutex
	var consoleErrors []string
	consoleCtx, stopConsole := context.WithCancel(bctx)
	consoleDone := make(chan struct{})
	console := chromedp.Console(consoleCtx)
	go func() {
		defer close(consoleDone)
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				consoleErrors = append(consoleErrors, string(m.Type)+": "+m.Text+" "+m.URL)
				mu.Unlock()
			}
		}
	}()

	page := svc.base + "/debug/vigil?refresh=0"
	type statRow struct {
		Key       string `json:"key"`
		Total     string `json:"total"`
		Errors    string `json:"errors"`
		Cancelled string `json:"cancelled"`
		Dropped   string `json:"dropped"`
	}
	type chartInfo struct {
		Children int     `json:"children"`
		Points   string  `json:"points"`
		Rects    int     `json:"rects"`
		Width    float64 `json:"width"`
	}
	type box struct {
		Kind   string  `json:"kind"`
		Key    string  `json:"key"`
		ID     string  `json:"id"`
		Took   string  `json:"took"`
		Href   string  `json:"href"`
		Top    float64 `json:"top"`
		Bottom float64 `json:"bottom"`
	}
	require.NoError(t, chromedp.Do(bctx,
		chromedp.EmulateViewport(1400, 1000),
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS("#attention")),
	))
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]statRow](`Array.from(document.querySelectorAll('#stats tr.stat-row')).map(r => ({
		key: r.querySelector('td a').textContent.trim(),
		total: r.querySelector('.c-total').textContent.trim(),
		errors: r.querySelector('.t-errors').textContent.trim(),
		cancelled: r.querySelector('.t-cancelled').textContent.trim(),
		dropped: r.querySelector('.t-dropped').textContent.trim()}))`))
	require.NoError(t, err)
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]chartInfo](`Array.from(document.querySelectorAll('#charts svg')).map(s => ({
		children: s.childElementCount,
		points: s.querySelector('polyline') ? s.querySelector('polyline').getAttribute('points') : '',
		rects: s.querySelectorAll('rect').length,
		width: s.getBoundingClientRect().width}))`))
	require.NoError(t, err)
	boxes, err := chromedp.Run(bctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll('#attention tr.att')).map(r => {
		const b = r.getBoundingClientRect(), a = r.querySelector('a.trace-link');
		return {kind: r.querySelector('.kind').textContent.trim(), key: r.querySelector('.a-key').textContent.trim(),
			id: r.querySelector('.a-id').textContent.trim(), took: r.querySelector('.a-took').textContent.trim(),
			href: a ? a.getAttribute('href') : '', top: b.top, bottom: b.bottom};
	})`))
	require.NoError(t, err)
	viewport, err := chromedp.Run(bctx, chromedp.Evaluate[struct{ W, H float64 }](`({W: window.innerWidth, H: window.innerHeight})`))
	require.NoError(t, err)
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	writeScreenshot(t, png)
	assert.InDelta(t, 1400, viewport.W, 0.5)
	assert.InDelta(t, 1000, viewport.H, 0.5)

	// The table's counts per tool, since start.
	byKey := map[string][4]string{}
	for _, r := range rows {
		byKey[r.Key] = [4]string{r.Total, r.Errors, r.Cancelled, r.Dropped}
	}
	assert.Equal(t, [4]string{fmt.Sprint(echoes + 1), "1", "0", "0"}, byKey["tools/call echo"], "echo: requests, errors, cancelled, dropped")
	assert.Equal(t, [4]string{"3", "0", "2", "0"}, byKey["tools/call sleep"], "sleep: requests, errors, cancelled, dropped")
	// The two clients' and the readiness handshake's, which the page's
	// readiness check made at its first load.
	assert.Equal(t, [4]string{"3", "0", "0", "0"}, byKey["initialize"])

	// The charts: rate and p99 lines, and the outcome bars.
	require.Len(t, charts, 3)
	for i, c := range charts {
		assert.Greater(t, c.Width, 100.0, "chart %d drawn", i)
		assert.GreaterOrEqual(t, c.Children, 2, "chart %d has content", i)
	}
	assert.Greater(t, strings.Count(charts[0].Points, ","), 100, "the rate line has its points")
	assert.NotEmpty(t, charts[1].Points)
	assert.Greater(t, charts[2].Rects, 2, "outcome bars (ok, tool_error, cancelled) besides the frame")

	// The cancelled and the slow call, on the first screen.
	inView := func(b box) bool { return b.Top >= 0 && b.Bottom <= viewport.H }
	ci := slices.IndexFunc(boxes, func(b box) bool { return b.Kind == "cancelled" && b.ID == cancelledID })
	require.GreaterOrEqual(t, ci, 0, "the cancelled call in needs attention: %+v", boxes)
	assert.True(t, inView(boxes[ci]), "the cancelled call on the first screen: %+v", boxes[ci])
	si := slices.IndexFunc(boxes, func(b box) bool { return b.Kind == "slow" })
	require.GreaterOrEqual(t, si, 0, "a slow call in needs attention: %+v", boxes)
	assert.Equal(t, "tools/call sleep", boxes[si].Key, "the slowest: %+v", boxes[si])
	assert.True(t, inView(boxes[si]), "the slowest call on the first screen: %+v", boxes[si])
	assert.Regexp(t, `^/debug/vigil/trace/[0-9a-f]{32}$`, boxes[si].Href)
	require.Regexp(t, `^/debug/vigil/trace/[0-9a-f]{32}$`, boxes[ci].Href, "the cancelled call links to its trace")

	// A filter link narrows the list to the cancellations.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#filters a[href*="outcome=cancelled"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#filter-on`)),
	))
	location, err := chromedp.Run(bctx, chromedp.Location())
	require.NoError(t, err)
	assert.Contains(t, location, "outcome=cancelled")
	kinds, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#attention tr.att .kind')).map(k => k.textContent.trim())`))
	require.NoError(t, err)
	assert.Equal(t, []string{"cancelled", "cancelled"}, kinds)
	assert.Less(t, len(kinds), len(boxes))

	// The cancelled call's trace view, by a click.
	{
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Navigate(page),
			chromedp.Click(chromedp.CSS(`#attention tr.att-cancelled a.trace-link[href="`+boxes[ci].Href+`"]`)),
			chromedp.WaitReady(chromedp.CSS("body")),
		))
		location, err := chromedp.Run(bctx, chromedp.Location())
		require.NoError(t, err)
		body, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
		require.NoError(t, err)
		assert.Contains(t, location, boxes[ci].Href)
		assert.Contains(t, body, "client_cancel")
		assert.Contains(t, body, "tools/call sleep")
		// The span tree: the server span of the call, with its bar.
		spans, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('tr.span b')).map(b => b.textContent)`))
		require.NoError(t, err)
		assert.Contains(t, spans, "tools/call sleep", "the span tree names the call's server span")
		bars, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.span svg.bar rect').length`))
		require.NoError(t, err)
		assert.Equal(t, len(spans), bars, "each span has its bar")
	}
	stopConsole()
	<-consoleDone

	// The JSON of the filtered view.
	var filtered debugSnapshot
	require.NoError(t, json.Unmarshal([]byte(svcGet(t, hc, svc.base+"/debug/vigil?format=json&outcome=cancelled&key=tools/call+sleep", http.StatusOK)), &filtered))
	assert.Len(t, filtered.Attention, 2)
	require.Len(t, filtered.Stats, 1)
	assert.Equal(t, "tools/call sleep", filtered.Stats[0].Key)

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, consoleErrors, "no console error")
}

// writeScreenshot writes png to the test's artifact directory and, when
// VIGIL_SCREENSHOT names a file, there (docs/debug-page.png, the picture
// of docs/operations.md).
func writeScreenshot(t *testing.T, png []byte) {
	t.Helper()
	require.NotEmpty(t, png)
	path := filepath.Join(t.ArtifactDir(), "debug-page.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	if p := os.Getenv("VIGIL_SCREENSHOT"); p != "" {
		require.NoError(t, os.WriteFile(p, png, 0o644))
		t.Logf("screenshot: %s", p)
	}
}
