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

// callTool registers a tool that calls the client with method and reports
// the answer's error on errs.
func clientCaller(h *harness, method string, errs chan<- error, results chan<- json.RawMessage) {
	h.addTool("call", func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var res json.RawMessage
		err := req.Request.Session.Call(ctx, method, map[string]any{"x": 1}, &res)
		errs <- err
		if results != nil {
			results <- res
		}
		return server.Text("called"), nil
	})
}

func TestCallRefusedWithoutCapability(t *testing.T) {
	for _, method := range []string{"roots/list", "sampling/createMessage", "elicitation/create"} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := make(chan error, 1)
				clientCaller(h, method, errs, nil)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				h.SendCallTool(2, "call", `{}`)
				require.ErrorIs(t, <-errs, server.ErrCapability)
				h.RecvResult(2) // and nothing was sent to the client before it
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

func TestCallBeforeInitializedIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := make(chan error, 1)
		clientCaller(h, "roots/list", errs, nil)
		h.start()
		h.Request(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"roots": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		h.RecvResult(1)
		h.SendCallTool(2, "call", `{}`) // no notifications/initialized yet
		require.ErrorIs(t, <-errs, server.ErrNotInitialized)
		h.RecvResult(2)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

func TestCallRoundTripAndErrorAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := make(chan error, 2)
		results := make(chan json.RawMessage, 2)
		clientCaller(h, "sampling/createMessage", errs, results)
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"sampling": map[string]any{}})

		h.SendCallTool(2, "call", `{}`)
		out := h.Recv().(*transport.Request)
		assert.Equal(t, "sampling/createMessage", out.Method)
		assert.JSONEq(t, `{"x":1}`, string(out.Params))
		h.Send(&transport.Response{ID: out.ID, Result: json.RawMessage(`{"role":"assistant"}`)})
		require.NoError(t, <-errs)
		assert.JSONEq(t, `{"role":"assistant"}`, string(<-results))
		h.RecvResult(2)

		h.SendCallTool(3, "call", `{}`)
		out = h.Recv().(*transport.Request)
		h.Send(&transport.Response{ID: out.ID, Error: &transport.Error{Code: -1, Message: "user declined"}})
		err := <-errs
		var mcpErr *server.Error
		require.ErrorAs(t, err, &mcpErr)
		assert.Equal(t, protocol.Code(-1), mcpErr.Code)
		assert.Equal(t, "user declined", mcpErr.Message)
		<-results
		h.RecvResult(3)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A client that never answers: the call times out, the client is told with
// notifications/cancelled, and a late answer is ignored.
func TestCallTimeoutSendsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCallTimeout(5*time.Second))
		errs := make(chan error, 1)
		clientCaller(h, "elicitation/create", errs, nil)
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
		h.SendCallTool(2, "call", `{}`)
		out := h.Recv().(*transport.Request)
		require.Equal(t, "elicitation/create", out.Method)

		start := time.Now()
		cancelled := h.Recv().(*transport.Request) // sent when the timeout fires
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Equal(t, "notifications/cancelled", cancelled.Method)
		var p struct {
			RequestID transport.ID `json:"requestId"`
		}
		require.NoError(t, json.Unmarshal(cancelled.Params, &p))
		assert.Equal(t, out.ID, p.RequestID)
		require.ErrorIs(t, <-errs, context.DeadlineExceeded)
		h.RecvResult(2)

		h.Send(&transport.Response{ID: out.ID, Result: json.RawMessage(`{}`)}) // too late: ignored
		h.Request(3, "ping", nil)
		h.RecvResult(3)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Pending returns a sorted copy of both directions.
func TestPendingSnapshotIsACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		release := make(chan struct{})
		h.addTool("wait", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			<-release
			return server.Text("done"), nil
		})
		errs := make(chan error, 1)
		clientCaller(h, "roots/list", errs, nil)
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"roots": map[string]any{}})
		h.SendCallTool(2, "wait", `{}`)
		time.Sleep(time.Millisecond) // fake time inside the bubble: orders the start times
		h.SendCallTool(3, "call", `{}`)
		out := h.Recv().(*transport.Request)
		synctest.Wait()

		ss := h.srv.Sessions()[0]
		p := ss.Pending()
		require.Len(t, p, 3)
		assert.Equal(t, server.PendingRequest{ID: transport.Int64ID(2), Method: "tools/call", Name: "wait", Started: p[0].Started}, p[0])
		// The tool call and its roots/list started at the same (fake) instant.
		rest := map[bool]server.PendingRequest{p[1].Outgoing: p[1], p[2].Outgoing: p[2]}
		assert.Equal(t, "call", rest[false].Name)
		assert.Equal(t, transport.Int64ID(3), rest[false].ID)
		assert.Equal(t, "roots/list", rest[true].Method)
		assert.Equal(t, out.ID, rest[true].ID)
		p[0].Method = "scribbled"
		assert.Equal(t, "tools/call", ss.Pending()[0].Method)

		h.Send(&transport.Response{ID: out.ID, Result: json.RawMessage(`{"roots":[]}`)})
		require.NoError(t, <-errs)
		h.RecvResult(3)
		close(release)
		h.RecvResult(2)
		assert.Empty(t, ss.Pending())
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"1999-01-01", "2025-11-25"},
		{"2026-07-28", "2025-11-25"},
	} {
		t.Run(tc.asked, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, server.WithImplementation("probe", "9.9"), server.WithInstructions("be nice")).start()
				h.Request(1, "initialize", map[string]any{"protocolVersion": tc.asked, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
				var res struct {
					ProtocolVersion string                `json:"protocolVersion"`
					ServerInfo      server.Implementation `json:"serverInfo"`
					Instructions    string                `json:"instructions"`
				}
				require.NoError(t, json.Unmarshal(h.RecvResult(1), &res))
				assert.Equal(t, tc.want, res.ProtocolVersion)
				assert.Equal(t, server.Implementation{Name: "probe", Version: "9.9"}, res.ServerInfo)
				assert.Equal(t, "be nice", res.Instructions)
				assert.Equal(t, tc.want, h.srv.Sessions()[0].ProtocolVersion())
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}
