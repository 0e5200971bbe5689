package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// mixedRunRequests is how many requests TestMixedRunSignalsAgree makes, at
// least.
const mixedRunRequests = 220

// signalView is how one signal tells a request's end: its outcome (ok,
// error, cancelled, dropped), error type (the metrics' error_type) and
// the cause of its cancellation (a timeout's too).
type signalView struct{ outcome, errType, cause string }

// mixedRequest is one request of the mixed run: what identifies it in
// every signal, and how its client saw it end.
type mixedRequest struct {
	id           string // its JSON-RPC id, unique in the run
	method, tool string
	client       signalView
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMixedRunSignalsAgree checks issue 68's fifth acceptance item: over a
// mixed run of mixedRunRequests requests in both eras over HTTP (results,
// tool errors, invalid arguments, -32602, -32601, calls the client
// cancels, streams it closes, handler timeouts, DELETEs during a call,
// killed clients, calls refused by a tool's rate), each request's span,
// log line and client agree on its outcome, error type and cancel cause,
// and the metrics and the live page count, by method and tool, the
// outcomes and error types the requests had (the metrics the causes too,
// and one duration per request, whatever its outcome).
func TestMixedRunSignalsAgree(t *testing.T) {
	cfg, err := parseConfig([]string{
		"-log-format", "json", "-log-level", "debug", "-request-timeout", "300ms",
		"-tool-rate-limits", "confirm_action=0.001/1",
	}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	logs := &syncBuffer{}
	spans := tracetest.NewSpanRecorder()
	page := debugpage.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSyncer(page.SpanExporter()))
	reg := prometheus.NewRegistry()
	svc, err := newService(cfg, newLogger(cfg, logs), reg, page, nil, vigil.WithTracerProvider(tp))
	require.NoError(t, err)
	defer func() { _ = svc.Shutdown(context.Background()) }()
	ts := httptest.NewServer(svc.Endpoint())
	defer ts.Close()
	admin := httptest.NewServer(svc.AdminHandler())
	defer admin.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	run := &mixedRun{t: t, hc: hc, url: ts.URL}
	for len(run.requests) < mixedRunRequests {
		run.round()
	}
	run.session().delete(t)

	// Every request ended (Shutdown waits for those in flight: a stream
	// the client closed last may not have been noticed yet), and the
	// scrape records the outcomes still batched.
	require.NoError(t, svc.Shutdown(t.Context()))
	_, err = reg.Gather()
	require.NoError(t, err)
	require.NoError(t, tp.ForceFlush(t.Context()))

	bySpan := spanViews(t, spans.Ended())
	byLog := logViews(t, logs.String())
	agree := 0
	for _, r := range run.requests {
		span, log := bySpan[r.id], byLog[r.id]
		if assert.Equal(t, r.client, span, "request %s (%s %s): the span against the client", r.id, r.method, r.tool) &&
			assert.Equal(t, r.client, log, "request %s (%s %s): the log line against the client", r.id, r.method, r.tool) {
			agree++
		}
	}
	kinds := map[signalView]int{}
	for _, r := range run.requests {
		kinds[r.client]++
	}
	t.Logf("%d requests, %d agree (client, span, log line); by outcome, error type and cause: %v", len(run.requests), agree, kinds)

	// The metrics: the durations by method and tool, whatever the
	// outcome; the finished requests by method, tool, outcome and error
	// type.
	durations, finished := map[string]int{}, map[string]int{}
	for _, r := range run.requests {
		method, tool := metricLabels(r)
		durations[method+" "+tool]++
		finished[method+" "+tool+" "+r.client.outcome+" "+r.client.errType]++
	}
	gotDurations, gotFinished := map[string]int{}, map[string]int{}
	for key, v := range scrapeSeries(t, reg) {
		family, l := seriesLabels(key)
		switch family {
		case mcpconv.MetricOperationDuration:
			if v > 0 && l[mcpconv.LabelMethod] != "initialize" && l[mcpconv.LabelMethod] != "notifications/initialized" {
				gotDurations[l[mcpconv.LabelMethod]+" "+l[mcpconv.LabelTool]] += int(v)
			}
		case mcpconv.MetricRequestsFinished:
			if v > 0 && l[mcpconv.LabelMethod] != "initialize" {
				gotFinished[l[mcpconv.LabelMethod]+" "+l[mcpconv.LabelTool]+" "+l[mcpconv.LabelOutcome]+" "+l[mcpconv.LabelErrorType]] += int(v)
			}
		}
	}
	causes, gotCauses := map[string]int{}, map[string]int{}
	for _, r := range run.requests {
		if r.client.cause != "" {
			causes[r.client.cause]++
		}
	}
	for key, v := range scrapeSeries(t, reg) {
		if family, l := seriesLabels(key); family == mcpconv.MetricCancellations && v > 0 {
			gotCauses[l[mcpconv.LabelCause]] += int(v)
		}
	}
	assert.Equal(t, causes, gotCauses, "cancellations by cause")
	assert.Equal(t, durations, gotDurations, "durations by method and tool")
	assert.Equal(t, finished, gotFinished, "finished by method, tool, outcome and error type")

	// The live page: its counts by method/tool and outcome.
	slots := map[string]map[string]int{}
	for _, r := range run.requests {
		key := pageKey(r)
		if slots[key] == nil {
			slots[key] = map[string]int{}
		}
		slots[key][pageSlot(r.client)]++
	}
	snap := pageStats(t, hc, admin.URL)
	delete(snap, "initialize")
	assert.Equal(t, slots, snap, "the live page's outcomes by method/tool")
}

// mixedRun drives the mixed run's requests and keeps how each ended for
// its client.
type mixedRun struct {
	t        *testing.T
	hc       *http.Client
	url      string
	ids      int
	current  *httpSeriesClient // the 2025-11-25 session of the run
	requests []mixedRequest
}

// session returns the run's session, opening one when there is none.
func (r *mixedRun) session() *httpSeriesClient {
	if r.current == nil {
		r.current = &httpSeriesClient{hc: r.hc, url: r.url, id: int64(r.ids)}
		r.current.initialize(r.t)
		r.ids = int(r.current.id) + 1
	}
	return r.current
}

// round sends one request of each kind in each era.
func (r *mixedRun) round() {
	stateless := &httpSeriesClient{hc: r.hc, url: r.url, stateless: true}
	for _, c := range []*httpSeriesClient{r.session(), stateless} {
		c.id = int64(r.ids)
		r.call(c, "tools/call", "echo", map[string]any{"text": "hi"}, "")
		r.call(c, "tools/call", "convert_temperature", map[string]any{"value": -5, "from": "kelvin", "to": "celsius"}, mcpconv.ErrorTypeTool)
		r.call(c, "tools/call", "echo", map[string]any{}, mcpconv.ErrorTypeInvalidArguments)
		r.call(c, "tools/call", "no_such_tool", map[string]any{}, "")
		r.call(c, "made/up", "", nil, "")
		r.call(c, "tools/call", "sleep", map[string]any{"ms": 5000}, "") // over -request-timeout
		r.call(c, "tools/call", "confirm_action", map[string]any{"action": "x"}, mcpconv.ErrorTypeTool)
		r.call(c, "tools/list", "", map[string]any{}, "")
		r.cancel(c, c.stateless)
		r.cancel(c, true) // the client closes the call's stream
		r.ids = int(c.id) + 1
	}
	r.deleteDuringCall()
	r.killDuringCall()
}

// killDuringCall kills a client of a session with its GET stream open
// while a countdown runs: both of its connections close.
func (r *mixedRun) killDuringCall() {
	t := r.t
	c := r.session()
	c.id = int64(r.ids)
	ctx, kill := context.WithCancel(t.Context())
	defer kill()
	var listen *http.Response
	for try := 0; listen == nil || listen.StatusCode == http.StatusServiceUnavailable && try < maxShedRetries; try++ { // shed as overloaded: again
		if listen != nil {
			_ = listen.Body.Close()
		}
		get, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		require.NoError(t, err)
		get.Header = http.Header{"Accept": {"text/event-stream"}, "Mcp-Session-Id": {c.session}, "MCP-Protocol-Version": {protocol.Version20251125}}
		listen, err = c.hc.Do(get)
		require.NoError(t, err)
	}
	defer func() { _ = listen.Body.Close() }()
	require.Equal(t, http.StatusOK, listen.StatusCode)
	c.id++
	resp := c.post(ctx, t, "tools/call", c.id, toolParams("countdown", map[string]any{"from": 100}, "", "p"))
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp)
	require.NotNil(t, events)
	first, err := events.next()
	require.NoError(t, err)
	require.Equal(t, "notifications/progress", first.Method)
	kill()
	r.requests = append(r.requests, mixedRequest{
		id: fmt.Sprint(c.id), method: "tools/call", tool: "countdown",
		client: signalView{outcome: mcpconv.OutcomeCancelled, errType: mcpconv.ErrorTypeCancelled, cause: "transport_close"},
	})
	r.ids = int(c.id) + 1
	r.current = nil
}

// call sends one request and records how its client saw it end: the
// error code of an error answer (none for a caller's fault), toolErr for a
// result with isError.
func (r *mixedRun) call(c *httpSeriesClient, method, tool string, args map[string]any, toolErr string) {
	params := map[string]any{}
	if tool != "" {
		params = map[string]any{"name": tool, "arguments": args}
	}
	m := c.call(r.t, method, params)
	view := signalView{outcome: mcpconv.OutcomeOK}
	switch {
	case m.Error != nil:
		view.outcome = mcpconv.OutcomeError
		if code := protocol.Code(m.Error.Code); !clientFault(code) {
			view.errType = fmt.Sprint(m.Error.Code)
		}
		if protocol.Code(m.Error.Code) == protocol.CodeRequestTimeout {
			view.cause = "timeout"
		}
	default:
		var res struct {
			IsError bool `json:"isError"`
		}
		require.NoError(r.t, json.Unmarshal(m.Result, &res))
		if res.IsError {
			view.errType = toolErr
		}
	}
	r.requests = append(r.requests, mixedRequest{id: fmt.Sprint(c.id), method: method, tool: tool, client: view})
}

// clientFault reports whether code is a caller's fault, which has no
// error type.
func clientFault(code protocol.Code) bool {
	switch code {
	case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound, protocol.CodeInvalidParams, protocol.CodeResourceNotFound:
		return true
	}
	return false
}

// cancel starts a countdown and, once it runs, cancels it: by closing its
// stream when closeStream, else with notifications/cancelled.
func (r *mixedRun) cancel(c *httpSeriesClient, closeStream bool) {
	t := r.t
	c.id++
	ctx, abort := context.WithCancel(t.Context())
	defer abort()
	resp := c.post(ctx, t, "tools/call", c.id, toolParams("countdown", map[string]any{"from": 100}, "", "p"))
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp)
	require.NotNil(t, events)
	first, err := events.next()
	require.NoError(t, err)
	require.Equal(t, "notifications/progress", first.Method)
	cause := "client_cancel"
	if closeStream {
		cause = "stream_close"
	}
	r.requests = append(r.requests, mixedRequest{
		id: fmt.Sprint(c.id), method: "tools/call", tool: "countdown",
		client: signalView{outcome: mcpconv.OutcomeCancelled, errType: mcpconv.ErrorTypeCancelled, cause: cause},
	})
	if closeStream {
		abort()
		return
	}
	c.notify(t, "notifications/cancelled", map[string]any{"requestId": c.id, "reason": "mixed run"})
	for {
		m, err := events.next()
		if err != nil {
			return
		}
		require.NotEqual(t, fmt.Sprint(c.id), string(m.ID), "a cancelled call is not answered")
	}
}

// deleteDuringCall ends the run's session with DELETE while a countdown
// runs on it: the call is answered -32000 "session terminated", and
// recorded cancelled.
func (r *mixedRun) deleteDuringCall() {
	t := r.t
	c := r.session()
	c.id = int64(r.ids)
	c.id++
	resp := c.post(t.Context(), t, "tools/call", c.id, toolParams("countdown", map[string]any{"from": 100}, "", "p"))
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp)
	require.NotNil(t, events)
	first, err := events.next()
	require.NoError(t, err)
	require.Equal(t, "notifications/progress", first.Method)
	c.delete(t)
	view := signalView{outcome: mcpconv.OutcomeCancelled, errType: mcpconv.ErrorTypeCancelled, cause: "transport_close"}
	for {
		m, err := events.next()
		if err != nil {
			break
		}
		if string(m.ID) == fmt.Sprint(c.id) {
			require.NotNil(t, m.Error, "answered with an error")
			require.Equal(t, int64(protocol.CodeServerBusy), m.Error.Code)
			break
		}
	}
	r.requests = append(r.requests, mixedRequest{id: fmt.Sprint(c.id), method: "tools/call", tool: "countdown", client: view})
	r.ids = int(c.id) + 1
	r.current = nil
}

// spanViews returns how each request's span tells its end, by request id.
func spanViews(t *testing.T, ended []sdktrace.ReadOnlySpan) map[string]signalView {
	t.Helper()
	out := map[string]signalView{}
	for _, s := range ended {
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		id, ok := attrs["jsonrpc.request.id"]
		if !ok || s.SpanKind().String() != "server" {
			continue
		}
		v := signalView{outcome: mcpconv.OutcomeOK, errType: attrs["error.type"], cause: attrs[string(mcpconv.CancelCauseKey)]}
		switch {
		case v.errType == mcpconv.ErrorTypeCancelled:
			v.outcome = mcpconv.OutcomeCancelled
		case v.errType == mcpconv.ErrorTypeDropped:
			v.outcome = mcpconv.OutcomeDropped
		case attrs["rpc.response.status_code"] != "":
			v.outcome = mcpconv.OutcomeError
		}
		if v.errType != "" && v.outcome != mcpconv.OutcomeCancelled && s.Status().Code != codes.Error {
			v.outcome += " (status not error)"
		}
		_, dup := out[id]
		require.False(t, dup, "one span per request: %s", id)
		out[id] = v
	}
	return out
}

// logViews returns how each request's log line tells its end, by
// request id.
func logViews(t *testing.T, logs string) map[string]signalView {
	t.Helper()
	out := map[string]signalView{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
			Outcome   string `json:"outcome"`
			ErrorType string `json:"error_type"`
			Cause     string `json:"cause"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec.Msg != "request" {
			continue
		}
		out[rec.RequestID] = signalView{outcome: rec.Outcome, errType: rec.ErrorType, cause: rec.Cause}
	}
	return out
}

// metricLabels returns the method and tool labels of r's metrics.
func metricLabels(r mixedRequest) (method, tool string) {
	switch {
	case r.method == "made/up":
		return mcpconv.LabelOther, ""
	case r.tool == "no_such_tool":
		return r.method, mcpconv.LabelOther
	}
	return r.method, r.tool
}

// pageKey returns r's key on the live page.
func pageKey(r mixedRequest) string {
	method, tool := metricLabels(r)
	if tool == "" {
		return method
	}
	if tool == mcpconv.LabelOther {
		return mcpconv.LabelOther
	}
	return method + " " + tool
}

// pageSlot returns the live page's name of how a request ended: its
// outcome, with the cause of a cancelled request or of an error a timeout
// caused.
func pageSlot(v signalView) string {
	switch {
	case v.outcome == mcpconv.OutcomeOK && v.errType == "":
		return "ok"
	case v.outcome == mcpconv.OutcomeOK:
		return v.errType
	case v.cause != "":
		return v.outcome + ":" + v.cause
	}
	return v.outcome
}

// pageStats returns the live page's counts since start by key and outcome
// (with its cause).
func pageStats(t *testing.T, hc *http.Client, base string) map[string]map[string]int {
	t.Helper()
	var snap struct {
		Stats []struct {
			Key   string `json:"key"`
			Total struct {
				ByOutcome map[string]int `json:"by_outcome"`
			} `json:"since_start"`
		} `json:"stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(svcGet(t, hc, base+"/debug/vigil?format=json", http.StatusOK)), &snap))
	out := map[string]map[string]int{}
	for _, row := range snap.Stats {
		if len(row.Total.ByOutcome) == 0 {
			continue
		}
		out[row.Key] = row.Total.ByOutcome
	}
	return out
}
