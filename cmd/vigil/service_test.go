package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestServiceZeroConfig starts the built vigil with no configuration (no
// flags but a free port, no OTEL_* or VIGIL_* variables), calls a tool over
// Streamable HTTP with plain net/http JSON-RPC, and finds that call's trace
// on /debug/vigil (the in-memory ring) and its counts on /metrics. Then,
// with a slow call in flight, SIGTERM turns /readyz to 503 while the call
// drains; the call is answered and vigil exits with status 0.
//
// vigil is an external process, so the test polls its HTTP endpoints where
// it must wait for something to happen inside it (a span exported after the
// response was written, the sleep reaching its handler, the signal being
// handled): every such loop is bounded by a deadline.
func TestServiceZeroConfig(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	assert.Equal(t, "ok\n", svcGet(t, hc, svc.base+"/healthz", http.StatusOK))
	assert.Equal(t, "ready\n", svcGet(t, hc, svc.base+"/readyz", http.StatusOK))

	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	initRes, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"svc-test","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, initRes.Error)
	require.NotEmpty(t, c.session, "Mcp-Session-Id")
	require.NoError(t, c.notify("notifications/initialized"))
	echo, err := c.rpc(`"zero-config-echo"`, "tools/call", `{"name":"echo","arguments":{"text":"hello, vigil"}}`)
	require.NoError(t, err)
	require.Nil(t, echo.Error)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"hello, vigil"}]}`, string(echo.Result))

	// The call's trace, on the debug page: its span ends right after the
	// response is written, so it may take a moment to appear.
	var snap debugSnapshot
	var span spanRecord
	svcEventually(t, "the tools/call echo span on /debug/vigil", 10*time.Second, func() (bool, error) {
		var err error
		if snap, err = svcDebug(hc, svc.base); err != nil {
			return false, err
		}
		for _, tv := range snap.Traces {
			for _, s := range tv.Spans {
				if s.Name == "tools/call echo" && s.Attributes["jsonrpc.request.id"] == "zero-config-echo" {
					span = s
					return true, nil
				}
			}
		}
		return false, nil
	})
	assert.True(t, snap.Ready)
	assert.True(t, snap.TracesKept)
	assert.Equal(t, "in-memory ring (/debug/vigil)", snap.Exporter)
	require.Len(t, snap.Sessions, 1)
	sess := snap.Sessions[0]
	assert.Equal(t, "streamable_http", sess.Transport)
	assert.Equal(t, "2025-11-25", sess.Protocol)
	assert.Equal(t, "svc-test 1", sess.Client)
	assert.Equal(t, "server", span.Kind)
	assert.Equal(t, "unset", span.Status)
	assert.Zero(t, span.Depth)
	for k, v := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-11-25", "mcp.session.id": sess.ID, "network.transport": "tcp",
		// The client's connection (streamable.ConnContext) and HTTP version.
		"network.protocol.name": "http", "network.protocol.version": "1.1", "client.address": "127.0.0.1",
	} {
		assert.Equal(t, v, span.Attributes[k], k)
	}
	assert.NotEmpty(t, span.Attributes["client.port"])
	// The call's counts on the page (the instrumentation's request
	// recorder feeds them; the snapshot flushes the outcome batches).
	echoRow := slices.IndexFunc(snap.Stats, func(r keyRow) bool { return r.Key == "tools/call echo" })
	require.GreaterOrEqual(t, echoRow, 0, "tools/call echo among %v", snap.Stats)
	assert.Equal(t, uint64(1), snap.Stats[echoRow].Total.Requests)
	assert.Equal(t, uint64(1), snap.Stats[echoRow].Total.OK)
	page := svcGet(t, hc, svc.base+"/debug/vigil", http.StatusOK)
	assert.Contains(t, page, `<meta http-equiv="refresh" content="2">`)
	assert.Contains(t, page, "tools/call echo")
	assert.Contains(t, page, `href="/debug/vigil/trace/`+span.TraceID+`"`, "the call's trace, linked from the kept traces' summary")

	// The call's counts, on /metrics.
	families := svcMetrics(t, hc, svc.base)
	finished := svcSample(t, families, "mcp_server_requests_finished_total", map[string]string{
		"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "outcome": "ok", "error_type": "", "rpc_response_status_code": "",
	})
	assert.InDelta(t, 1.0, finished.GetCounter().GetValue(), 1e-9)
	started := svcSample(t, families, "mcp_server_requests_started_total", map[string]string{"mcp_method_name": "tools/call"})
	assert.InDelta(t, 1.0, started.GetCounter().GetValue(), 1e-9)
	duration := svcSample(t, families, "mcp_server_operation_duration_seconds", map[string]string{
		"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo",
		"mcp_protocol_version": "2025-11-25", "network_transport": "tcp", "network_protocol_name": "http",
		"error_type": "", "rpc_response_status_code": "",
	})
	assert.Equal(t, uint64(1), duration.GetHistogram().GetSampleCount())
	sessions := svcSample(t, families, "mcp_server_sessions_active", map[string]string{"transport": "streamable_http"})
	assert.InDelta(t, 1.0, sessions.GetGauge().GetValue(), 1e-9)

	// A slow call in flight, then SIGTERM: not ready while it drains.
	type answer struct {
		msg svcMessage
		err error
	}
	slow := make(chan answer, 1)
	go func() {
		m, err := c.rpc(`"zero-config-sleep"`, "tools/call", `{"name":"sleep","arguments":{"ms":2000}}`)
		slow <- answer{m, err}
	}()
	svcEventually(t, "the sleep in flight on /debug/vigil", 10*time.Second, func() (bool, error) {
		snap, err := svcDebug(hc, svc.base)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(snap.InFlight, func(r debugRequest) bool {
			return r.ID == "zero-config-sleep" && r.Method == "tools/call" && r.Name == "sleep" && r.Direction == "incoming" && r.SessionID == sess.ID
		}), nil
	})
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	svcEventually(t, "/readyz answering 503", 10*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && string(body) == "draining\n", err
	})
	assert.Equal(t, "ok\n", svcGet(t, hc, svc.base+"/healthz", http.StatusOK), "still live while draining")
	select {
	case a := <-slow:
		require.NoError(t, a.err)
		require.Nil(t, a.msg.Error)
		assert.JSONEq(t, `{"content":[{"type":"text","text":"slept 2000 ms"}]}`, string(a.msg.Result))
	case <-time.After(20 * time.Second):
		t.Fatal("the sleep was not answered during the drain")
	}
	hc.CloseIdleConnections()
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	logs := svc.logs.String()
	assert.Contains(t, logs, `msg="shutting down" grace_seconds=10`)
	assert.Contains(t, logs, "msg=stopped")
}

// svcProcess is a vigil process started by a test.
type svcProcess struct {
	cmd    *exec.Cmd
	logs   *urlWatcher
	exited chan error
	base   string // http://host:port
}

// startService starts vigil with args and an environment without OTEL_* and
// VIGIL_* variables, and waits for it to log its URL. It is killed at the
// end of the test if it is still running; its log is then reported.
func startService(t *testing.T, args ...string) *svcProcess {
	t.Helper()
	return startBinary(t, vigilBin, args...)
}

// startBinary is startService with the vigil binary bin.
func startBinary(t *testing.T, bin string, args ...string) *svcProcess {
	t.Helper()
	p := &svcProcess{logs: &urlWatcher{found: make(chan string, 1)}, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "VIGIL_")
	})
	p.cmd.Stderr = p.logs
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-p.exited:
			p.exited <- err
		default:
			_ = p.cmd.Process.Kill()
			t.Logf("vigil killed: %v", <-p.exited)
		}
		if t.Failed() {
			t.Logf("vigil stderr:\n%s", p.logs.String())
		}
	})
	select {
	case u := <-p.logs.found:
		p.base = strings.TrimSuffix(u, "/mcp")
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("vigil exited before serving: %v\n%s", err, p.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil did not log its URL within 30s:\n%s", p.logs.String())
	}
	return p
}

// wait waits up to d for the process to exit and returns how it did.
func (p *svcProcess) wait(d time.Duration) error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	case <-time.After(d):
		return fmt.Errorf("still running after %v", d)
	}
}

// svcEventually calls f until it reports true, every 10 ms, failing the
// test when timeout passes first (with f's last error, if any).
func svcEventually(t *testing.T, what string, timeout time.Duration, f func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := f()
		if ok && err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last error: %v)", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// svcGet GETs u, requires the status, and returns the body.
func svcGet(t *testing.T, hc *http.Client, u string, status int) string {
	t.Helper()
	resp, err := hc.Get(u)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "GET %s: %s", u, body)
	return string(body)
}

// svcDebug returns the /debug/vigil snapshot.
func svcDebug(hc *http.Client, base string) (debugSnapshot, error) {
	var snap debugSnapshot
	resp, err := hc.Get(base + "/debug/vigil?format=json")
	if err != nil {
		return snap, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return snap, fmt.Errorf("GET /debug/vigil: %s", resp.Status)
	}
	return snap, json.NewDecoder(resp.Body).Decode(&snap)
}

// svcMetrics returns the metric families of /metrics, in the text format.
func svcMetrics(t *testing.T, hc *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	body := svcGet(t, hc, base+"/metrics", http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return families
}

// svcSample returns the series of family name with exactly labels.
func svcSample(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := families[name]
	require.True(t, ok, "no metric %s", name)
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			if _, asked := labels[l.GetName()]; l.GetValue() != "" || asked { // an empty value not asked for is an absent label, as Prometheus stores it
				got[l.GetName()] = l.GetValue()
			}
		}
		for k := range labels { // an empty label value is not exposed
			if _, ok := got[k]; !ok && labels[k] == "" {
				got[k] = ""
			}
		}
		if len(got) == len(labels) && assert.ObjectsAreEqual(labels, got) {
			return m
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}

// svcClient speaks JSON-RPC to an MCP endpoint over plain net/http, in a
// 2025-11-25 session. rpc is safe to call concurrently once the session
// is initialized.
type svcClient struct {
	hc      *http.Client
	url     string
	session string
	// modern sends each request stateless, in protocol version 2026-07-28:
	// its _meta and routing headers added, no session.
	modern bool
}

// svcMessage is a JSON-RPC response.
type svcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *svcClient) post(body string) (*http.Response, error) {
	return c.postHeaders(body, nil)
}

func (c *svcClient) postHeaders(body string, header map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return c.hc.Do(req)
}

// rpc sends request id (JSON) and returns its response, read from a JSON
// body or an SSE stream. An initialize sets the session id. A request the
// service sheds as overloaded (503: the tests share the machine's cores,
// and vigil sheds up to a tenth of the requests while its scheduler lags)
// is sent again at once, up to maxShedRetries times, as a client that
// ignores Retry-After would: no test here is about shedding, which
// transport/streamable and bench-scale test.
func (c *svcClient) rpc(id, method, params string) (svcMessage, error) {
	for try := 0; ; try++ {
		m, err := c.rpcOnce(id, method, params)
		var shed *shedError
		if !errors.As(err, &shed) || try == maxShedRetries {
			return m, err
		}
	}
}

// maxShedRetries is how many times rpc sends a shed request again.
const maxShedRetries = 4

// shedError is a request refused as overloaded.
type shedError struct{ msg string }

func (e *shedError) Error() string { return e.msg }

// rpcOnce is rpc's one try.
func (c *svcClient) rpcOnce(id, method, params string) (svcMessage, error) {
	var header map[string]string
	if c.modern {
		var p map[string]any
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			return svcMessage{}, err
		}
		p["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "vigil-test", "version": "1"},
		}
		b, _ := json.Marshal(p) // decoded from JSON: encodes
		params = string(b)
		header = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if uri, ok := p["uri"].(string); ok && method == "resources/read" {
			header["Mcp-Name"] = uri
		}
		if name, ok := p["name"].(string); ok && method == "tools/call" {
			header["Mcp-Name"] = name
		}
	}
	resp, err := c.postHeaders(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+`}`, header)
	if err != nil {
		return svcMessage{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		var m svcMessage
		if resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(b, []byte(protocol.RejectOverloaded.Message())) {
			return svcMessage{}, &shedError{fmt.Sprintf("%s: %s: %s", method, resp.Status, b)}
		}
		if c.modern && json.Unmarshal(b, &m) == nil && m.Error != nil {
			return m, nil // 2026-07-28 answers some errors with an HTTP error status
		}
		return svcMessage{}, fmt.Errorf("%s: %s: %s", method, resp.Status, b)
	}
	if method == "initialize" {
		c.session = resp.Header.Get("Mcp-Session-Id")
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m svcMessage
		return m, json.NewDecoder(resp.Body).Decode(&m)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(v, " "))
			continue
		}
		if line != "" || data.Len() == 0 {
			continue
		}
		var m svcMessage
		if err := json.Unmarshal(data.Bytes(), &m); err != nil {
			return m, err
		}
		data.Reset()
		if m.Method == "" && bytes.Equal(m.ID, []byte(id)) {
			return m, nil
		}
	}
	return svcMessage{}, errors.Join(errors.New(method+": the stream ended without the response"), sc.Err())
}

// notify sends a notification, which is accepted with 202.
func (c *svcClient) notify(method string) error {
	resp, err := c.post(`{"jsonrpc":"2.0","method":"` + method + `"}`)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: %s", method, resp.Status)
	}
	return nil
}
