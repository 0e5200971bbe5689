package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeStdioEnv) != "" {
		stdiopeer.ServeFake(os.Stdin, os.Stdout)
		return
	}
	goleak.VerifyTestMain(m)
}

// post sends body to the floor's handler with the given headers and
// returns the recorded response.
func post(t *testing.T, method, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, "/mcp", strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	newFloor().ServeHTTP(w, r)
	return w
}

func TestHandleAnswersAsVigil(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a \"quoted\" word"}}}`
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   string
	}{
		{
			name:   "2025 session",
			header: map[string]string{"Mcp-Session-Id": "s1"},
			want:   `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a \"quoted\" word"}]}}`,
		},
		{
			name:   "2026-07-28 stateless",
			header: map[string]string{"MCP-Protocol-Version": protocol.Version20260728},
			want:   `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"vigil","version":"dev"}},"content":[{"type":"text","text":"a \"quoted\" word"}],"resultType":"complete"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := post(t, http.MethodPost, call, tc.header)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.Equal(t, tc.want, w.Body.String())
			assert.Equal(t, tc.header["Mcp-Session-Id"], w.Header().Get("Mcp-Session-Id"))
		})
	}
}

func TestHandleInitializeGivesASession(t *testing.T) {
	w := post(t, http.MethodPost, `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var res struct {
		ID     string `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, "a", res.ID)
	assert.Equal(t, "2025-06-18", res.Result.ProtocolVersion)
	assert.Len(t, w.Header().Get("Mcp-Session-Id"), 22, "16 random bytes in unpadded base64")
	other := post(t, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, nil)
	assert.NotEqual(t, w.Header().Get("Mcp-Session-Id"), other.Header().Get("Mcp-Session-Id"))
}

func TestHandleRefusesWhatItDoesNotServe(t *testing.T) {
	for _, tc := range []struct {
		name, method, body string
		want               int
	}{
		{"PUT", http.MethodPut, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "{", http.StatusBadRequest},
		{"not JSON-RPC 2.0", http.MethodPost, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, http.StatusBadRequest},
		{"another method", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.StatusBadRequest},
		{"another tool", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"text":"x"}}}`, http.StatusBadRequest},
		{"echo without text", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, http.StatusBadRequest},
		{"a notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, post(t, tc.method, tc.body, nil).Code)
		})
	}
}

func TestServeRefusesANonLoopbackAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "localhost:0", "nonsense"} {
		err := serve(addr, newFloor())
		require.Error(t, err, addr)
	}
}

// TestStreamsGetEveryListChanged opens three GET streams on a real server
// (the handler must flush through net/http), calls the trigger tool twice
// and checks that each stream gets exactly one list_changed event per call,
// the one vigil writes.
func TestStreamsGetEveryListChanged(t *testing.T) {
	srv := httptest.NewServer(newFloor())
	defer srv.Close()
	var streams []*bufio.Reader
	for range 3 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/mcp", nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req) // the headers arrive once the stream waits for broadcasts
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		streams = append(streams, bufio.NewReader(resp.Body))
	}
	const trigger = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{}}}`
	for range 2 {
		resp, err := srv.Client().Post(srv.URL+"/mcp", "application/json", strings.NewReader(trigger))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"The tool list changed"}]}}`, string(body))
		for i, br := range streams {
			var event string
			for range 3 { // event:, data: and the blank line
				line, err := br.ReadString('\n')
				require.NoError(t, err, "stream %d", i)
				event += line
			}
			assert.Equal(t, listChanged, event, "stream %d", i)
		}
	}
}
