package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// fakeUpstream is a Vigil server behind Streamable HTTP on loopback.
type fakeUpstream struct {
	url       string
	srv       *server.Server
	ts        *httptest.Server
	stop      func()        // stops serving, for good
	started   chan struct{} // a call of "block" started
	cancelled chan error    // the cause that ended a call of "block"
	mu        sync.Mutex
	auth      []string                      // the Authorization header of each request
	expire    atomic.Bool                   // answer the next POST of a session 404, as an upstream that forgot it
	only2025  atomic.Bool                   // answers 2026-07-28 requests with method not found, as a server of the 2025 era
	down      atomic.Bool                   // answer every request 503, as an upstream not serving yet
	hold      atomic.Pointer[chan struct{}] // when set, a new session's initialize waits for it to close (holdNew)
	holding   chan struct{}                 // an initialize waits for hold
	sampling  sync.WaitGroup                // Add the calls of "sample" expected at once
	gets      getStreams                    // the sessions whose GET stream is open
}

// holdNew makes the initialize of each new session wait until gate
// closes, telling holding when one waits.
func (u *fakeUpstream) holdNew(gate chan struct{}) { u.hold.Store(&gate) }

// authorizations returns the Authorization headers the upstream got.
func (u *fakeUpstream) authorizations() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auth...)
}

// startUpstream serves "hello" (answers "hello from NAME"), "progress"
// (two steps), "block" (waits for its cancel) and "bad" (a JSON-RPC
// error).
func startUpstream(t *testing.T, name string) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{started: make(chan struct{}, 1), cancelled: make(chan error, 1), holding: make(chan struct{}, 1)}
	srv := server.New()
	add := func(tool string, h server.ToolHandler) {
		require.NoError(t, srv.AddTool(server.Tool{Name: tool, Description: tool + " of " + name}, h))
	}
	add("hello", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello from " + name), nil
	})
	add("progress", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		for _, p := range []float64{1, 2} {
			if err := server.ReportProgress(ctx, p, 2, "step"); err != nil {
				return nil, err
			}
		}
		return server.Text("done"), nil
	})
	add("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		u.started <- struct{}{}
		<-ctx.Done()
		u.cancelled <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	})
	add("sample", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		u.sampling.Done()
		u.sampling.Wait() // every caller expected is sampling at once
		res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
			Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "q"}}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		return server.Text("sampled by " + res.Model), nil
	})
	add("log", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		server.ClientLogger(ctx).Warn("careful", "from", name)
		return server.Text("logged"), nil
	})
	add("trace", func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		tp, _ := req.Request.Meta.Get("traceparent")
		return server.Text(string(tp)), nil
	})
	add("bad", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, server.Errorf(protocol.CodeInvalidParams, "bad from %s", name)
	})
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "greet", Arguments: []server.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Description: "greeting of " + name, Messages: []*server.PromptMessage{
				{Role: "user", Content: &server.TextContent{Text: "hello " + req.Arguments["who"]}},
			}}, nil
		}))
	read := func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: "read " + req.URI}}}, nil
	}
	require.NoError(t, srv.AddResource(server.Resource{URI: "file:///" + name + "/readme", Name: "readme"}, read))
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: name + "://notes/{id}", Name: "note"}, read))
	u.srv = srv
	h := streamable.New(srv, streamable.WithResponseMode(streamable.ResponseSSE))
	u.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		if u.down.Load() {
			http.Error(w, "not serving yet", http.StatusServiceUnavailable)
			return
		}
		if u.only2025.Load() && r.Header.Get("Mcp-Protocol-Version") == protocol.Version20260728 {
			refuse2026(w, r) // as a server of the 2025 era answers
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && u.expire.CompareAndSwap(true, false) {
			http.NotFound(w, r)
			return
		}
		if gate := u.hold.Load(); gate != nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			select {
			case u.holding <- struct{}{}:
			default:
			}
			select {
			case <-*gate:
			case <-r.Context().Done():
				return
			}
		}
		if r.Method == http.MethodGet {
			w = &getWatch{ResponseWriter: w, open: func() { u.gets.opened(r.Header.Get("Mcp-Session-Id")) }}
		}
		h.ServeHTTP(w, r)
	}))
	u.url = u.ts.URL
	var once sync.Once
	u.stop = func() {
		once.Do(func() {
			_ = h.Close()
			u.ts.Close()
			_ = srv.Close()
		})
	}
	t.Cleanup(u.stop)
	return u
}

// front mounts upstreams on a new server and returns a client of it.
func front(t *testing.T, ups ...gateway.Upstream) *mcptest.Client {
	t.Helper()
	return mcptest.Connect(t, frontServer(t, ups...))
}

// frontServer mounts upstreams on a new server.
func frontServer(t *testing.T, ups ...gateway.Upstream) *server.Server {
	t.Helper()
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: ups})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	return srv
}

func toolNames(c *mcptest.Client) []string {
	var names []string
	for _, tool := range c.ListTools() {
		names = append(names, tool.Name)
	}
	return names
}

func TestOneUpstreamKeepsItsNames(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url, Header: http.Header{"Authorization": {"Bearer upstream-key"}}})
	assert.ElementsMatch(t, []string{"hello", "progress", "block", "bad", "sample", "log", "trace"}, toolNames(c))
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text())

	_, rpcErr := c.Call("tools/call", map[string]any{"name": "bad"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.Equal(t, "bad from a", rpcErr.Message)

	auth := u.authorizations()
	require.NotEmpty(t, auth)
	for _, got := range auth {
		assert.Equal(t, "Bearer upstream-key", got, "the upstream gets its own credential only")
	}
}

func TestSeveralUpstreamsArePrefixed(t *testing.T) {
	testkit.Watchdog(t)
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	c := front(t, gateway.Upstream{Name: "a", URL: a.url}, gateway.Upstream{Name: "b", URL: b.url})
	assert.ElementsMatch(t, []string{"a_hello", "a_progress", "a_block", "a_bad", "a_sample", "a_log", "a_trace", "b_hello", "b_progress", "b_block", "b_bad", "b_sample", "b_log", "b_trace"}, toolNames(c))
	assert.Equal(t, "hello from a", c.CallTool("a_hello", nil).Text())
	assert.Equal(t, "hello from b", c.CallTool("b_hello", nil).Text())
}

func TestMountRefuses(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := server.New()
	defer func() { _ = srv.Close() }()
	require.NoError(t, srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("own"), nil
	}))
	for _, tc := range []struct {
		name    string
		ups     []gateway.Upstream
		wantErr string
	}{
		{name: "collision with the server's tool", ups: []gateway.Upstream{{Name: "a", URL: u.url}}, wantErr: `tool "hello" of upstream a collides with one of the server itself`},
		{name: "no upstream", wantErr: "no upstream"},
		{name: "underscore in a name", ups: []gateway.Upstream{{Name: "a_b", URL: u.url}}, wantErr: `upstream name "a_b"`},
		{name: "twice", ups: []gateway.Upstream{{Name: "a", URL: u.url}, {Name: "a", URL: u.url}}, wantErr: "named twice"},
		{name: "no target", ups: []gateway.Upstream{{Name: "a"}}, wantErr: "exactly one of Command and URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: tc.ups})
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	assert.Equal(t, []string{"hello"}, srv.ToolNames(), "a refused mount registers nothing")
}

// TestProgressRelayed: a caller that asks for progress gets the
// upstream's, then the result.
func TestProgressRelayed(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	c.Request(7, "tools/call", map[string]any{"name": "progress", "_meta": map[string]any{"progressToken": "tok"}})
	for _, want := range []string{`{"progressToken":"tok","progress":1,"total":2,"message":"step"}`, `{"progressToken":"tok","progress":2,"total":2,"message":"step"}`} {
		n, ok := c.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/progress", n.Method)
		assert.JSONEq(t, want, string(n.Params))
	}
	assert.Contains(t, string(c.RecvResult(7)), "done")
}

// TestCancelReachesTheUpstream: a downstream notifications/cancelled ends
// the upstream's handler with the upstream's own client-cancel cause:
// the gateway sent notifications/cancelled.
func TestCancelReachesTheUpstream(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	c.SendCallTool(9, "block", nil)
	<-u.started
	c.Cancel(9, "changed my mind")
	cause := <-u.cancelled
	assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(cause), "%v", cause)
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text(), "the session serves on")
}

// TestUpstreamCutMidCall: an upstream that drops its connections mid-call
// answers the call at once with an error; nothing hangs.
func TestUpstreamCutMidCall(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	c.SendCallTool(9, "block", nil)
	<-u.started
	u.ts.CloseClientConnections()
	e := c.RecvError(9)
	assert.Equal(t, int64(protocol.CodeInternal), e.Code)
}

// TestUpstreamStartedAgain: an upstream that ends the session (404) fails
// the call that finds it gone, at once (the tool is not marked safe to
// retry), and the next call starts a new session and works.
func TestUpstreamStartedAgain(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text())
	u.expire.Store(true)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "hello"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "upstream a: its session expired (it answered 404) and the call was not retried")
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text(), "a new session serves the next call")
}

// TestPromptsAndResources: an upstream's prompts, resources and templates
// are listed and served through the gateway; with several upstreams the
// prompts and templates' names are prefixed, the URIs kept.
func TestPromptsAndResources(t *testing.T) {
	testkit.Watchdog(t)
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	c := front(t, gateway.Upstream{Name: "a", URL: a.url}, gateway.Upstream{Name: "b", URL: b.url})

	var prompts []string
	for _, p := range c.ListPrompts() {
		prompts = append(prompts, p.Name)
	}
	assert.ElementsMatch(t, []string{"a_greet", "b_greet"}, prompts)
	got := c.GetPrompt("b_greet", map[string]string{"who": "you"})
	assert.Equal(t, "greeting of b", got.Description)
	require.Len(t, got.Messages, 1)
	assert.Equal(t, "hello you", got.Messages[0].Content.(*server.TextContent).Text)

	var uris []string
	for _, r := range c.ListResources() {
		uris = append(uris, r.URI)
	}
	assert.ElementsMatch(t, []string{"file:///a/readme", "file:///b/readme"}, uris)
	contents := c.ReadResource("file:///a/readme")
	require.Len(t, contents, 1)
	assert.Equal(t, "read file:///a/readme", contents[0].Text)

	raw, rpcErr := c.Call("resources/templates/list", nil)
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"resourceTemplates":[{"uriTemplate":"a://notes/{id}","name":"a_note"},{"uriTemplate":"b://notes/{id}","name":"b_note"}]}`, string(raw))
	contents = c.ReadResource("b://notes/7")
	require.Len(t, contents, 1)
	assert.Equal(t, "read b://notes/7", contents[0].Text)
}

// TestResourceCollision: two upstreams with one resource URI are refused.
func TestResourceCollision(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := server.New()
	defer func() { _ = srv.Close() }()
	_, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}, {Name: "b", URL: u.url}}})
	require.ErrorContains(t, err, `resource "file:///a/readme" of upstream b collides with one of upstream a`)
	assert.Empty(t, srv.ToolNames())
}

// TestSamplingReachesItsCaller: with two clients calling a tool that
// samples at the same moment, each upstream sampling request reaches the
// client whose call caused it, never the other; a client that declared
// no sampling gets the upstream's refusal.
func TestSamplingReachesItsCaller(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := frontServer(t, gateway.Upstream{Name: "a", URL: u.url})
	client := func(model string) *mcptest.Client {
		return mcptest.Connect(t, srv, mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}}),
			mcptest.WithRequestHandler(func(_ context.Context, req *transport.Request) (any, error) {
				if req.Method != "sampling/createMessage" {
					return nil, errors.New("unexpected " + req.Method)
				}
				return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "a"}, "model": model}, nil
			}))
	}
	one, two := client("model-one"), client("model-two")
	u.sampling.Add(2)
	type answer struct {
		raw json.RawMessage
		err *transport.Error
	}
	answers := make([]chan answer, 2)
	for i, c := range []*mcptest.Client{one, two} {
		answers[i] = make(chan answer, 1)
		go func() {
			raw, err := c.Call("tools/call", map[string]any{"name": "sample"})
			answers[i] <- answer{raw, err}
		}()
	}
	for i, want := range []string{"sampled by model-one", "sampled by model-two"} {
		a := <-answers[i]
		require.Nil(t, a.err)
		assert.Contains(t, string(a.raw), want)
	}

	u.sampling.Add(1)
	plain := mcptest.Connect(t, srv)
	res := plain.CallTool("sample", nil)
	assert.True(t, res.IsError, "the upstream's tool fails: its session declared no sampling, as its client")
	assert.Contains(t, res.Text(), `needs the "sampling" capability`)
}

// TestLogRelayed: a log message the upstream sends during a call reaches
// the caller before the result.
func TestLogRelayed(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	c.SendCallTool(5, "log", nil)
	n, ok := c.Recv().(*transport.Request)
	require.True(t, ok)
	assert.Equal(t, "notifications/message", n.Method)
	assert.JSONEq(t, `{"level":"warning","data":{"message":"careful","from":"a"}}`, string(n.Params))
	assert.Contains(t, string(c.RecvResult(5)), "logged")
}

// TestListChangedFollowed: when the upstream's tools change, it says so
// (list_changed on its GET stream), the gateway lists them again, and the
// downstream client hears list_changed and sees the new list.
func TestListChangedFollowed(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	require.Contains(t, toolNames(c), "hello")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "fresh"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("fresh from a"), nil
	}))
	u.srv.RemoveTools("hello")
	// Registering the listing again may announce other lists too, in any
	// order, and, when the front server's delay ends in the middle of it,
	// the tools twice.
	for {
		n := c.RecvRequest()
		require.Contains(t, n.Method, "/list_changed")
		if n.Method != "notifications/tools/list_changed" {
			continue
		}
		if names := toolNames(c); slices.Contains(names, "fresh") && !slices.Contains(names, "hello") {
			break
		}
	}
	assert.Equal(t, "fresh from a", c.CallTool("fresh", nil).Text())
}

// TestTraceContextForwarded: the caller's span context reaches the
// upstream in _meta.traceparent, so that its span is the caller's child.
func TestTraceContextForwarded(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	spanID, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	srv := server.New(server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) { // as the Tracing middleware's span would
			return next(trace.ContextWithSpanContext(ctx, sc), req)
		}
	}))
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	c := mcptest.Connect(t, srv)
	assert.Equal(t, `"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`, c.CallTool("trace", nil).Text())
	assert.Empty(t, front(t, gateway.Upstream{Name: "a", URL: u.url}).CallTool("trace", nil).Text(), "no span, no traceparent")
}

// TestHealth: an upstream that stops serving fails the call that finds
// it so (gone, or not ready when its stop was noticed first); Health then
// names it failing, and the calls meanwhile are refused at once with a
// retry hint.
func TestHealth(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	c := mcptest.Connect(t, srv)
	require.NoError(t, g.Health())
	u.stop()
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "hello"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, []string{"upstream a is gone", "upstream a is not ready; try again in 1 s", "upstream a is not ready; try again in 2 s"}, rpcErr.Message)
	g.AwaitState(0, gateway.StateFailing)
	require.ErrorContains(t, g.Health(), "upstream a: failing, next start in ")
	_, rpcErr = c.Call("tools/call", map[string]any{"name": "hello"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
}

// refuse2026 answers a 2026-07-28 request (server/discover) with method
// not found.
func refuse2026(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
}
