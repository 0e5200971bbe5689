package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// fidelityEnv makes the test binary a stdio upstream that asks for its
// client's roots right after initialize, as server-filesystem does
// (runFidelity).
const fidelityEnv = "GATEWAY_TEST_FIDELITY"

// runFidelity serves, on standard input and output, with instructions
// "fidelity's instructions": it asks roots/list as soon as the client
// says it is initialized, outside any call, and again on each
// notifications/roots/list_changed, and serves "hello" (answers
// at once) and "roots" (waits for the answer to that question, and
// answers the roots' URIs joined by commas, or "refused: " and the
// error).
func runFidelity() int {
	var once sync.Once
	asked := make(chan string, 1)
	ask := func(ss *server.Session) {
		var res struct {
			Roots []server.Root `json:"roots"`
		}
		if err := ss.Call(context.Background(), "roots/list", struct{}{}, &res); err != nil {
			asked <- "refused: " + err.Error()
			return
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		asked <- strings.Join(uris, ",")
	}
	srv := server.New(server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			res, err := next(ctx, req)
			if req.Method == "notifications/initialized" {
				once.Do(func() { go ask(req.Session) })
			}
			return res, err
		}
	}))
	srv.SetInstructions("fidelity's instructions")
	srv.SetRootsChanged(func(ctx context.Context) { // as server-filesystem: ask again
		select {
		case <-asked: // the old answer, or none yet: the next "roots" waits for the new one
		default:
		}
		go ask(server.RequestFromContext(ctx).Session)
	})
	_ = srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})
	_ = srv.AddTool(server.Tool{Name: "roots"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case a := <-asked:
			asked <- a
			return server.Text(a), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	if err := srv.Serve(context.Background(), stdio.Std()); err != nil {
		return 1
	}
	return 0
}

// fidelityUpstream is the test binary as the stdio upstream "f".
func fidelityUpstream() gateway.Upstream {
	return gateway.Upstream{Name: "f", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{fidelityEnv + "=1"}}
}

// TestRootsAskedAtStart: an upstream that asks roots/list right after
// initialize, outside any call, gets its caller's roots, whether the
// question comes before the call that started the upstream session is
// relayed (which then waits for the answer) or after it (server-
// filesystem's start-up question, issues 67 and 77).
func TestRootsAskedAtStart(t *testing.T) {
	testkit.Watchdog(t)
	srv := frontServer(t, fidelityUpstream())
	c := mcptest.Pipe(t, srv)
	c.Initialize("", map[string]any{"roots": map[string]any{}})
	answerStartUpRoots(t, c, "file:///mine")
	assert.Equal(t, "file:///mine", upstreamRoots(t, c, 2), "the caller's answer reached the upstream")
}

// answerStartUpRoots makes c's first call (id 1, "hello"), which starts
// its upstream session, and answers the upstream's start-up roots/list
// with uri as it comes: the call waits for that answer when the upstream
// asked before it answered the gateway's ping (giveRoots), and may end
// first otherwise.
func answerStartUpRoots(t *testing.T, c *mcptest.Client, uri string) {
	t.Helper()
	c.SendCallTool(1, "hello", nil)
	var asked, answered bool
	for !asked || !answered {
		switch m := c.Recv().(type) {
		case *transport.Request:
			require.Equal(t, "roots/list", m.Method)
			c.Reply(m, map[string]any{"roots": []map[string]any{{"uri": uri}}}) // the call may wait for it
			asked = true
		case *transport.Response:
			require.Equal(t, transport.Int64ID(1), m.ID)
			require.Nil(t, m.Error)
			answered = true
		}
	}
}

// upstreamRoots calls "roots" (as id) and returns what the upstream holds
// of c's roots.
func upstreamRoots(t *testing.T, c *mcptest.Client, id int64) string {
	t.Helper()
	c.SendCallTool(id, "roots", nil)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(c.RecvResult(id), &res))
	require.Len(t, res.Content, 1)
	return res.Content[0].Text
}

// TestRootsChangeTold: a caller that declares roots.listChanged and
// changes its roots tells its own upstream session, which asks again and
// gets the new roots (server-filesystem's allowed directories follow the
// client's); another caller's upstream session keeps its own.
func TestRootsChangeTold(t *testing.T) {
	testkit.Watchdog(t)
	srv := frontServer(t, fidelityUpstream())
	connect := func(uri string) *mcptest.Client {
		c := mcptest.Pipe(t, srv)
		c.Initialize("", map[string]any{"roots": map[string]any{"listChanged": true}})
		answerStartUpRoots(t, c, uri)
		require.Equal(t, uri, upstreamRoots(t, c, 2))
		return c
	}
	a, b := connect("file:///a"), connect("file:///b")

	a.Notify("notifications/roots/list_changed", nil)
	q := a.RecvRequest()
	require.Equal(t, "roots/list", q.Method, "the upstream asks the caller again")
	a.Reply(q, map[string]any{"roots": []map[string]any{{"uri": "file:///a2"}}})
	assert.Equal(t, "file:///a2", upstreamRoots(t, a, 3), "the new roots reached the caller's upstream session")
	assert.Equal(t, "file:///b", upstreamRoots(t, b, 3), "another caller's upstream session is not told")
}

// TestInstructionsKept: the upstream's instructions reach the caller as
// it sent them with one upstream, and after the server's own, each
// under a heading that names its upstream, with several.
func TestInstructionsKept(t *testing.T) {
	testkit.Watchdog(t)
	one := mcptest.Pipe(t, frontServer(t, fidelityUpstream()))
	assert.Equal(t, "fidelity's instructions", one.Initialize("", nil).Instructions)

	other := fidelityUpstream()
	other.Name = "g"
	srv := server.New()
	srv.SetInstructions("the gateway's own")
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{fidelityUpstream(), other}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	two := mcptest.Pipe(t, srv)
	assert.Equal(t, "the gateway's own\n\n## f\n\nfidelity's instructions\n\n## g\n\nfidelity's instructions", two.Initialize("", nil).Instructions)
}

// TestUnlistedResourceRead: a resource an upstream serves without listing
// it (one a session made, say) is read through the gateway, from the
// upstream that knows it; a URI no upstream knows is not found.
func TestUnlistedResourceRead(t *testing.T) {
	testkit.Watchdog(t)
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	b.srv.SetResourceFallback(func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		if req.URI != "demo://resource/session/made" {
			return nil, server.ErrResourceNotFound
		}
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, Text: "made in b"}}}, nil
	})
	for _, ups := range [][]gateway.Upstream{{{Name: "b", URL: b.url}}, {{Name: "a", URL: a.url}, {Name: "b", URL: b.url}}} {
		c := front(t, ups...)
		raw, rpcErr := c.Call("resources/read", map[string]string{"uri": "demo://resource/session/made"})
		require.Nil(t, rpcErr, "%d upstreams", len(ups))
		assert.JSONEq(t, `{"contents":[{"uri":"demo://resource/session/made","text":"made in b"}]}`, string(raw))
		_, rpcErr = c.Call("resources/read", map[string]string{"uri": "demo://resource/session/unknown"})
		require.NotNil(t, rpcErr)
		assert.Equal(t, int64(protocol.CodeResourceNotFound), rpcErr.Code)
	}
}

// TestListedAsSent: the gateway lists an upstream's tools in the order
// the upstream lists them, and a prompt argument's "required": false as
// the upstream sent it.
func TestListedAsSent(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	var optional server.PromptArgument
	require.NoError(t, json.Unmarshal([]byte(`{"name":"who","required":false}`), &optional))
	require.NoError(t, u.srv.AddPrompt(server.Prompt{Name: "maybe", Arguments: []server.PromptArgument{optional}},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{}, nil
		}))
	direct := mcptest.Connect(t, u.srv)
	want := toolNames(direct)
	require.NotEqual(t, want, slices.Sorted(slices.Values(want)), "the upstream lists its tools unsorted")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	assert.Equal(t, want, toolNames(c), "the upstream's order")
	raw, rpcErr := c.Call("prompts/list", nil)
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), `{"name":"who","required":false}`)
}

// TestToolsByCallerCapabilities: each caller sees, and may call, the
// tools the upstream shows a client with the caller's capabilities: a
// tool the upstream shows only to clients that sample is hidden from, and
// refused to, a caller that does not.
func TestToolsByCallerCapabilities(t *testing.T) {
	testkit.Watchdog(t)
	up := server.New(server.WithToolAccess(func(req *server.Request, tool *server.Tool) bool {
		return tool.Name != "sample" || req.ClientCapabilities.Sampling != nil
	}))
	for _, name := range []string{"plain", "sample"} {
		require.NoError(t, up.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		}))
	}
	h := streamable.New(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.Close(); _ = h.Close(); _ = up.Close() })
	srv := frontServer(t, gateway.Upstream{Name: "u", URL: ts.URL})

	sampler := mcptest.Connect(t, srv, mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}}))
	assert.Equal(t, []string{"plain", "sample"}, toolNames(sampler))
	assert.Equal(t, "sample", sampler.CallTool("sample", nil).Text())

	plain := mcptest.Connect(t, srv)
	assert.Equal(t, []string{"plain"}, toolNames(plain), "what the upstream shows a client that does not sample")
	_, rpcErr := plain.Call("tools/call", map[string]any{"name": "sample", "arguments": map[string]any{}})
	require.NotNil(t, rpcErr, "a hidden tool is refused as an unknown one")
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.Equal(t, "plain", plain.CallTool("plain", nil).Text())
	_, rpcErr = plain.Call("tools/call", map[string]any{"name": "sample", "arguments": map[string]any{}})
	require.NotNil(t, rpcErr, "refused again, its callers' views known")
}

// TestUnlistedResourceReadWithNoneListed: an upstream that lists no
// resource or template still has its session resources read through the
// gateway (its server declares resources from the start: ExpectFeatures),
// and a client is told resources and prompts exist before they do.
func TestUnlistedResourceReadWithNoneListed(t *testing.T) {
	testkit.Watchdog(t)
	up := server.New()
	require.NoError(t, up.AddTool(server.Tool{Name: "make"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("made"), nil
	}))
	up.SetResourceFallback(func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		if req.URI != "demo://resource/session/made" {
			return nil, server.ErrResourceNotFound
		}
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, Text: "made here"}}}, nil
	})
	h := streamable.New(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = up.Close()
	})
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "u", URL: ts.URL}))
	init := c.Initialize("", nil)
	var caps map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(init.Capabilities, &caps))
	assert.Contains(t, caps, "resources")
	assert.Contains(t, caps, "prompts")
	raw, rpcErr := c.Call("resources/read", map[string]string{"uri": "demo://resource/session/made"})
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"contents":[{"uri":"demo://resource/session/made","text":"made here"}]}`, string(raw))
	raw, rpcErr = c.Call("prompts/list", nil)
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"prompts":[]}`, string(raw))
}
