package middleware_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// upstreamGone is the error of a handler whose upstream went away: it
// wraps server.ErrUpstreamClosed and tells the client which upstream.
type upstreamGone struct{}

func (upstreamGone) Error() string { return "upstream u is gone" }
func (upstreamGone) Unwrap() error { return server.ErrUpstreamClosed }

// TestUpstreamClosedOutcome: a handler's error that wraps
// server.ErrUpstreamClosed is answered with its code and message, and
// recorded with the cause upstream_closed: a finished count of error_type
// upstream_closed (not -32603) with the code as the status code, and a
// cancellation of that cause.
func TestUpstreamClosedOutcome(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	require.NoError(t, r.srv.AddTool(server.Tool{Name: "hop"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, server.NewError(protocol.CodeInternal, upstreamGone{})
	}))
	r.start(nil)
	r.Initialize("", nil)
	_, rpcErr := r.Call("tools/call", map[string]any{"name": "hop"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Equal(t, "upstream u is gone", rpcErr.Message)
	r.close()

	got := series(t, r.m, "_messages_total", "_bytes_total")
	want := map[string]float64{
		cancellations("tools/call", "upstream_closed"): 1,
		`mcp_server_requests_finished_total{error_type="upstream_closed",gen_ai_tool_name="hop",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32603"}`: 1,
		durCount("hop", "tools/call"): 1,
	}
	assert.Equal(t, want, pick(got, slices.Collect(maps.Keys(want))...))
}
