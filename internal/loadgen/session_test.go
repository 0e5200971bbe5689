package loadgen_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestOpenSession opens a session on a real server and pings in it; an
// endpoint that is not MCP is an error.
func TestOpenSession(t *testing.T) {
	t.Parallel()
	h := streamable.New(server.New())
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer func() { _ = h.Close() }()
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()

	sid, err := loadgen.OpenSession(client, ts.URL, "2025-11-25")
	require.NoError(t, err)
	assert.NotEmpty(t, sid)
	var buf bytes.Buffer
	ping := loadgen.SessionPost(ts.URL, sid, "2025-11-25", []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, loadgen.Do(client, ping, &buf, []byte(`"result":{}`)))

	notMCP := httptest.NewServer(http.NotFoundHandler())
	defer notMCP.Close()
	_, err = loadgen.OpenSession(client, notMCP.URL, "2025-11-25")
	require.ErrorContains(t, err, "initialize: 404 Not Found")
}

// TestOpenStatelessSession: a server that answers initialize without an
// Mcp-Session-Id (a stateless one) opens a session of no id, and requests
// in it carry no Mcp-Session-Id header.
func TestOpenStatelessSession(t *testing.T) {
	t.Parallel()
	var sawID []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawID = append(sawID, r.Header.Get("Mcp-Session-Id"))
		if strings.Contains(r.Header.Get("Content-Type"), "json") && r.ContentLength > 0 && r.Header.Get("MCP-Protocol-Version") != "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{}}`))
	}))
	defer ts.Close()
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()
	sid, err := loadgen.OpenSession(client, ts.URL, "2025-06-18")
	require.NoError(t, err)
	assert.Empty(t, sid)
	assert.Empty(t, loadgen.SessionPost(ts.URL, sid, "2025-06-18", []byte(`{}`)).Header.Get("Mcp-Session-Id"))
	assert.Equal(t, []string{"", ""}, sawID)
}
