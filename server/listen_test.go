package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// notification reads the next message and requires a notification.
func (h *harness) notification() *transport.Request {
	m, ok := h.Recv().(*transport.Request)
	require.True(h.t, ok, "want a notification")
	require.True(h.t, m.IsNotification())
	return m
}

func TestSubscriptionsListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("a", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("a"), nil
		})
		h.start()
		h.Request(7, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{
			"toolsListChanged": true, "promptsListChanged": true,
		}})
		ack := h.notification()
		assert.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
		assert.JSONEq(t, `{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(ack.Params),
			"prompts are not offered, so promptsListChanged is not honored")

		// Two changes in one window: one notification, tagged.
		h.addTool("b", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		h.addTool("c", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		time.Sleep(time.Second)
		changed := h.notification()
		assert.Equal(t, "notifications/tools/list_changed", changed.Method)
		assert.JSONEq(t, `{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(changed.Params))

		// The client ends the stream: no answer to the listen request.
		h.Cancel(7, "done")
		synctest.Wait()
		h.Request(8, "tools/list", map[string]any{"_meta": meta2026(nil)})
		h.RecvResult(8)
		assert.Equal(t, []drop{{"7", protocol.DropCancelled}}, h.obs.snapshotDrops())
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A listen stream gets nothing it did not ask for.
func TestSubscriptionsListenFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("a", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		h.start()
		h.Request(7, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"resourcesListChanged": true}})
		ack := h.notification()
		assert.JSONEq(t, `{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`, string(ack.Params))
		h.addTool("b", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		time.Sleep(time.Second)
		// The next message is the answer to a ping-like request, not a tools notification.
		h.Request(8, "tools/list", map[string]any{"_meta": meta2026(nil)})
		var list struct {
			Tools []json.RawMessage `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(8), &list))
		assert.Len(t, list.Tools, 2)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Shutting down ends a listen stream gracefully, with the listen result, and
// the drain completes without waiting for the deadline.
func TestSubscriptionsListenEndsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("a", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		h.start()
		h.Request(7, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"toolsListChanged": true}})
		h.notification()
		shutdown := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			shutdown <- h.srv.Shutdown(ctx)
		}()
		assert.JSONEq(t, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7,"io.modelcontextprotocol/serverInfo":{"name":"vigil","version":"dev"}}}`, string(h.RecvResult(7)))
		require.NoError(t, <-shutdown)
		require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
	})
}

// Methods behind a capability the server does not offer are -32601 for
// 2026 requests.
func TestStatelessCapabilityGating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		for i, method := range []string{"tools/list", "prompts/list", "resources/list", "completion/complete"} {
			id := int64(i + 1)
			h.Request(id, method, map[string]any{"_meta": meta2026(nil)})
			assert.Equal(t, int64(protocol.CodeMethodNotFound), h.RecvError(id).Code, method)
		}
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A change made before a stream subscribed is not news to it, even when its
// debounced notification fires after the subscription.
func TestSubscriptionsListenIgnoresEarlierChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("a", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		h.start()
		h.Request(6, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"promptsListChanged": true}})
		h.notification() // ack; this stream keeps the debouncer armed
		h.addTool("b", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { return nil, nil })
		h.Request(7, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"toolsListChanged": true}})
		h.notification()        // ack
		time.Sleep(time.Second) // the debounced tools change fires now
		h.Request(8, "tools/list", map[string]any{"_meta": meta2026(nil)})
		h.RecvResult(8) // and nothing came before this answer
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
