package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestExpectTools: a server that expects tools declares the tools
// capability before any is registered, lists none, answers a call as for
// an unknown tool, and tells the session when the first tool comes. The
// same server without ExpectTools declares no tools (the method is not
// found), which is what a gateway's early client used to get.
func TestExpectTools(t *testing.T) {
	for _, expect := range []bool{true, false} {
		t.Run(map[bool]string{true: "expected", false: "not expected"}[expect], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				if expect {
					h.srv.ExpectTools()
				}
				h.start()
				var caps map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(h.Initialize(protocol.Version20251125, nil).Capabilities, &caps))
				if !expect {
					assert.NotContains(t, caps, "tools")
					assert.Equal(t, int64(protocol.CodeMethodNotFound), h.featureError(1, "tools/list", nil).Code)
					h.finish()
					return
				}
				assert.JSONEq(t, `{"listChanged":true}`, string(caps["tools"]))
				assert.JSONEq(t, `{"tools":[]}`, string(h.featureCall(1, "tools/list", nil)))
				e := h.featureError(2, "tools/call", map[string]any{"name": "later"})
				assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
				assert.Contains(t, e.Message, "unknown tool")

				h.addTool("later", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
					return server.Text("here"), nil
				})
				synctest.Wait()
				assert.Equal(t, "notifications/tools/list_changed", h.notification().Method)
				assert.Contains(t, string(h.featureCall(3, "tools/list", nil)), `"name":"later"`)
				h.finish()
			})
		})
	}
}
