package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func okTool(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
	return server.Text("ok"), nil
}

func TestAddToolErrors(t *testing.T) {
	tests := []struct {
		name    string
		tool    server.Tool
		handler server.ToolHandler
		want    string
	}{
		{
			name:    "empty name",
			tool:    server.Tool{},
			handler: okTool,
			want:    `mcp: invalid tool name "": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name:    "129 characters",
			tool:    server.Tool{Name: strings.Repeat("a", 129)},
			handler: okTool,
			want:    `mcp: invalid tool name "` + strings.Repeat("a", 129) + `": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name:    "space",
			tool:    server.Tool{Name: "get weather"},
			handler: okTool,
			want:    `mcp: invalid tool name "get weather": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name:    "slash",
			tool:    server.Tool{Name: "weather/get"},
			handler: okTool,
			want:    `mcp: invalid tool name "weather/get": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name:    "non-ASCII letter",
			tool:    server.Tool{Name: "météo"},
			handler: okTool,
			want:    `mcp: invalid tool name "météo": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name: "nil handler",
			tool: server.Tool{Name: "t"},
			want: `mcp: tool "t": nil handler`,
		},
		{
			name:    "input schema a string",
			tool:    server.Tool{Name: "t", InputSchema: json.RawMessage(`"object"`)},
			handler: okTool,
			want:    `mcp: tool "t": input schema must be a JSON object`,
		},
		{
			name:    "input schema null",
			tool:    server.Tool{Name: "t", InputSchema: json.RawMessage(`null`)},
			handler: okTool,
			want:    `mcp: tool "t": input schema must be a JSON object`,
		},
		{
			name:    "input schema an array",
			tool:    server.Tool{Name: "t", InputSchema: json.RawMessage(`[{"type":"object"}]`)},
			handler: okTool,
			want:    `mcp: tool "t": input schema must be a JSON object`,
		},
		{
			name:    "output schema not an object",
			tool:    server.Tool{Name: "t", OutputSchema: json.RawMessage(`true`)},
			handler: okTool,
			want:    `mcp: tool "t": output schema must be a JSON object`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := server.New()
			require.EqualError(t, s.AddTool(tt.tool, tt.handler), tt.want)
			assert.Empty(t, s.ToolNames())
		})
	}
}

func TestAddToolListsAndReplaces(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "t", Description: "first"}, okTool))
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "t", Description: "second"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("second"), nil
	}))
	assert.Equal(t, []string{"t"}, h.srv.ToolNames())
	toolsStart(h)
	assert.JSONEq(t, `{"name":"t","description":"second","inputSchema":{"type":"object"}}`, string(listedTool(h, 2, "t")))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"second"}]}`, toolCall(h, 3, "t", `{}`))
	toolsStop(h)
}

func TestRemoveTools(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, h.srv.AddTool(server.Tool{Name: name}, okTool))
	}
	assert.Equal(t, 2, h.srv.RemoveTools("a", "c", "missing"))
	assert.Zero(t, h.srv.RemoveTools("a"))
	assert.Equal(t, []string{"b"}, h.srv.ToolNames())
	assert.True(t, registered(h.srv, "b"))
	assert.False(t, registered(h.srv, "a"), "removed")
	assert.False(t, registered(h.srv, "missing"))
	toolsStart(h)
	h.Request(2, "tools/list", nil)
	assert.JSONEq(t, `{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}`, string(h.RecvResult(2)))
	h.SendCallTool(3, "a", `{}`)
	resp := h.RecvResponse()
	assert.Equal(t, &transport.Error{Code: int64(protocol.CodeInvalidParams), Message: `unknown tool: "a"`}, resp.Error)
	toolsStop(h)
}

// toolsPage reads one tools/list page: the names and the next cursor.
func toolsPage(h *harness, id int64, cursor string) ([]string, string) {
	var params any
	if cursor != "" {
		params = map[string]string{"cursor": cursor}
	}
	h.Request(id, "tools/list", params)
	var page struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor *string `json:"nextCursor"`
	}
	require.NoError(h.t, json.Unmarshal(h.RecvResult(id), &page))
	names := make([]string, len(page.Tools))
	for i, t := range page.Tools {
		names[i] = t.Name
	}
	if page.NextCursor == nil {
		return names, ""
	}
	require.NotEmpty(h.t, *page.NextCursor)
	return names, *page.NextCursor
}

// Cursors are stable: a tool added before the cursor is not seen and one
// after it is, but no tool that stayed is repeated or skipped. The session
// is initialized, so the additions also schedule list_changed; the bubble's
// fake clock makes its arrival deterministic.
// Lookups read the registry without its lock while tools come and go:
// under -race, a change made to the map lookups read (rather than to a
// copy) is reported, and a tool that stays is always found.
func TestToolLookupWhileToolsChange(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "stays"}, okTool))
	start := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-start
		for i := range 200 {
			name := "t" + strings.Repeat("x", i%7)
			assert.NoError(t, h.srv.AddTool(server.Tool{Name: name}, okTool))
			h.srv.RemoveTools(name)
		}
	}()
	close(start)
	for range 2000 {
		if !registered(h.srv, "stays") {
			t.Fatal("a registered tool was not found while others changed")
		}
		_, _ = h.srv.Tool("tx")
	}
	<-done
	assert.Equal(t, []string{"stays"}, h.srv.ToolNames())
}

func TestToolsListPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithPageSize(2))
		for _, name := range []string{"e", "c", "a", "d", "b"} {
			require.NoError(t, h.srv.AddTool(server.Tool{Name: name}, okTool))
		}
		toolsStart(h)

		page, cursor := toolsPage(h, 2, "")
		assert.Equal(t, []string{"e", "c"}, page, "in the order registered")
		require.NotEmpty(t, cursor)

		// The same cursor gives the same page.
		page, again := toolsPage(h, 3, cursor)
		assert.Equal(t, []string{"a", "d"}, page)

		require.NoError(t, h.srv.AddTool(server.Tool{Name: "aa"}, okTool)) // new: listed last
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "c"}, okTool))  // replaced: keeps its place, before the cursor
		time.Sleep(time.Second)
		n, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/tools/list_changed", n.Method)

		page, cursor = toolsPage(h, 4, cursor)
		assert.Equal(t, []string{"a", "d"}, page)
		assert.Equal(t, again, cursor)
		page, cursor = toolsPage(h, 5, cursor)
		assert.Equal(t, []string{"b", "aa"}, page)
		assert.Empty(t, cursor)

		// Removing the tool a cursor names does not lose the tools after it.
		page, cursor = toolsPage(h, 6, "")
		assert.Equal(t, []string{"e", "c"}, page)
		assert.Equal(t, 1, h.srv.RemoveTools("c"))
		time.Sleep(time.Second)
		h.Recv() // list_changed
		page, _ = toolsPage(h, 7, cursor)
		assert.Equal(t, []string{"a", "d"}, page)
		toolsStop(h)
	})
}

func TestToolsListDefaultPageSize(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	for i := range server.DefaultPageSize + 1 {
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "t" + strings.Repeat("x", i)}, okTool))
	}
	toolsStart(h)
	page, cursor := toolsPage(h, 2, "")
	assert.Len(t, page, server.DefaultPageSize)
	page, cursor = toolsPage(h, 3, cursor)
	assert.Equal(t, []string{"t" + strings.Repeat("x", server.DefaultPageSize)}, page)
	assert.Empty(t, cursor)
	toolsStop(h)
}

func TestToolsListInvalidParams(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   string
	}{
		{name: "not base64", params: `{"cursor":"!!"}`, want: "invalid cursor"},
		{name: "no version prefix", params: `{"cursor":"` + base64.RawURLEncoding.EncodeToString([]byte("b")) + `"}`, want: "invalid cursor"},
		{name: "cursor not a string", params: `{"cursor":5}`, want: "invalid tools/list params: json: cannot unmarshal number into Go struct field listParams.cursor of type string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.Watchdog(t)
			h := newHarness(t)
			require.NoError(t, h.srv.AddTool(server.Tool{Name: "a"}, okTool))
			toolsStart(h)
			h.Request(2, "tools/list", tt.params)
			resp := h.RecvResponse()
			assert.Equal(t, &transport.Error{Code: int64(protocol.CodeInvalidParams), Message: tt.want}, resp.Error)
			h.Request(3, "ping", nil)
			h.RecvResult(3)
			toolsStop(h)
		})
	}
}

// readAll collects everything the client receives until its connection
// closes.
func readAll(h *harness) <-chan transport.Message {
	got := make(chan transport.Message, 100)
	go func() {
		defer close(got)
		for {
			m, err := h.Conn().Read(context.Background())
			if err != nil {
				return
			}
			got <- m
		}
	}()
	return got
}

// A burst of changes is one list_changed, sent once the delay has passed
// since the first of them; a later burst is another.
func TestToolsListChangedDebounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		toolsStart(h)
		got := readAll(h)

		require.NoError(t, h.srv.AddTool(server.Tool{Name: "a"}, okTool))
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "b"}, okTool))
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "c"}, okTool))
		assert.Equal(t, 1, h.srv.RemoveTools("b"))
		time.Sleep(39 * time.Millisecond)
		synctest.Wait()
		require.Empty(t, got, "before the delay")

		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.Len(t, got, 1)
		n, ok := (<-got).(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, &transport.Request{Method: "notifications/tools/list_changed"}, n)

		time.Sleep(time.Second)
		synctest.Wait()
		require.Empty(t, got, "one notification per burst")

		assert.Zero(t, h.srv.RemoveTools("missing"), "no change, no notification")
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "d"}, okTool))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, got, 1)
		assert.Equal(t, "notifications/tools/list_changed", (<-got).(*transport.Request).Method)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Sessions that have not initialized are not told: their list is not
// stale, and MCP forbids most messages before initialization.
func TestToolsListChangedNotBeforeInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		got := readAll(h)
		require.NoError(t, h.srv.AddTool(server.Tool{Name: "a"}, okTool))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, got)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// TestSessionServer checks that a handler reaches the server that serves
// its session, and through it the live tool registry.
func TestSessionServer(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "self"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		srv := req.Request.Session.Server()
		if srv != h.srv || !registered(srv, "self") {
			return nil, errors.New("not the serving server")
		}
		return server.Text("ok"), nil
	}))
	toolsStart(h)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"ok"}]}`, toolCall(h, 2, "self", `{}`))
	toolsStop(h)
}

// Text's result holds one text item, and is a result like any other: the
// content can grow and be encoded.
func TestText(t *testing.T) {
	r := server.Text("a")
	require.Len(t, r.Content, 1)
	assert.Equal(t, &server.TextContent{Text: "a"}, r.Content[0])
	r.Content = append(r.Content, &server.TextContent{Text: "b"})
	assert.Equal(t, &server.TextContent{Text: "a"}, r.Content[0], "growing keeps the first")
	other := server.Text("c")
	assert.Equal(t, &server.TextContent{Text: "c"}, other.Content[0])
	assert.Equal(t, &server.TextContent{Text: "a"}, r.Content[0], "each result its own")
	raw, err := json.Marshal(server.Text("<x>"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"<x>"}]}`, string(raw))
}

// registered reports whether srv has a tool of that name (Server.Tool).
func registered(srv *server.Server, name string) bool {
	_, ok := srv.Tool(name)
	return ok
}
