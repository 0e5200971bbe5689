package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// seriesValues maps each mcp_* series of a registry (its family and labels)
// to its value: a counter's or gauge's value, a histogram's count.
type seriesValues map[string]float64

// scrapeSeries gathers reg (which records the outcomes waiting for their
// batch first).
func scrapeSeries(t *testing.T, reg *prometheus.Registry) seriesValues {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := seriesValues{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "mcp_") {
			continue
		}
		for _, m := range f.GetMetric() {
			out[seriesKey(f.GetName(), m.GetLabel())] = seriesValue(m)
		}
	}
	return out
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	pairs := make([]string, 0, len(labels))
	for _, l := range labels {
		pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func seriesValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// seriesLabels parses the labels of a seriesKey.
func seriesLabels(key string) (family string, labels map[string]string) {
	family, rest, _ := strings.Cut(key, "{")
	labels = map[string]string{}
	for p := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			labels[k] = strings.Trim(v, `"`)
		}
	}
	return family, labels
}

// seriesClient sends the requests of one protocol era over one transport.
type seriesClient interface {
	// call sends a request and returns its response.
	call(t *testing.T, method string, params map[string]any) rpcMessage
	// cancelCall starts a countdown, waits for its first progress
	// notification, then cancels it as a client of the era does (the
	// 2026-07-28 client over HTTP closes the request's stream), and waits
	// until the call's stream or the session has said no more about it.
	cancelCall(t *testing.T)
	// listen opens a 2026-07-28 subscriptions/listen stream, waits for its
	// acknowledgement, and ends it as a client does.
	listen(t *testing.T)
}

// TestSeriesMovedExistedAtZero checks issue 68's first acceptance item:
// after one request of each kind in both eras (a 2025-11-25 session and
// 2026-07-28 stateless requests) over Streamable HTTP and over stdio,
// every series a request moved (counters and gauges; successes, tool
// errors, invalid arguments, -32601, -32602, -32021, cancels, a listen
// stream) existed at 0 before the first request (the stdio ones once stdio
// serves, none before). The request durations appear at first use (their
// exact counts are the finished counter's, at zero): none exists at zero,
// none carries an empty protocol version or network, and in both eras the
// failures' carry their error type and status code (semconv error.type
// and rpc.response.status_code).
func TestSeriesMovedExistedAtZero(t *testing.T) {
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	svc, err := newService(cfg, newLogger(cfg, io.Discard), reg, debugpage.NewRecorder(), nil)
	require.NoError(t, err)
	defer func() { _ = svc.Shutdown(context.Background()) }()
	ts := httptest.NewServer(svc.Endpoint())
	defer ts.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	start := scrapeSeries(t, reg)
	for key := range start {
		assert.NotContains(t, key, `network_transport="pipe"`, "a stdio series before stdio serves")
	}

	ctx := t.Context()
	conns := svc.Instrumentation.ConnServer(svc.Server, telemetry.TransportStdio)
	stdioSession := startPipeClient(ctx, t, conns, false)
	stdioStateless := startPipeClient(ctx, t, conns, true)
	atZero := scrapeSeries(t, reg) // with stdio serving
	for key, v := range atZero {
		if _, ok := start[key]; !ok {
			assert.True(t, strings.Contains(key, `transport="stdio"`) || strings.Contains(key, `network_transport="pipe"`),
				"a series stdio's start made is stdio's: %s", key)
		}
		if !strings.Contains(key, mcpconv.MetricSessionsActive) {
			assert.Zero(t, v, key)
		}
	}
	preStarted := len(atZero)

	httpSession := &httpSeriesClient{hc: hc, url: ts.URL}
	httpSession.initialize(t)
	stdioSession.initialize(t)
	clients := map[string]seriesClient{
		"http session": httpSession, "http stateless": &httpSeriesClient{hc: hc, url: ts.URL, stateless: true},
		"stdio session": stdioSession, "stdio stateless": stdioStateless,
	}
	for name, c := range clients {
		t.Logf("%s", name)
		driveEveryKind(t, c, strings.HasSuffix(name, "stateless"))
	}
	httpSession.delete(t)
	stdioSession.close(t)
	stdioStateless.close(t)

	// The requests whose streams the clients closed end when the server
	// notices: wait for none in flight.
	require.Eventually(t, func() bool {
		for key, v := range scrapeSeries(t, reg) {
			if strings.HasPrefix(key, mcpconv.MetricRequestsInFlight+"{") && v != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	after := scrapeSeries(t, reg)
	moved, existed := 0, 0
	for key, v := range after {
		before, was := atZero[key]
		if was && before == v {
			continue
		}
		if family, _ := seriesLabels(key); family == mcpconv.MetricOperationDuration {
			continue // made at first use
		}
		moved++
		if assert.True(t, was, "moved without existing at 0 before: %s = %v", key, v) {
			existed++
		}
	}
	t.Logf("series at start (HTTP): %d, with stdio serving: %d; moved by the run: %d, of which existed at 0: %d",
		len(start), preStarted, moved, existed)
	assert.Positive(t, moved)

	for key := range atZero {
		family, _ := seriesLabels(key)
		assert.NotEqual(t, mcpconv.MetricOperationDuration, family, "a duration at zero: %s", key)
	}
	inEra := map[string]bool{} // era + " " + label=value of the durations the run made
	for key, v := range after {
		family, labels := seriesLabels(key)
		if family != mcpconv.MetricOperationDuration || v == 0 {
			continue
		}
		assert.NotEmpty(t, labels[mcpconv.LabelProtocolVersion], key)
		assert.NotEmpty(t, labels[mcpconv.LabelNetTransport], key)
		for k, val := range labels {
			inEra[labels[mcpconv.LabelProtocolVersion]+" "+k+"="+val] = true
		}
	}
	for _, era := range []string{protocol.Version20251125, protocol.Version20260728} {
		for _, want := range []string{
			mcpconv.LabelErrorType + "=",
			mcpconv.LabelErrorType + "=" + mcpconv.ErrorTypeTool,
			mcpconv.LabelErrorType + "=" + mcpconv.ErrorTypeInvalidArguments,
			mcpconv.LabelStatusCode + "=" + protocol.CodeInvalidParams.String(),
		} {
			assert.True(t, inEra[era+" "+want], "in %s, a duration carries %s", era, want)
		}
	}
	assert.True(t, inEra[protocol.Version20251125+" "+mcpconv.LabelStatusCode+"="+protocol.CodeMethodNotFound.String()], "a -32601's duration carries its status code")
}

// driveEveryKind sends one request of each kind of the era through c.
func driveEveryKind(t *testing.T, c seriesClient, stateless bool) {
	call := func(method string, params map[string]any, check func(rpcMessage) error) {
		t.Helper()
		m := c.call(t, method, params)
		require.NoError(t, check(m), "%s %v: %+v %s", method, params, m.Error, m.Result)
	}
	ok := func(m rpcMessage) error {
		if m.Error != nil {
			return fmt.Errorf("error %d %s", m.Error.Code, m.Error.Message)
		}
		return nil
	}
	tool := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	if stateless {
		call("server/discover", map[string]any{}, ok)
	} else {
		call("ping", map[string]any{}, ok)
		call("logging/setLevel", map[string]any{"level": "info"}, ok)
	}
	call("tools/list", map[string]any{}, ok)
	call("tools/call", tool("echo", map[string]any{"text": "hi"}), ok)
	call("tools/call", tool("sleep", map[string]any{"ms": 1}), ok)
	call("tools/call", tool("countdown", map[string]any{"from": 1}), ok)
	call("tools/call", tool("convert_temperature", map[string]any{"value": 0, "from": "celsius", "to": "kelvin"}), ok)
	call("tools/call", tool("convert_temperature", map[string]any{"value": -5, "from": "kelvin", "to": "celsius"}), isToolError)
	call("tools/call", tool("echo", map[string]any{}), isToolError) // invalid arguments
	call("tools/call", tool("confirm_action", map[string]any{"action": "x"}), func(rpcMessage) error { return nil })
	call("tools/call", tool("no_such_tool", map[string]any{}), rpcError(int64(protocol.CodeInvalidParams)))
	call("made/up", map[string]any{}, rpcError(int64(protocol.CodeMethodNotFound)))
	if stateless {
		c.listen(t)
	}
	c.cancelCall(t)
}

// httpSeriesClient is a 2025-11-25 session over Streamable HTTP, or
// 2026-07-28 stateless requests.
type httpSeriesClient struct {
	hc        *http.Client
	url       string
	stateless bool
	session   string
	id        int64
}

func (c *httpSeriesClient) post(ctx context.Context, t *testing.T, method string, id int64, params map[string]any) *http.Response {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != 0 {
		msg["id"] = id
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if c.stateless {
		params["_meta"] = statelessMeta(params)
		hdr.Set("MCP-Protocol-Version", protocol.Version20260728)
		hdr.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok && method == "tools/call" {
			hdr.Set("Mcp-Name", name)
		}
	} else if c.session != "" {
		hdr.Set("Mcp-Session-Id", c.session)
		hdr.Set("MCP-Protocol-Version", protocol.Version20251125)
	}
	body, err := json.Marshal(msg)
	require.NoError(t, err)
	// A request shed as overloaded (503, before any handler: the tests
	// share the machine's cores) is sent again, as svcClient.rpc does.
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = hdr.Clone()
		resp, err := c.hc.Do(req)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusServiceUnavailable || try == maxShedRetries {
			return resp
		}
		refusal, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !bytes.Contains(refusal, []byte(protocol.RejectOverloaded.Message())) {
			resp.Body = io.NopCloser(bytes.NewReader(refusal))
			return resp
		}
	}
}

func (c *httpSeriesClient) call(t *testing.T, method string, params map[string]any) rpcMessage {
	t.Helper()
	c.id++
	resp := c.post(t.Context(), t, method, c.id, params)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		var m rpcMessage
		b, _ := io.ReadAll(resp.Body)
		require.NoError(t, json.Unmarshal(b, &m), "%s: HTTP %s: %s", method, resp.Status, b)
		return m
	}
	m, err := readResponse(resp, c.id, nil)
	require.NoError(t, err, method)
	return m
}

func (c *httpSeriesClient) initialize(t *testing.T) {
	c.id++
	resp := c.post(t.Context(), t, "initialize", c.id, map[string]any{
		"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "series", "version": "1"},
	})
	c.session = resp.Header.Get("Mcp-Session-Id")
	_, err := readResponse(resp, c.id, nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.NotEmpty(t, c.session)
	c.notify(t, "notifications/initialized", map[string]any{})
}

func (c *httpSeriesClient) notify(t *testing.T, method string, params map[string]any) {
	resp := c.post(t.Context(), t, method, 0, params)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, method)
}

func (c *httpSeriesClient) cancelCall(t *testing.T) {
	c.id++
	ctx, abort := context.WithCancel(t.Context())
	defer abort()
	params := toolParams("countdown", map[string]any{"from": 100}, "", "p1")
	resp := c.post(ctx, t, "tools/call", c.id, params)
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp)
	require.NotNil(t, events, "a countdown with a progress token is answered on a stream")
	first, err := events.next()
	require.NoError(t, err)
	require.Equal(t, "notifications/progress", first.Method)
	if c.stateless {
		abort() // the client closes the request's stream
		return
	}
	c.notify(t, "notifications/cancelled", map[string]any{"requestId": c.id, "reason": "series"})
	for {
		m, err := events.next()
		if err != nil {
			return // the stream ended without an answer
		}
		require.NotEqual(t, fmt.Sprint(c.id), string(m.ID), "a cancelled call is not answered")
	}
}

func (c *httpSeriesClient) listen(t *testing.T) {
	c.id++
	ctx, abort := context.WithCancel(t.Context())
	defer abort()
	resp := c.post(ctx, t, "subscriptions/listen", c.id, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	defer func() { _ = resp.Body.Close() }()
	events := newSSEReader(resp)
	require.NotNil(t, events, "a listen request is answered on a stream")
	ack, err := events.next()
	require.NoError(t, err)
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	abort() // the client ends the stream
}

func (c *httpSeriesClient) delete(t *testing.T) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, c.url, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", protocol.Version20251125)
	resp, err := c.hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
}

// statelessMeta returns the _meta of a 2026-07-28 request, keeping what
// params' own _meta has.
func statelessMeta(params map[string]any) map[string]any {
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocol.Version20260728,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "series", "version": "1"},
	}
	if own, ok := params["_meta"].(map[string]any); ok {
		for k, v := range own {
			meta[k] = v
		}
	}
	return meta
}

// pipeClient is an MCP client over a stdio connection served by conns.
type pipeClient struct {
	stateless bool
	in        *io.PipeWriter // the server's input
	out       *bufio.Reader  // the server's output
	served    chan error
	id        int64
}

func startPipeClient(ctx context.Context, t *testing.T, conns streamable.Server, stateless bool) *pipeClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{stateless: stateless, in: inW, out: bufio.NewReader(outR), served: make(chan error, 1)}
	go func() {
		err := conns.Serve(ctx, stdio.New(inR, outW))
		_ = outW.Close()
		c.served <- err
	}()
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	return c
}

// initialize opens c's session.
func (c *pipeClient) initialize(t *testing.T) {
	m := c.call(t, "initialize", map[string]any{
		"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "series", "version": "1"},
	})
	require.Nil(t, m.Error)
	c.write(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

func (c *pipeClient) write(t *testing.T, msg map[string]any) {
	t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	_, err = c.in.Write(append(b, '\n'))
	require.NoError(t, err)
}

// read returns the next message the server wrote.
func (c *pipeClient) read(t *testing.T) rpcMessage {
	t.Helper()
	line, err := c.out.ReadBytes('\n')
	require.NoError(t, err)
	var m rpcMessage
	require.NoError(t, json.Unmarshal(line, &m), "%s", line)
	return m
}

func (c *pipeClient) send(t *testing.T, method string, params map[string]any) int64 {
	t.Helper()
	c.id++
	if c.stateless {
		params["_meta"] = statelessMeta(params)
	}
	c.write(t, map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	return c.id
}

func (c *pipeClient) call(t *testing.T, method string, params map[string]any) rpcMessage {
	t.Helper()
	id := c.send(t, method, params)
	for {
		m := c.read(t)
		if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
			return m
		}
	}
}

func (c *pipeClient) cancelCall(t *testing.T) {
	id := c.send(t, "tools/call", toolParams("countdown", map[string]any{"from": 100}, "", "p1"))
	for c.read(t).Method != "notifications/progress" { // the call runs
		continue
	}
	cancel := map[string]any{"requestId": id, "reason": "series"}
	if c.stateless {
		cancel["_meta"] = statelessMeta(nil)
	}
	c.write(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
	// The next answer ends the wait: the cancelled call has none.
	params := map[string]any{}
	method := "ping"
	if c.stateless {
		method = "tools/list"
	}
	next := c.send(t, method, params)
	for {
		m := c.read(t)
		require.NotEqual(t, fmt.Sprint(id), string(m.ID), "a cancelled call is not answered")
		if m.Method == "" && string(m.ID) == fmt.Sprint(next) {
			return
		}
	}
}

func (c *pipeClient) listen(t *testing.T) {
	id := c.send(t, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	for c.read(t).Method != "notifications/subscriptions/acknowledged" {
		continue
	}
	cancel := map[string]any{"requestId": id, "reason": "series", "_meta": statelessMeta(nil)}
	c.write(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
	next := c.send(t, "tools/list", map[string]any{})
	for {
		m := c.read(t)
		if m.Method == "" && string(m.ID) == fmt.Sprint(next) {
			return
		}
	}
}

func (c *pipeClient) close(t *testing.T) {
	require.NoError(t, c.in.Close())
	_, _ = io.Copy(io.Discard, c.out)
	if err := <-c.served; !errors.Is(err, server.ErrServerClosed) {
		require.NoError(t, err)
	}
}
