package main

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// addReconnection registers test_reconnection, the fixture of the
// server-sse-polling scenario: over Streamable HTTP with resumability on,
// the tool ends its POST's SSE connection (after the priming event) before
// it answers, so the client must resume with GET and Last-Event-ID to get
// the result. Elsewhere (stdio) it simply answers.
func addReconnection(s *server.Server) error {
	return s.AddTool(server.Tool{
		Name:        "test_reconnection",
		Description: "Closes its SSE stream before answering, so that the client must reconnect with Last-Event-ID to receive the result",
	}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		if err := streamable.CloseSSEStream(ctx, req.Request.ID); err == nil {
			// Give the client a moment to notice and reconnect; the result
			// is stored for replay either way.
			t := time.NewTimer(100 * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		} else if !errors.Is(err, streamable.ErrNotResumable) {
			return nil, err
		}
		return server.Text("Reconnection test completed successfully"), nil
	})
}
