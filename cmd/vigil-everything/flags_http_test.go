package main

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcpPost posts body to url on session sid ("" for none) and returns the
// response with its whole body.
func mcpPost(t *testing.T, url, sid, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

const initializeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flags","version":"1"}}}`

// eventIDs returns the id: lines of an SSE body.
func eventIDs(body string) []string {
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id:"); ok {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	return ids
}

// TestHTTPFlagsMeasurableLikeTheService: -max-sessions bounds the 2025
// sessions (the next initialize is 503), and -resumable=false keeps no
// event store, so SSE events carry no id to resume from, as in the
// shipped vigil; by default they do.
func TestHTTPFlagsMeasurableLikeTheService(t *testing.T) {
	progress := func(t *testing.T, url string) string {
		resp, _ := mcpPost(t, url, "", initializeBody)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		sid := resp.Header.Get("Mcp-Session-Id")
		require.NotEmpty(t, sid)
		mcpPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		resp, body := mcpPost(t, url, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		require.Contains(t, body, `"progressToken":"p"`)
		return body
	}

	t.Run("resumable by default", func(t *testing.T) {
		assert.NotEmpty(t, eventIDs(progress(t, startHTTP(t))), "events with ids to resume from")
	})
	t.Run("max-sessions and resumable=false", func(t *testing.T) {
		url := startHTTPWith(t, nil, "-http", "127.0.0.1:0", "-max-sessions", "1", "-resumable=false", "-list-changed-delay", "0", "-overload-target", "0")
		assert.Empty(t, eventIDs(progress(t, url)), "no event store: no event ids")
		resp, _ := mcpPost(t, url, "", initializeBody)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a second session over -max-sessions 1")
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	})
}
