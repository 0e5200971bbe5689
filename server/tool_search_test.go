package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestSearchCallToolMirrorsNoArgument: a 2026-07-28 call through
// call_tool is not checked against the Mcp-Param-* headers of the tool
// it names (call_tool mirrors no argument, and its client sent the
// headers of call_tool), while a direct call of that tool still is; the
// search mode off, call_tool is an unknown tool again.
func TestSearchCallToolMirrorsNoArgument(t *testing.T) {
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.AddTool(server.Tool{Name: "regional", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("in " + string(req.Arguments)), nil
		}))
	require.NoError(t, srv.SetToolSearch(func(*server.Request, []server.Tool, string, int) []int { return []int{0, 0, 7, -1} }))
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); ts.Close() })
	post := func(name, params string) string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params[:len(params)-1]+
				`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, post("call_tool", `{"name":"call_tool","arguments":{"name":"regional","arguments":{"region":"eu"}}}`), `in {\"region\":\"eu\"}`)
	assert.Contains(t, post("regional", `{"name":"regional","arguments":{"region":"eu"}}`), "missing Mcp-Param-Region header", "a direct call is checked")
	found := post("search_tools", `{"name":"search_tools","arguments":{"query":"region"}}`)
	assert.Equal(t, 1, strings.Count(found, `\"name\":\"regional\"`), "an index repeated or out of range is ignored: %s", found)

	require.NoError(t, srv.SetToolSearch(nil))
	assert.Equal(t, []string{"regional"}, srv.ToolNames())
	assert.Contains(t, post("call_tool", `{"name":"call_tool","arguments":{"name":"regional","arguments":{"region":"eu"}}}`), `unknown tool: \"call_tool\"`)
}
