package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// drainPost serves one POST on h in process; sid names a 2025 session,
// "" a 2026-07-28 request of method and name.
func drainPost(h http.Handler, sid, method, name, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	} else {
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", method)
		if name != "" {
			r.Header.Set("Mcp-Name", name)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const drainMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// During the shutdown drain, a request refused is refused alike in both
// eras: the JSON-RPC -32000 "server is shutting down" error carrying the
// request's id; never a 200 with an empty body (what a 2026-07-28 request
// got). A 2026-07-28 request belongs to no session, so it is also told to
// go elsewhere (503, Retry-After), as a 2025 initialize would be; a 2025
// session's request is answered in its session (200).
func TestDrainRefusalsCarryTheID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := server.New()
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			started <- struct{}{}
			<-release
			return server.Text("released"), nil
		}))
		require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("echo"), nil
		}))
		var rejected []protocol.RejectReason // the endpoint's refusals, counted
		h := streamable.New(srv, streamable.WithRejectHook(func(r protocol.RejectReason) { rejected = append(rejected, r) }))
		sid := openIdle(t, h)

		// One request in flight in each era holds the drain open.
		answers := make(chan *httptest.ResponseRecorder, 2)
		go func() {
			answers <- drainPost(h, sid, "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block"}}`)
		}()
		go func() {
			answers <- drainPost(h, "", "tools/call", "block", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block",`+drainMeta+`}}`)
		}()
		<-started
		<-started
		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		synctest.Wait() // Shutdown waits for the two requests: draining

		check := func(era string, w *httptest.ResponseRecorder, id string) {
			t.Helper()
			if strings.HasPrefix(era, "2025") {
				assert.Equal(t, http.StatusOK, w.Code, "%s: %s", era, w.Body)
			} else {
				assert.Equal(t, http.StatusServiceUnavailable, w.Code, "%s: %s", era, w.Body)
				assert.Equal(t, "1", w.Header().Get("Retry-After"), era)
			}
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp), "%s: %q", era, w.Body)
			assert.JSONEq(t, id, string(resp.ID), era)
			assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code, era)
			assert.Equal(t, protocol.RejectShuttingDown.Message(), resp.Error.Message, era)
		}
		check("2025-11-25", drainPost(h, sid, "", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`), "7")
		check("2026-07-28", drainPost(h, "", "tools/call", "echo", `{"jsonrpc":"2.0","id":"seven","method":"tools/call","params":{"name":"echo",`+drainMeta+`}}`), `"seven"`)
		check("2026-07-28 tools/list", drainPost(h, "", "tools/list", "", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{`+drainMeta+`}}`), "8")

		assert.Equal(t, []protocol.RejectReason{protocol.RejectShuttingDown, protocol.RejectShuttingDown}, rejected,
			"the 2026-07-28 refusals are counted (the 2025 one, by the server's observer)")
		close(release)
		for range 2 {
			w := <-answers
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Contains(t, w.Body.String(), "released")
		}
		require.NoError(t, <-shut)
		require.NoError(t, h.Close())
		require.NoError(t, srv.Close())
	})
}

// A replica leaving the cluster (Drain) refuses a POST once it has read
// it, with the request's id, in both eras (before, with "id":null).
func TestDrainedEndpointRefusalsCarryTheID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := server.New()
		require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("echo"), nil
		}))
		h := streamable.New(srv)
		sid := openIdle(t, h)
		h.Drain()
		for _, tc := range []struct {
			era string
			w   *httptest.ResponseRecorder
			id  string
		}{
			{"2025-11-25", drainPost(h, sid, "", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`), "7"},
			{"2026-07-28", drainPost(h, "", "tools/call", "echo", `{"jsonrpc":"2.0","id":"seven","method":"tools/call","params":{"name":"echo",`+drainMeta+`}}`), `"seven"`},
			{"2025 notification", drainPost(h, sid, "", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`), "null"},
		} {
			assert.Equal(t, http.StatusServiceUnavailable, tc.w.Code, tc.era)
			assert.Equal(t, "1", tc.w.Header().Get("Retry-After"), tc.era)
			var resp struct {
				ID    json.RawMessage      `json:"id"`
				Error struct{ Code int64 } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(tc.w.Body.Bytes(), &resp), "%s: %q", tc.era, tc.w.Body)
			assert.JSONEq(t, tc.id, string(resp.ID), tc.era)
			assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code, tc.era)
		}
		require.NoError(t, srv.Shutdown(context.Background()))
		require.NoError(t, h.Close())
	})
}
