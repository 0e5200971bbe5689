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

// TestExpectFeatures: a server that expects features declares the tools,
// prompts and resources capabilities before anything is registered,
// lists none of each, answers a call as for an unknown tool, and tells
// the session when the first tool comes. The same server without
// ExpectFeatures declares none of them (the methods are not found), which
// is what a gateway's early client used to get.
func TestExpectFeatures(t *testing.T) {
	for _, expect := range []bool{true, false} {
		t.Run(map[bool]string{true: "expected", false: "not expected"}[expect], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				if expect {
					h.srv.ExpectFeatures()
				}
				h.start()
				var caps map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(h.Initialize(protocol.Version20251125, nil).Capabilities, &caps))
				if !expect {
					for i, kind := range []string{"tools", "prompts", "resources"} {
						assert.NotContains(t, caps, kind)
						assert.Equal(t, int64(protocol.CodeMethodNotFound), h.featureError(int64(10+i), kind+"/list", nil).Code)
					}
					h.finish()
					return
				}
				assert.JSONEq(t, `{"listChanged":true}`, string(caps["tools"]))
				assert.JSONEq(t, `{"listChanged":true}`, string(caps["prompts"]))
				assert.JSONEq(t, `{"subscribe":true,"listChanged":true}`, string(caps["resources"]))
				assert.JSONEq(t, `{"prompts":[]}`, string(h.featureCall(10, "prompts/list", nil)))
				assert.JSONEq(t, `{"resources":[]}`, string(h.featureCall(11, "resources/list", nil)))
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
