package middleware

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// liveSession returns a live session of a server with the tools and the
// prompt "greet" named, to tell known names from made-up ones.
func liveSession(t *testing.T, tools ...string) (context.Context, *server.Session) {
	t.Helper()
	type live struct {
		ctx  context.Context
		sess *server.Session
	}
	got := make(chan live, 1)
	srv := server.New(server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "ping" {
				got <- live{ctx, req.Session}
			}
			return next(ctx, req)
		}
	}))
	for _, name := range tools {
		require.NoError(t, srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		}))
	}
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "greet"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{}, nil
	}))
	c := mcptest.Pipe(t, srv)
	c.Initialize("", nil)
	_, rpcErr := c.Call("ping", nil)
	require.Nil(t, rpcErr)
	l := <-got
	return l.ctx, l.sess
}

// TestSpanStartsBounded checks that the span-start cache stops growing at
// maxSpanStarts, however many registered tools are called, and that starts
// past the bound, built for each request, are still right.
func TestSpanStartsBounded(t *testing.T) {
	t.Parallel()
	tools := make([]string, 2*maxSpanStarts)
	for i := range tools {
		tools[i] = "tool-" + strconv.Itoa(i)
	}
	ctx, sess := liveSession(t, tools...)
	var c spanStarts
	for _, name := range tools {
		st := c.get(ctx, &server.Request{Method: "tools/call", Name: name, Session: sess})
		require.Equal(t, "tools/call "+name, st.name)
		require.Len(t, st.attrs, 3) // method, tool name, operation name
	}
	assert.Equal(t, maxSpanStarts, c.size())

	first := c.get(ctx, &server.Request{Method: "tools/call", Name: "tool-0", Session: sess})
	assert.Same(t, first, c.get(ctx, &server.Request{Method: "tools/call", Name: "tool-0", Session: sess}), "a cached start is shared")

	ping := c.get(ctx, &server.Request{Method: "ping", Name: "ignored", Session: sess})
	assert.Equal(t, "ping", ping.name, "only tools/call and prompts/get have a target")
	prompt := c.get(ctx, &server.Request{Method: "prompts/get", Name: "greet", Session: sess})
	assert.Equal(t, "prompts/get greet", prompt.name)
	assert.Equal(t, "gen_ai.prompt.name", string(prompt.attrs[1].Key))
}

// TestSpanStartsKnownNamesOnly is the name bomb: methods, tools and
// prompts a client made up, however many and however long, are never
// cached, so they cannot crowd out a real tool, and the names of their
// spans are cut.
func TestSpanStartsKnownNamesOnly(t *testing.T) {
	t.Parallel()
	ctx, sess := liveSession(t, "echo")
	var c spanStarts
	long := strings.Repeat("é", 64<<10) // two bytes each: a cut must fall on a rune boundary
	for i := range 2 * maxSpanStarts {
		junk := strconv.Itoa(i) + long
		for _, req := range []*server.Request{
			{Method: junk, Session: sess},
			{Method: "tools/call", Name: junk, Session: sess},
			{Method: "prompts/get", Name: junk, Session: sess},
			{Method: "tools/call", Name: "echo"}, // no session: no server to ask
		} {
			st := c.get(ctx, req)
			require.LessOrEqual(t, len(st.name), len("prompts/get ")+2*(maxSpanNameLen+len("…")))
			require.True(t, utf8.ValidString(st.name))
			for _, kv := range st.attrs {
				require.LessOrEqual(t, len(kv.Value.AsString()), maxSpanNameLen+len("…"))
			}
		}
	}
	assert.Equal(t, 0, c.size(), "no made-up name cached")
	echo := c.get(ctx, &server.Request{Method: "tools/call", Name: "echo", Session: sess})
	assert.Equal(t, "tools/call echo", echo.name)
	assert.Same(t, echo, c.get(ctx, &server.Request{Method: "tools/call", Name: "echo", Session: sess}), "a real tool is cached")
	assert.Equal(t, 1, c.size())
}

// TestSpanStartsByMethodAndTarget checks that the cache tells apart a
// method with a target from a method whose name holds the same words (a
// span name alone would not), and a method without a target from the same
// method with one.
func TestSpanStartsByMethodAndTarget(t *testing.T) {
	t.Parallel()
	ctx, sess := liveSession(t, "x")
	var c spanStarts
	call := c.get(ctx, &server.Request{Method: "tools/call", Name: "x", Session: sess})
	odd := c.get(ctx, &server.Request{Method: "tools/call x", Session: sess})
	require.NotSame(t, call, odd)
	assert.Len(t, call.attrs, 3, "tools/call of x: method, tool name, operation name")
	assert.Len(t, odd.attrs, 1, "method tools/call x: the method only")
	bare := c.get(ctx, &server.Request{Method: "tools/call", Session: sess})
	assert.Len(t, bare.attrs, 1, "tools/call without a name has no target")
	assert.Same(t, call, c.get(ctx, &server.Request{Method: "tools/call", Name: "x", Session: sess}), "cached")
	assert.Same(t, bare, c.get(ctx, &server.Request{Method: "tools/call", Session: sess}), "cached")
	assert.NotSame(t, odd, c.get(ctx, &server.Request{Method: "tools/call x", Session: sess}), "an unknown method is not cached")
	assert.Equal(t, 2, c.size())
}

// TestProtocolMetaOnly checks which _meta the span starter extracts from:
// any that has a key MCP does not define.
func TestProtocolMetaOnly(t *testing.T) {
	tests := []struct {
		meta []string
		want bool
	}{
		{meta: nil, want: true},
		{meta: []string{"progressToken"}, want: true},
		{meta: []string{vocab.MetaProtocolVersion, vocab.MetaClientCapabilities, vocab.MetaClientInfo}, want: true},
		{meta: []string{"traceparent"}, want: false},
		{meta: []string{vocab.MetaProtocolVersion, "baggage"}, want: false},
		{meta: []string{"progressToken", "uberctx-user"}, want: false}, // a custom propagator's key
		{meta: []string{"io.modelcontextprotocol"}, want: false},       // not under the prefix
	}
	for _, tt := range tests {
		members := make([]string, len(tt.meta))
		for i, k := range tt.meta {
			members[i] = strconv.Quote(k) + `:"x"`
		}
		var meta server.RequestMeta
		require.NoError(t, json.Unmarshal([]byte(`{`+strings.Join(members, ",")+`}`), &meta))
		assert.Equal(t, tt.want, protocolMetaOnly(&meta), "%v", tt.meta)
	}
}

// size returns the number of starts cached.
func (c *spanStarts) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
