package mcptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// newServer has a tool "echo" that answers its "text" argument, a tool
// "roots" that asks the client for its roots, a resource and a prompt.
// started and release, when not nil, make "block" wait.
func newServer(t *testing.T, opts ...server.Option) *server.Server {
	t.Helper()
	srv := server.New(opts...)
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return server.Text(in.Text), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "roots"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		roots, err := server.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, r := range roots {
			uris = append(uris, r.URI)
		}
		return server.Text(strings.Join(uris, ",")), nil
	}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "file:///readme.txt", Name: "readme"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: "file:///readme.txt", Text: "read me"}}}, nil
	}))
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "greet"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: "hello"}}}}, nil
	}))
	return srv
}

// TestConnectTyped covers the typed calls over the pipe, and that Wait
// reports Serve's end once the client closes.
func TestConnectTyped(t *testing.T) {
	testkit.Watchdog(t)
	c := mcptest.Connect(t, newServer(t))

	var names []string
	for _, tool := range c.ListTools() {
		names = append(names, tool.Name)
	}
	assert.ElementsMatch(t, []string{"echo", "roots"}, names)
	res := c.CallTool("echo", map[string]any{"text": "hi"})
	assert.Equal(t, "hi", res.Text())
	assert.False(t, res.IsError)
	assert.Equal(t, []*server.ResourceContents{{URI: "file:///readme.txt", Text: "read me"}}, c.ReadResource("file:///readme.txt"))
	assert.Equal(t, "readme", c.ListResources()[0].Name)
	p := c.GetPrompt("greet", nil)
	require.Len(t, p.Messages, 1)
	assert.Equal(t, "hello", p.Messages[0].Content.(*server.TextContent).Text)
	assert.Equal(t, "greet", c.ListPrompts()[0].Name)
	_, rpcErr := c.Call("ping", nil)
	require.Nil(t, rpcErr)

	_, rpcErr = c.Call("no/such-method", nil)
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(-32601), rpcErr.Code)

	require.NoError(t, c.Close())
	require.NoError(t, c.Wait())
	<-c.Done()
}

// TestCallAnswersServerRequests checks that a call answers the server's
// requests with the handler, and by default with method not found.
func TestCallAnswersServerRequests(t *testing.T) {
	testkit.Watchdog(t)
	caps := map[string]any{"roots": map[string]any{}}
	c := mcptest.Connect(t, newServer(t), mcptest.WithCapabilities(caps),
		mcptest.WithRequestHandler(func(_ context.Context, req *transport.Request) (any, error) {
			if req.Method != "roots/list" {
				return nil, errors.New("unexpected " + req.Method)
			}
			return map[string]any{"roots": []map[string]any{{"uri": "file:///a"}, {"uri": "file:///b"}}}, nil
		}))
	assert.Equal(t, "file:///a,file:///b", c.CallTool("roots", nil).Text())

	plain := mcptest.Connect(t, newServer(t), mcptest.WithCapabilities(caps))
	_, rpcErr := plain.Call("tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}})
	require.NotNil(t, rpcErr, "the default handler refuses roots/list")
	assert.Equal(t, int64(-32601), rpcErr.Code)
}

// TestWireLevel answers a server request by hand, with ids the test
// picks, and reads every message in order.
func TestWireLevel(t *testing.T) {
	testkit.Watchdog(t)
	c := mcptest.Pipe(t, newServer(t))
	init := c.Initialize("", map[string]any{"roots": map[string]any{}})
	assert.Equal(t, protocol.Version20251125, init.ProtocolVersion)

	c.SendCallTool(7, "roots", nil)
	req := c.RecvRequest()
	require.Equal(t, "roots/list", req.Method)
	c.Reply(req, map[string]any{"roots": []map[string]any{{"uri": "file:///x"}}})
	var res struct{ Content []struct{ Text string } }
	require.NoError(t, json.Unmarshal(c.RecvResult(7), &res))
	require.Len(t, res.Content, 1)
	assert.Equal(t, "file:///x", res.Content[0].Text)

	c.SendCallTool(8, "roots", nil)
	c.Send(&transport.Response{ID: c.RecvRequest().ID, Error: &transport.Error{Code: -32601, Message: "no roots today"}})
	assert.Equal(t, int64(-32601), c.RecvError(8).Code)

	c.Request(9, "tools/call", `{"name":"echo","arguments":[]}`)
	assert.Equal(t, int64(-32602), c.RecvError(9).Code)
}

// TestHTTP runs a session over Streamable HTTP: the session id is kept,
// and a server request is answered on its own POST.
func TestHTTP(t *testing.T) {
	testkit.Watchdog(t)
	srv := newServer(t)
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})
	conn := streamable.Dial(streamable.ClientConfig{URL: ts.URL})
	c := mcptest.NewClient(t, conn, mcptest.WithCapabilities(map[string]any{"roots": map[string]any{}}),
		mcptest.WithRequestHandler(func(context.Context, *transport.Request) (any, error) {
			return map[string]any{"roots": []map[string]any{{"uri": "file:///http"}}}, nil
		}))
	assert.Equal(t, protocol.Version20251125, c.Initialize("", nil).ProtocolVersion)
	ider, ok := conn.(interface{ SessionID() string })
	require.True(t, ok, "streamable.Dial's Conn names its session")
	assert.NotEmpty(t, ider.SessionID())
	assert.Equal(t, "hi", c.CallTool("echo", map[string]any{"text": "hi"}).Text())
	assert.Equal(t, "file:///http", c.CallTool("roots", nil).Text())
	require.Len(t, c.ListTools(), 2)
}
