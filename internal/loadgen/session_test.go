package loadgen_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
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
