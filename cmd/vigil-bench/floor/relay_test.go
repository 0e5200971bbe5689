package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStdioEnv makes the test binary stdiopeer.ServeFake, a fake MCP
// server over stdio (TestMain).
const fakeStdioEnv = "VIGIL_FLOOR_FAKE_STDIO"

// TestRelayAnswersWithTheServersAnswer: with -relay, the floor answers
// initialize and notifications itself and a tools/call with the line of
// the server's that answers its id, passing over the server's
// notifications and requests; once the server is gone, a call is 502.
func TestRelayAnswersWithTheServersAnswer(t *testing.T) {
	t.Setenv(fakeStdioEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	r, err := startRelay(self)
	require.NoError(t, err)
	f := newFloor()
	f.relay = r
	srv := httptest.NewServer(f)
	defer srv.Close()
	postBody := func(body string) (int, string) {
		resp, err := srv.Client().Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := postBody(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"serverInfo":{"name":"vigil"`, "the floor's own answer")
	code, _ = postBody(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Equal(t, http.StatusAccepted, code)
	for _, id := range []string{"2", `"three"`} {
		code, body = postBody(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"any","arguments":{}}}`)
		require.Equal(t, http.StatusOK, code, body)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+id+`,"result":{"serverInfo":{},"content":[{"type":"text","text":"tools/call `+strings.ReplaceAll(id, `"`, `\"`)+`"}]}}`, body)
	}
	r.close()
	code, body = postBody(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"any","arguments":{}}}`)
	assert.Equal(t, http.StatusBadGateway, code, body)
}
