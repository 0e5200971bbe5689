package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/telemetry"
)

// The load of the end-to-end test: e2eSessions concurrent sessions, each
// making these tools/call requests concurrently, then one probe session
// whose calls are looked up in Jaeger. The calls of all sessions that are
// interrupted are made together, after the others.
const (
	e2eSessions  = 8
	e2eEchoes    = 40 // echo: answered with a result
	e2eSleeps    = 5  // sleep 5 ms: answered with a result
	e2eUnknown   = 2  // a tool that does not exist: answered as the client sees
	e2eCancelled = 3  // sleep cancelled with notifications/cancelled: client_cancel
	e2eAborted   = 3  // sleep whose POST the client abandons, its session living on: stream_close
)

// TestE2EPrometheusAndJaeger runs vigil under load next to a real Prometheus
// (scraping /metrics every second, exemplar storage on) and a real Jaeger v2
// (receiving vigil's spans over OTLP/HTTP), all on loopback. The client
// keeps the ground truth of what it did and saw; the test then proves
// through Prometheus's HTTP API that every mcp_server_* metric exists with
// its type, that outcomes, cancellations by cause and dropped responses by
// reason equal the ground truth, and that the duration histogram's exemplars
// carry the clients' trace ids; and through Jaeger's API that a tools/call
// sent with a traceparent in params._meta is a SERVER span of the client's
// trace, child of the client's span, with the semantic-convention name and
// attributes, and that cancelled calls' spans carry their cause.
//
// Every wait is on another process and bounded: the test polls the APIs of
// Prometheus and Jaeger (readiness, the scrape of the final counts, the
// arrival of spans), and vigil's /metrics for the calls it is about to
// interrupt to be in flight (the sleep tool gives the client no sign).
func TestE2EPrometheusAndJaeger(t *testing.T) {
	tools := requireE2ETools(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	api := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer api.CloseIdleConnections()
	mcp := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer mcp.CloseIdleConnections()

	jaeger := startJaeger(t, tools.jaeger, api)
	t.Logf("jaeger ready after %v (OTLP %s, query %s)", time.Since(start).Round(time.Millisecond), jaeger.otlpHTTP, jaeger.query)

	vigil, mcpURL := startVigilE2E(ctx, t, jaeger.otlpHTTP)
	u, err := url.Parse(mcpURL)
	require.NoError(t, err)
	metricsURL := "http://" + u.Host + "/metrics"
	requireOpenMetrics(ctx, t, api, metricsURL)

	promStart := time.Now()
	prom := startPrometheus(t, tools.prometheus, u.Host, api)
	t.Logf("prometheus scraping %s after %v", metricsURL, time.Since(promStart).Round(time.Millisecond))

	loadStart := time.Now()
	truth := &groundTruth{}
	runLoad(ctx, t, mcpURL, metricsURL, mcp, api, truth)
	probe := runProbe(ctx, t, mcpURL, metricsURL, mcp, api, truth)
	t.Logf("load: %v requests in %d sessions in %v; started %v, outcomes %v, causes %v, drops %v",
		truth.total(), truth.sessions, time.Since(loadStart).Round(time.Millisecond), truth.started, truth.outcomes, truth.causes, truth.drops)

	t.Run("prometheus", func(t *testing.T) {
		scrapeStart := time.Now()
		waitScraped(ctx, t, prom, truth)
		t.Logf("final counts scraped %v after the load", time.Since(scrapeStart).Round(time.Millisecond))
		assertMetricTypes(ctx, t, prom)
		assertGroundTruth(ctx, t, prom, truth)
		assertExemplars(ctx, t, prom, truth, start)
	})

	t.Run("jaeger", func(t *testing.T) {
		assertJaeger(t, jaeger, api, probe)
	})

	require.NoError(t, vigil.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// startVigilE2E starts the vigil binary on a free loopback port, exporting
// its spans to otlp, with the extra flags, and returns it with its MCP URL
// (from its log).
func startVigilE2E(ctx context.Context, t *testing.T, otlp string, extra ...string) (*peerProcess, string) {
	t.Helper()
	return startVigilE2EEnv(ctx, t, otlp, nil, extra...)
}

// startVigilE2EEnv is startVigilE2E with more environment variables.
func startVigilE2EEnv(ctx context.Context, t *testing.T, otlp string, moreEnv []string, extra ...string) (*peerProcess, string) {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "VIGIL_")
	})
	env = append(env,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=vigil-e2e",
		"OTEL_TRACES_SAMPLER=always_on",
		"OTEL_BSP_SCHEDULE_DELAY=100", // ms: spans reach Jaeger soon after the calls
	)
	env = append(env, moreEnv...)
	logs := &urlWatcher{found: make(chan string, 1)}
	p := startPeer(t, "vigil", logs, env, vigilBin, append([]string{"-http", "127.0.0.1:0", "-log-level", "debug"}, extra...)...)
	select {
	case u := <-logs.found:
		return p, u
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("vigil exited before serving: %v\n%s", err, logs.String())
	case <-ctx.Done():
		t.Fatalf("vigil did not log its URL: %v\n%s", ctx.Err(), logs.String())
	}
	return nil, ""
}

// requireOpenMetrics checks that /metrics answers in the OpenMetrics format
// when asked to (exemplars are exposed only in it), so that a missing
// endpoint fails here, plainly, rather than as a target Prometheus never
// sees up.
func requireOpenMetrics(ctx context.Context, t *testing.T, hc *http.Client, metricsURL string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s", metricsURL)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text"),
		"GET %s with Prometheus's Accept header must answer OpenMetrics (exemplars need it), got Content-Type %q", metricsURL, resp.Header.Get("Content-Type"))
}

// groundTruth is what the clients did and saw, in the terms of the metrics.
type groundTruth struct {
	mu       sync.Mutex
	sessions int
	started  map[string]float64 // by mcp_method_name
	outcomes map[string]float64 // by outcome
	causes   map[string]float64 // cancellations by cause
	drops    map[string]float64 // dropped responses by reason
	tools    map[string]float64 // tools/call durations by gen_ai_tool_name
	traceIDs map[string]bool    // the trace ids of every tools/call
}

// record counts one request of method (tool for tools/call) that ended in
// outcome, with a cancellation cause and drop reason when it was cancelled.
func (g *groundTruth) record(method, tool, traceID, outcome, cause, drop string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started == nil {
		g.started, g.outcomes, g.causes, g.drops, g.tools, g.traceIDs =
			map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]bool{}
	}
	g.started[method]++
	g.outcomes[outcome]++
	if cause != "" {
		g.causes[cause]++
	}
	if drop != "" {
		g.drops[drop]++
	}
	if method == "tools/call" {
		g.tools[tool]++
		g.traceIDs[traceID] = true
	}
}

func (g *groundTruth) addSession() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions++
}

func (g *groundTruth) total() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var n float64
	for _, v := range g.started {
		n += v
	}
	return n
}

// e2eSession is one client session that records what it does in truth.
type e2eSession struct {
	c     *e2eClient
	truth *groundTruth
}

func openSession(ctx context.Context, mcpURL string, hc *http.Client, truth *groundTruth) (*e2eSession, error) {
	c := newE2EClient(mcpURL, hc)
	if err := c.initialize(ctx); err != nil {
		return nil, err
	}
	truth.addSession()
	truth.record("initialize", "", "", mcpconv.OutcomeOK, "", "")
	return &e2eSession{c: c, truth: truth}, nil
}

// call makes a tools/call answered with a response and records its outcome
// as the client sees it. It returns the request id and the trace and span
// ids of its traceparent.
func (s *e2eSession) call(ctx context.Context, tool, label string, args map[string]any, check func(rpcMessage) error) (id int64, traceID, spanID string, err error) {
	tp, traceID, spanID := newTraceparent()
	m, err := s.c.callTool(ctx, tool, args, tp)
	if err != nil {
		return 0, "", "", err
	}
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return 0, "", "", err
	}
	outcome := mcpconv.OutcomeOK
	if m.Error != nil {
		outcome = mcpconv.OutcomeError
	}
	s.truth.record("tools/call", label, traceID, outcome, "", "")
	if check != nil {
		err = check(m)
	}
	return id, traceID, spanID, err
}

// interruption is how a call is ended before its response.
type interruption int

const (
	// interruptCancel sends notifications/cancelled for the call.
	interruptCancel interruption = iota
	// interruptAbort abandons the call's POST (cancels its HTTP request).
	interruptAbort
)

func (i interruption) String() string {
	if i == interruptCancel {
		return "cancelled with notifications/cancelled"
	}
	return "abandoned (its POST cancelled)"
}

// interruptedCall is a long sleep call, made in session s and then
// interrupted the way how says.
type interruptedCall struct {
	s       *e2eSession
	how     interruption
	traceID string // of the traceparent the call was made with
	call    *pendingCall
}

// interruptSleepMS is how long an interrupted sleep would last.
const interruptSleepMS = 60_000

// interruptCalls makes a sleep call for each of calls, waits until vigil
// reports all of them in flight (the sleep handler gives the client no sign
// that it has started, and a cancellation that arrives before its request
// is ignored), then interrupts them all and records each as cancelled, with
// the cause and drop reason its interruption means, and waits until vigil
// has none in flight. It fails if an interrupted call is answered.
func interruptCalls(ctx context.Context, metricsURL string, api *http.Client, calls []*interruptedCall) error {
	for _, c := range calls {
		tp, traceID, _ := newTraceparent()
		c.traceID = traceID
		c.call = c.s.c.startCall(ctx, "sleep", map[string]any{"ms": interruptSleepMS}, tp)
	}
	if err := waitInFlight(ctx, api, metricsURL, len(calls)); err != nil {
		for _, c := range calls {
			c.call.abort()
			<-c.call.done
		}
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range calls {
		wg.Go(func() {
			err := c.interrupt(ctx)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The client saw its calls end; vigil notices an abandoned POST a
	// moment later, and seals it once its cause settled
	// (server.StreamCloseGrace). Until then, the session's DELETE that
	// follows would make the call's cause transport_close: each outcome
	// is counted as it happened, but the ground truth here is the abort.
	return waitInFlight(ctx, api, metricsURL, 0)
}

func (c *interruptedCall) interrupt(ctx context.Context) error {
	var end callEnd
	switch c.how {
	case interruptCancel:
		var err error
		if end, err = c.s.c.cancel(ctx, c.call); err != nil {
			return err
		}
		if end.err != nil {
			return fmt.Errorf("cancelled call %d: %w", c.call.id, end.err)
		}
		c.s.truth.record("tools/call", "sleep", c.traceID, mcpconv.OutcomeCancelled, "client_cancel", "cancelled")
	case interruptAbort:
		c.call.abort()
		end = <-c.call.done
		c.s.truth.record("tools/call", "sleep", c.traceID, mcpconv.OutcomeCancelled, "stream_close", "peer_gone")
	}
	if end.msg != nil {
		raw, _ := json.Marshal(end.msg)
		return fmt.Errorf("call %d, %v, was answered (MCP: a cancelled request gets no response): %s", c.call.id, c.how, raw)
	}
	return nil
}

// waitInFlight polls vigil's /metrics until it reports want tools/call
// requests in flight.
func waitInFlight(ctx context.Context, hc *http.Client, metricsURL string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	prefix := mcpconv.MetricRequestsInFlight + `{` + mcpconv.LabelMethod + `="tools/call"} `
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("waiting for %d calls in flight: %w", want, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		got := -1.0
		for line := range strings.Lines(string(body)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				got, _ = strconv.ParseFloat(v, 64)
			}
		}
		if got == float64(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d calls in flight, vigil reports %v: %w", want, got, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func echoText(want string) func(rpcMessage) error {
	return func(m rpcMessage) error {
		if m.Error != nil {
			return fmt.Errorf("echo: error %d %s", m.Error.Code, m.Error.Message)
		}
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			return err
		}
		if len(res.Content) != 1 || res.Content[0].Text != want {
			return fmt.Errorf("echo: result %s, want the text %q", m.Result, want)
		}
		return nil
	}
}

// runLoad runs e2eSessions sessions concurrently, each making its answered
// calls concurrently; then makes their interrupted calls (all sessions at
// once) and deletes the sessions.
func runLoad(ctx context.Context, t *testing.T, mcpURL, metricsURL string, mcp, api *http.Client, truth *groundTruth) {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		sessions []*e2eSession
	)
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for i := range e2eSessions {
		wg.Go(func() {
			s, err := openSession(ctx, mcpURL, mcp, truth)
			if err != nil {
				fail(fmt.Errorf("session %d: %w", i, err))
				return
			}
			mu.Lock()
			sessions = append(sessions, s)
			mu.Unlock()
			var calls sync.WaitGroup
			for j := range e2eEchoes {
				calls.Go(func() {
					text := fmt.Sprintf("hello %d.%d", i, j)
					_, _, _, err := s.call(ctx, "echo", "echo", map[string]any{"text": text}, echoText(text))
					fail(err)
				})
			}
			for range e2eSleeps {
				calls.Go(func() {
					_, _, _, err := s.call(ctx, "sleep", "sleep", map[string]any{"ms": 5}, nil)
					fail(err)
				})
			}
			for range e2eUnknown {
				calls.Go(func() {
					_, _, _, err := s.call(ctx, "no-such-tool", mcpconv.LabelOther, map[string]any{}, nil)
					fail(err)
				})
			}
			calls.Wait()
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	var interrupted []*interruptedCall
	for _, s := range sessions {
		for range e2eCancelled {
			interrupted = append(interrupted, &interruptedCall{s: s, how: interruptCancel})
		}
		for range e2eAborted {
			interrupted = append(interrupted, &interruptedCall{s: s, how: interruptAbort})
		}
	}
	require.NoError(t, interruptCalls(ctx, metricsURL, api, interrupted))
	for _, s := range sessions {
		require.NoError(t, s.c.deleteSession(ctx))
	}
}

// probeCalls are the calls looked up in Jaeger.
type probeCalls struct {
	session        string
	echoID         int64
	echoTrace      string
	echoParent     string
	cancelledTrace string
	abandonedTrace string
}

// runProbe makes, in one more session, a tools/call echo, a cancelled
// sleep and an abandoned sleep, each with its own traceparent.
func runProbe(ctx context.Context, t *testing.T, mcpURL, metricsURL string, mcp, api *http.Client, truth *groundTruth) probeCalls {
	t.Helper()
	s, err := openSession(ctx, mcpURL, mcp, truth)
	require.NoError(t, err)
	p := probeCalls{session: s.c.session}
	p.echoID, p.echoTrace, p.echoParent, err = s.call(ctx, "echo", "echo", map[string]any{"text": "traced"}, echoText("traced"))
	require.NoError(t, err)
	cancelled := &interruptedCall{s: s, how: interruptCancel}
	abandoned := &interruptedCall{s: s, how: interruptAbort}
	require.NoError(t, interruptCalls(ctx, metricsURL, api, []*interruptedCall{cancelled, abandoned}))
	p.cancelledTrace, p.abandonedTrace = cancelled.traceID, abandoned.traceID
	require.NoError(t, s.c.deleteSession(ctx))
	return p
}

// waitScraped waits until Prometheus has scraped the end of the load: every
// request started and finished, none in flight, no session active.
func waitScraped(ctx context.Context, t *testing.T, prom *prometheusPeer, truth *groundTruth) {
	t.Helper()
	want := truth.total()
	q := `sum(` + mcpconv.MetricRequestsStarted + `) == ` + strconv.FormatFloat(want, 'f', -1, 64) +
		` and sum(` + mcpconv.MetricRequestsFinished + `) == ` + strconv.FormatFloat(want, 'f', -1, 64) +
		` and sum(` + mcpconv.MetricRequestsInFlight + `) == 0` +
		` and sum(` + mcpconv.MetricSessionsActive + `) == 0`
	pollUntil(t, "prometheus sees the load's end", 30*time.Second, prom.proc, func() error {
		res, err := prom.query(ctx, q)
		if err != nil {
			return err
		}
		if len(res) == 0 {
			started, _ := prom.scalar(ctx, `sum(`+mcpconv.MetricRequestsStarted+`)`)
			finished, _ := prom.scalar(ctx, `sum(`+mcpconv.MetricRequestsFinished+`)`)
			return fmt.Errorf("started %v, finished %v, want %v", started, finished, want)
		}
		return nil
	})
}

// e2eMetricTypes is every metric the telemetry package defines, with its
// Prometheus type.
var e2eMetricTypes = map[string]string{
	mcpconv.MetricOperationDuration:    "histogram",
	mcpconv.MetricRequestsStarted:      "counter",
	mcpconv.MetricRequestsFinished:     "counter",
	mcpconv.MetricRequestsInFlight:     "gauge",
	mcpconv.MetricSessionsActive:       "gauge",
	mcpconv.MetricSessionDuration:      "histogram",
	mcpconv.MetricCancellations:        "counter",
	mcpconv.MetricLateResponsesDropped: "counter",
	mcpconv.MetricTransportWriteErrors: "counter",
	mcpconv.MetricClientRequestsFailed: "counter",
	mcpconv.MetricMessagesRejected:     "counter",
	mcpconv.MetricResultsTooLarge:      "counter",
	mcpconv.MetricMessagesReceived:     "counter",
	mcpconv.MetricMessagesSent:         "counter",
	mcpconv.MetricBytesReceived:        "counter",
	mcpconv.MetricBytesSent:            "counter",
	mcpconv.MetricLogLinesDropped:      "counter", // registered by cmd/vigil
	mcpconv.MetricQuotaRefusals:        "counter",
	mcpconv.MetricStreamsCut:           "counter", // registered by cmd/vigil
	mcpconv.MetricAuditLinesDropped:    "counter", // registered by cmd/vigil
}

// assertMetricTypes checks, in Prometheus's metadata, that the mcp_server_
// metric families are exactly those of the telemetry package, each with its
// type, and that the series of each exist.
func assertMetricTypes(ctx context.Context, t *testing.T, prom *prometheusPeer) {
	t.Helper()
	var md map[string][]struct {
		Type string `json:"type"`
		Help string `json:"help"`
	}
	require.NoError(t, prom.apiGet(ctx, "/api/v1/metadata", url.Values{}, &md))
	// An OpenMetrics counter family is named without its _total suffix.
	family := func(name, typ string) string {
		if typ == "counter" {
			return strings.TrimSuffix(name, "_total")
		}
		return name
	}
	want := map[string]string{}
	for name, typ := range e2eMetricTypes {
		want[family(name, typ)] = typ
	}
	got := map[string]string{}
	for name, entries := range md {
		if strings.HasPrefix(name, "mcp_server_") {
			require.Len(t, entries, 1, "metadata of %s", name)
			got[name] = entries[0].Type
			assert.NotEmpty(t, entries[0].Help, "help of %s", name)
		}
	}
	assert.Equal(t, want, got, "mcp_server_ metric families and their types in Prometheus's metadata")

	res, err := prom.query(ctx, `count by (__name__) ({__name__=~"mcp_server_.*"})`)
	require.NoError(t, err)
	series := map[string]bool{}
	for _, s := range res {
		series[s.Metric["__name__"]] = true
	}
	for name, typ := range e2eMetricTypes {
		if typ == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				assert.True(t, series[name+suffix], "series of %s%s", name, suffix)
			}
			continue
		}
		assert.True(t, series[name], "series of %s", name)
	}
}

// withZeros returns m with every key of keys present (0 when absent).
func withZeros(m map[string]float64, keys ...string) map[string]float64 {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]float64{}
	}
	for _, k := range keys {
		out[k] += 0
	}
	return out
}

// nonZero returns m without its zero entries.
func nonZero(m map[string]float64) map[string]float64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
	return out
}

// assertGroundTruth compares the counters, as Prometheus scraped them, with
// what the clients did.
func assertGroundTruth(ctx context.Context, t *testing.T, prom *prometheusPeer, truth *groundTruth) {
	t.Helper()
	sumBy := func(label, expr string) map[string]float64 {
		t.Helper()
		m, err := prom.sumBy(ctx, label, expr)
		require.NoError(t, err)
		return m
	}
	assert.Equal(t, nonZero(truth.started), nonZero(sumBy(mcpconv.LabelMethod, mcpconv.MetricRequestsStarted)),
		"requests started by method")
	assert.Equal(t, withZeros(truth.outcomes, mcpconv.OutcomeOK, mcpconv.OutcomeError, mcpconv.OutcomeCancelled, mcpconv.OutcomeDropped),
		sumBy(mcpconv.LabelOutcome, mcpconv.MetricRequestsFinished), "requests finished by outcome")
	// upstream_closed is a gateway's cause only: plain vigil has no series of it.
	assert.Equal(t, withZeros(truth.causes, "client_cancel", "transport_close", "stream_close", "shutdown", "timeout", mcpconv.LabelOther),
		sumBy(mcpconv.LabelCause, mcpconv.MetricCancellations), "cancellations by cause")
	assert.Equal(t, withZeros(truth.drops, "cancelled", "writer_closed", "peer_gone", "shutdown"),
		sumBy(mcpconv.LabelReason, mcpconv.MetricLateResponsesDropped), "dropped responses by reason")
	assert.Equal(t, nonZero(truth.tools),
		nonZero(sumBy(mcpconv.LabelTool, mcpconv.MetricOperationDuration+`_count{`+mcpconv.LabelMethod+`="tools/call"}`)),
		"tools/call durations by tool")
	assert.Equal(t, nonZero(truth.tools),
		nonZero(sumBy(mcpconv.LabelTool, mcpconv.MetricRequestsFinished+`{`+mcpconv.LabelMethod+`="tools/call"}`)),
		"tools/call finished by tool")

	started, err := prom.scalar(ctx, `sum(`+mcpconv.MetricRequestsStarted+`)`)
	require.NoError(t, err)
	finished, err := prom.scalar(ctx, `sum(`+mcpconv.MetricRequestsFinished+`)`)
	require.NoError(t, err)
	assert.Equal(t, int64(truth.total()), int64(started), "requests started")
	assert.Equal(t, int64(started), int64(finished), "the outcomes partition the started requests")

	sessions := float64(truth.sessions)
	assert.Equal(t, map[string]float64{telemetry.TransportStreamableHTTP: sessions},
		nonZero(sumBy(mcpconv.LabelTransport, mcpconv.MetricSessionDuration+`_count`)), "ended sessions by transport")
	assert.Equal(t, map[string]float64{"transport_close": sessions},
		nonZero(sumBy(mcpconv.LabelCause, mcpconv.MetricSessionDuration+`_count`)), "ended sessions by cause (all deleted)")
	assert.Equal(t, map[string]float64{}, nonZero(sumBy(mcpconv.LabelReason, mcpconv.MetricMessagesRejected)), "rejected messages")
	assert.Equal(t, map[string]float64{}, nonZero(sumBy(mcpconv.LabelQuota, mcpconv.MetricQuotaRefusals)), "quota refusals: the load stays within the default quotas")
}

// assertExemplars checks that the duration histogram and the outcome
// counter of tools/call have exemplars in Prometheus, each with the trace id
// of a call the clients made.
func assertExemplars(ctx context.Context, t *testing.T, prom *prometheusPeer, truth *groundTruth, since time.Time) {
	t.Helper()
	for _, q := range []string{
		mcpconv.MetricOperationDuration + `_bucket{` + mcpconv.LabelMethod + `="tools/call"}`,
		mcpconv.MetricRequestsFinished + `{` + mcpconv.LabelMethod + `="tools/call"}`,
	} {
		var data []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		}
		require.NoError(t, prom.apiGet(ctx, "/api/v1/query_exemplars", url.Values{
			"query": {q},
			"start": {strconv.FormatInt(since.Add(-time.Minute).Unix(), 10)},
			"end":   {strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)},
		}, &data))
		n := 0
		for _, series := range data {
			for _, e := range series.Exemplars {
				n++
				id := e.Labels[mcpconv.ExemplarTraceID]
				assert.True(t, truth.traceIDs[id], "exemplar of %v: trace_id %q is not one the clients sent", series.SeriesLabels, id)
			}
		}
		assert.Positive(t, n, "exemplars of %s", q)
		t.Logf("%d exemplars of %s in %d series", n, q, len(data))
	}
}

// assertJaeger finds the probe calls in Jaeger.
func assertJaeger(t *testing.T, jaeger *jaegerPeer, hc *http.Client, probe probeCalls) {
	const timeout = 30 * time.Second
	start := time.Now()
	tr := jaeger.trace(t, hc, probe.echoTrace, "tools/call echo", timeout)
	t.Logf("echo span found in jaeger %v after the load", time.Since(start).Round(time.Millisecond))
	span := spanNamed(t, tr, "tools/call echo")
	assert.Equal(t, probe.echoTrace, span.TraceID)
	require.Len(t, span.References, 1, "references of %+v", span)
	assert.Equal(t, "CHILD_OF", span.References[0].RefType)
	assert.Equal(t, probe.echoTrace, span.References[0].TraceID, "parent trace")
	assert.Equal(t, probe.echoParent, span.References[0].SpanID, "parent span: the client's, from params._meta.traceparent")
	tags := span.tags()
	for k, v := range map[string]string{
		"span.kind":                           "server",
		string(mcpconv.MCPMethodNameKey):      "tools/call",
		string(mcpconv.GenAIToolNameKey):      "echo",
		string(mcpconv.GenAIOperationNameKey): mcpconv.OperationExecuteTool,
		string(mcpconv.JSONRPCRequestIDKey):   strconv.FormatInt(probe.echoID, 10),
		string(mcpconv.MCPProtocolVersionKey): "2025-11-25",
		// The Mcp-Session-Id the client was given: one name for the session
		// in the client, the server's logs and its traces.
		string(mcpconv.MCPSessionIDKey): probe.session,
	} {
		assert.Equal(t, v, tags[k], "tag %s of %s", k, span.OperationName)
	}
	assert.NotContains(t, tags, string(mcpconv.CancelCauseKey))
	assert.NotEqual(t, "true", tags["error"], "an answered echo is not an error")
	assert.Equal(t, "vigil-e2e", tr.Processes[span.ProcessID].ServiceName, "service.name from OTEL_SERVICE_NAME")

	for _, c := range []struct{ name, traceID, cause string }{
		{name: "cancelled", traceID: probe.cancelledTrace, cause: "client_cancel"},
		{name: "abandoned", traceID: probe.abandonedTrace, cause: "stream_close"},
	} {
		tr := jaeger.trace(t, hc, c.traceID, "tools/call sleep", timeout)
		span := spanNamed(t, tr, "tools/call sleep")
		tags := span.tags()
		assert.Equal(t, c.cause, tags[string(mcpconv.CancelCauseKey)], "%s call: %s", c.name, mcpconv.CancelCauseKey)
		assert.Equal(t, "sleep", tags[string(mcpconv.GenAIToolNameKey)], "%s call", c.name)
		assert.NotEqual(t, "true", tags["error"], "%s call: a cancellation is not an error", c.name)
		events := map[string]string{}
		for _, l := range span.Logs {
			f := kvMap(l.Fields)
			events[f["event"]] = f[string(mcpconv.CancelCauseKey)]
		}
		assert.Equal(t, c.cause, events[mcpconv.EventCanceled], "%s call: the %q event and its cause, in %+v", c.name, mcpconv.EventCanceled, span.Logs)
	}
}

func spanNamed(t *testing.T, tr jaegerTrace, name string) jaegerSpan {
	t.Helper()
	for _, s := range tr.Spans {
		if s.OperationName == name {
			return s
		}
	}
	t.Fatalf("no span %q in trace %s", name, tr.TraceID)
	return jaegerSpan{}
}
