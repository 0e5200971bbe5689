package middleware_test

// The HTTP chaos test: many clients over loopback Streamable HTTP, the full
// chain of NewInstrumentation, and a seeded random mix of calls that
// succeed, fail, time out, are aborted by the client, cancelled with
// notifications/cancelled, or cut off by a DELETE of their session. The
// clients record what they did (the ground truth); once the server has
// sealed every request, the metrics must equal it exactly.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// httpChaosPatience bounds every wait for a signaled event; reaching it is
// a failure, not a way to wait.
const httpChaosPatience = 30 * time.Second

// chaosKeyMeta is the _meta key carrying the client's name for a call.
const chaosKeyMeta = "chaos/key"

// chaosBoard connects the clients to the server's side: the "block" tool
// signals started(key) when it runs, and the innermost middleware signals
// sealed(key) once the request's outcome is sealed, after every OnDone
// callback of the middleware outside it (Metrics, Logging, Tracing) ran,
// since OnDone callbacks run in the order they were registered, outermost
// first. It also counts every sealed request and notification.
type chaosBoard struct {
	mu      sync.Mutex
	started map[string]chan struct{}
	sealed  map[string]chan struct{}
	count   int           // sealed requests and notifications
	want    int           // count to signal all at; 0: not yet known
	all     chan struct{} // closed when count reaches want
}

func newChaosBoard() *chaosBoard {
	return &chaosBoard{started: map[string]chan struct{}{}, sealed: map[string]chan struct{}{}, all: make(chan struct{})}
}

// signal returns the channel of key in m, creating it; mu is held.
func signal(m map[string]chan struct{}, key string) chan struct{} {
	ch, ok := m[key]
	if !ok {
		ch = make(chan struct{})
		m[key] = ch
	}
	return ch
}

func (b *chaosBoard) of(m map[string]chan struct{}, key string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return signal(m, key)
}

func (b *chaosBoard) fire(m map[string]chan struct{}, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(signal(m, key))
}

// expect sets how many seals to wait for and returns the channel closed
// when they happened.
func (b *chaosBoard) expect(n int) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.want = n
	if b.count == n {
		close(b.all)
	}
	return b.all
}

// middleware is the innermost middleware of the chaos server.
func (b *chaosBoard) middleware(next server.Handler) server.Handler {
	return func(ctx context.Context, req *server.Request) (any, error) {
		var key string
		if raw, ok := req.Meta.Get(chaosKeyMeta); ok {
			_ = json.Unmarshal(raw, &key)
		}
		// AfterDone, registered after the instrumentation's own (outside),
		// runs after it: a seal seen here was recorded by the metrics, the
		// span and the log line already.
		serverhook.Of[server.Outcome](ctx).AfterDone(func(server.Outcome) {
			b.mu.Lock()
			b.count++
			if b.count == b.want {
				close(b.all)
			}
			b.mu.Unlock()
			if key != "" {
				b.fire(b.sealed, key)
			}
		})
		return next(ctx, req)
	}
}

// await waits for ch, or fails the test and returns false; it may run on
// any goroutine.
func await(t testing.TB, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(httpChaosPatience):
		t.Errorf("timed out waiting for %s", what)
		return false
	}
}

// chaosTruth is what the clients did and saw.
type chaosTruth struct {
	initialize, calls, notifications int
	outcomes                         map[string]int // by outcome
	causes                           map[string]int // cancellations by cause
	reasons                          map[string]int // drops by reason
	// answeredAtEnd counts the calls cancelled by a DELETE, which the
	// client received answered -32000 "session terminated": not dropped.
	answeredAtEnd int
}

func (g *chaosTruth) add(o chaosTruth) {
	g.initialize += o.initialize
	g.calls += o.calls
	g.notifications += o.notifications
	g.answeredAtEnd += o.answeredAtEnd
	for _, m := range [][2]map[string]int{{g.outcomes, o.outcomes}, {g.causes, o.causes}, {g.reasons, o.reasons}} {
		for k, v := range m[1] {
			m[0][k] += v
		}
	}
}

func newChaosTruth() chaosTruth {
	return chaosTruth{outcomes: map[string]int{}, causes: map[string]int{}, reasons: map[string]int{}}
}

// chaosServer is the full chain of NewInstrumentation behind Streamable HTTP.
type chaosServer struct {
	url    string
	client *http.Client
	board  *chaosBoard
	m      *metrics.Metrics
	spans  *tracetest.SpanRecorder
	logs   *capture
}

func newChaosServer(t *testing.T) *chaosServer {
	cs := &chaosServer{board: newChaosBoard(), spans: tracetest.NewSpanRecorder(), logs: newCapture(slog.LevelDebug)}
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(cs.spans))),
		middleware.WithRegisterer(prometheus.NewRegistry()),
		middleware.WithRequestLog(slog.New(cs.logs)),
	)
	require.NoError(t, err)
	cs.m = middleware.MetricsOf(inst)
	srv := server.New(append(inst.ServerOptions(), server.WithMiddleware(cs.board.middleware),
		server.WithTimeoutFor(func(req *server.Request) time.Duration {
			if req.Name == "slow" {
				return 20 * time.Millisecond
			}
			return 0
		}),
		server.WithConcurrencyLimit(1000), // never reached: it must not change the truth
	)...)
	wait := func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var key string
		raw, _ := req.Request.Meta.Get(chaosKeyMeta)
		_ = json.Unmarshal(raw, &key)
		cs.board.fire(cs.board.started, key)
		<-ctx.Done()
		return server.Text("too late"), nil
	}
	tools := map[string]server.ToolHandler{
		"echo": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hello"), nil
		},
		"fail": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, errors.New("failed")
		},
		"panic": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { panic("boom") },
		"block": wait,
		"slow":  wait,
	}
	for name, h := range tools {
		require.NoError(t, srv.AddTool(server.Tool{Name: name}, h))
	}
	h := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP))
	ts := httptest.NewServer(h)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	cs.url, cs.client = ts.URL, &http.Client{Transport: tr}
	// Last in, first out: the client's connections, the sessions, the server.
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		assert.NoError(t, srv.Close())
		assert.NoError(t, h.Close())
	})
	t.Cleanup(tr.CloseIdleConnections)
	return cs
}

// do sends one request (sid "" for none) and returns the status, the
// Mcp-Session-Id header and the body.
func (cs *chaosServer) do(ctx context.Context, method, sid, body string) (int, string, string, error) {
	return cs.doHold(ctx, method, sid, body, nil)
}

// doHold is do, reading the body only once hold is closed (if not nil):
// until then the client keeps the connection.
func (cs *chaosServer) doHold(ctx context.Context, method, sid, body string, hold <-chan struct{}) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, cs.url, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := cs.client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if hold != nil {
		select {
		case <-hold:
		case <-time.After(httpChaosPatience):
			return 0, "", "", errors.New("held for too long")
		}
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), err
}

// chaosClient is one client: its sessions run one after the other.
type chaosClient struct {
	t     *testing.T
	cs    *chaosServer
	name  string
	rng   *rand.Rand
	sid   string
	next  int // the next request id in the session
	truth chaosTruth
}

func (c *chaosClient) fail(format string, args ...any) {
	c.t.Errorf("%s: "+format, append([]any{c.name}, args...)...)
}

// open starts a session: initialize, then notifications/initialized.
func (c *chaosClient) open() bool {
	status, sid, body, err := c.cs.do(context.Background(), http.MethodPost, "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"chaos","version":"1"}}}`)
	if err != nil || status != http.StatusOK || sid == "" {
		c.fail("initialize: %d %v %s", status, err, body)
		return false
	}
	c.truth.initialize++
	c.truth.outcomes[mcpconv.OutcomeOK]++
	c.sid, c.next = sid, 1
	status, _, body, err = c.cs.do(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil || status != http.StatusAccepted {
		c.fail("notifications/initialized: %d %v %s", status, err, body)
		return false
	}
	c.truth.notifications++
	return true
}

// close deletes the session.
func (c *chaosClient) close() bool {
	status, _, body, err := c.cs.do(context.Background(), http.MethodDelete, c.sid, "")
	if err != nil || status != http.StatusNoContent {
		c.fail("DELETE: %d %v %s", status, err, body)
		return false
	}
	return true
}

// call builds a tools/call with the next id and its key.
func (c *chaosClient) call(tool string) (body, key string, id int) {
	id = c.next
	c.next++
	key = fmt.Sprintf("%s/%s/%d", c.name, c.sid, id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{},"_meta":{%q:%q}}}`,
		id, tool, chaosKeyMeta, key), key, id
}

// answered makes a call that the server answers and checks the answer.
func (c *chaosClient) answered(tool, want, outcome string) {
	body, _, id := c.call(tool)
	status, _, got, err := c.cs.do(context.Background(), http.MethodPost, c.sid, body)
	want = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, id, want)
	if err != nil || status != http.StatusOK || !jsonEqual(want, got) {
		c.fail("%s: %d %v: got %s, want %s", tool, status, err, got, want)
	}
	c.truth.calls++
	c.truth.outcomes[outcome]++
}

// inFlight starts a call of "block" and returns once its handler runs;
// done receives the POST's error when it returns. With hold, the client
// keeps the connection until the request is sealed.
func (c *chaosClient) inFlight(ctx context.Context, hold bool) (key string, id int, done <-chan error) {
	body, key, id := c.call("block")
	var sealed <-chan struct{}
	if hold {
		sealed = c.cs.board.of(c.cs.board.sealed, key)
	}
	ch := make(chan error, 1)
	go func() {
		_, _, got, err := c.cs.doHold(ctx, http.MethodPost, c.sid, body, sealed)
		if err == nil && hold && !strings.Contains(got, `"error":{"code":-32000,"message":"session terminated"}`) {
			err = fmt.Errorf("the call the session's end cut short was answered %s", got)
		}
		ch <- err
	}()
	await(c.t, c.cs.board.of(c.cs.board.started, key), key+" to start")
	c.truth.calls++
	return key, id, ch
}

func (c *chaosClient) step() {
	switch p := c.rng.IntN(100); {
	case p < 30:
		c.answered("echo", `"result":{"content":[{"type":"text","text":"hello"}]}`, mcpconv.OutcomeOK)
	case p < 35:
		c.answered("fail", `"result":{"content":[{"type":"text","text":"failed"}],"isError":true}`, mcpconv.OutcomeOK)
	case p < 45:
		c.answered("nope", `"error":{"code":-32602,"message":"unknown tool: \"nope\""}`, mcpconv.OutcomeError)
	case p < 50:
		c.answered("panic", `"error":{"code":-32603,"message":"internal error"}`, mcpconv.OutcomeError)
	case p < 60:
		c.answered("slow", `"error":{"code":-32001,"message":"request timed out"}`, mcpconv.OutcomeError)
		c.truth.causes["timeout"]++
	case p < 75: // the client gives up on the POST: its stream is gone
		ctx, cancel := context.WithCancel(context.Background())
		key, _, done := c.inFlight(ctx, false)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			c.fail("aborted POST: %v", err)
		}
		await(c.t, c.cs.board.of(c.cs.board.sealed, key), key+" to be sealed")
		c.truth.outcomes[mcpconv.OutcomeCancelled]++
		c.truth.causes["stream_close"]++ // the session lives on: the client gave up this request
		c.truth.reasons["peer_gone"]++
	case p < 90: // notifications/cancelled
		key, id, done := c.inFlight(context.Background(), false)
		status, _, body, err := c.cs.do(context.Background(), http.MethodPost, c.sid,
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"chaos"}}`, id))
		if err != nil || status != http.StatusAccepted {
			c.fail("notifications/cancelled: %d %v %s", status, err, body)
		}
		c.truth.notifications++
		// The POST must end; what it carries is the transport's business
		// (see cmd/vigil's e2e test for "no JSON-RPC answer").
		if err := <-done; err != nil {
			c.fail("cancelled POST: %v", err)
		}
		await(c.t, c.cs.board.of(c.cs.board.sealed, key), key+" to be sealed")
		c.truth.outcomes[mcpconv.OutcomeCancelled]++
		c.truth.causes["client_cancel"]++
		c.truth.reasons["cancelled"]++
	default: // DELETE with 1 to 3 calls in flight, then a new session
		// DELETE answers the POSTs of the calls in flight at once ("session
		// terminated", Connection: close), while their handlers still run:
		// each call is cancelled (transport_close) and answered, not
		// dropped, as the client received. A client that hangs up then
		// races the session's end: if its stream's end reaches the core
		// first, the drop reason would be peer_gone; these clients keep the
		// connection until the call is sealed.
		n := 1 + c.rng.IntN(3)
		var keys []string
		var dones []<-chan error
		for range n {
			key, _, done := c.inFlight(context.Background(), true)
			keys, dones = append(keys, key), append(dones, done)
		}
		if !c.close() {
			return
		}
		for i, done := range dones {
			if err := <-done; err != nil {
				c.fail("POST cut off by DELETE: %v", err)
			}
			await(c.t, c.cs.board.of(c.cs.board.sealed, keys[i]), keys[i]+" to be sealed")
		}
		c.truth.outcomes[mcpconv.OutcomeCancelled] += n
		c.truth.causes["transport_close"] += n
		c.truth.answeredAtEnd += n
		c.open()
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// TestHTTPChaosMetricsEqualGroundTruth: 16 clients run 25 random steps
// each over loopback HTTP. Once every request and notification the
// clients sent is sealed (counted by the innermost middleware, whose
// OnDone runs after those of Metrics, Logging and Tracing), the metrics
// equal what the clients did: the outcomes, the cancellations by cause,
// the dropped responses by reason, the accounting law (started = the sum
// of the outcomes, nothing in flight), one log record per request with the
// same outcome, and one span per request and notification.
func TestHTTPChaosMetricsEqualGroundTruth(t *testing.T) {
	testkit.Watchdog(t)
	const clients, steps = 16, 25
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cs := newChaosServer(t)

	truths := make([]chaosTruth, clients)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i := range clients {
		wg.Go(func() {
			c := &chaosClient{t: t, cs: cs, name: fmt.Sprintf("c%d", i), rng: rand.New(rand.NewPCG(seed, uint64(i))), truth: newChaosTruth()}
			if c.open() {
				for range steps {
					c.step()
				}
				c.close()
			}
			truths[i] = c.truth
			if t.Failed() {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	require.False(t, failed.Load())
	truth := newChaosTruth()
	for _, tr := range truths {
		truth.add(tr)
	}
	requests := truth.initialize + truth.calls
	require.True(t, await(t, cs.board.expect(requests+truth.notifications), fmt.Sprintf("%d requests and notifications to be sealed", requests+truth.notifications)))

	got := series(t, cs.m)
	metric := func(name string, label string) map[string]int {
		out := map[string]int{}
		for k, v := range got {
			if strings.HasPrefix(k, name+"{") {
				i := strings.Index(k, label+`="`) + len(label) + 2
				out[k[i:i+strings.IndexByte(k[i:], '"')]] += int(v)
			}
		}
		return out
	}
	assert.Equal(t, truth.outcomes, metric(mcpconv.MetricRequestsFinished, mcpconv.LabelOutcome), "outcomes")
	assert.Equal(t, truth.causes, metric(mcpconv.MetricCancellations, mcpconv.LabelCause), "cancellations by cause")
	assert.Equal(t, truth.reasons, metric(mcpconv.MetricLateResponsesDropped, mcpconv.LabelReason), "drops by reason")
	started := metric(mcpconv.MetricRequestsStarted, mcpconv.LabelMethod)
	assert.Equal(t, map[string]int{"initialize": truth.initialize, "tools/call": truth.calls}, started, "started")
	sum := 0
	for _, n := range truth.outcomes {
		sum += n
	}
	assert.Equal(t, requests, sum, "started = the sum of the outcomes")
	assert.Empty(t, metric(mcpconv.MetricRequestsInFlight, mcpconv.LabelMethod), "in flight")
	assert.Empty(t, metric(mcpconv.MetricMessagesRejected, mcpconv.LabelReason), "rejected")

	logged := map[string]int{}
	for _, l := range cs.logs.lines() {
		if rest, ok := strings.CutPrefix(l[strings.IndexByte(l, ' ')+1:], "request "); ok {
			i := strings.Index(rest, "outcome=") + len("outcome=")
			logged[strings.Fields(rest[i:])[0]]++
		}
	}
	assert.Equal(t, truth.outcomes, logged, "log records by outcome")
	// What a DELETE cut short, every record says as the client received
	// it: cancelled (transport_close), answered -32000, nothing dropped.
	answered, durations := 0, 0
	for k, v := range got {
		if strings.HasPrefix(k, mcpconv.MetricRequestsFinished+"{") && strings.Contains(k, `error_type="cancelled"`) &&
			strings.Contains(k, `outcome="cancelled"`) && strings.Contains(k, `rpc_response_status_code="-32000"`) {
			answered += int(v)
		}
		if strings.HasPrefix(k, mcpconv.MetricOperationDuration+"_count{") {
			durations += int(v)
		}
	}
	assert.Equal(t, truth.answeredAtEnd, answered, "cancelled requests finished with status -32000")
	assert.Equal(t, requests, durations, "one duration per request, whatever its outcome")
	loggedAnswered := 0
	for _, l := range cs.logs.lines() {
		if strings.Contains(l, "outcome=cancelled cause=transport_close code=-32000") {
			loggedAnswered++
		}
	}
	assert.Equal(t, truth.answeredAtEnd, loggedAnswered, "log records of calls answered at the session's end")
	spanAnswered := 0
	for _, sp := range cs.spans.Ended() {
		for _, a := range sp.Attributes() {
			if string(a.Key) == "rpc.response.status_code" && a.Value.AsString() == "-32000" {
				spanAnswered++
			}
		}
	}
	assert.Equal(t, truth.answeredAtEnd, spanAnswered, "spans of calls answered at the session's end")
	assert.Len(t, cs.spans.Ended(), requests+truth.notifications, "spans")
	t.Logf("%d requests, %d notifications: outcomes %v, cancellations %v, drops %v, answered at the session's end %d",
		requests, truth.notifications, truth.outcomes, truth.causes, truth.reasons, truth.answeredAtEnd)
}
