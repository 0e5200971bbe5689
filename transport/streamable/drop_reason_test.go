package streamable_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A client that closes its request early (the request's POST cut, its
// session, if any, living on) has the request dropped for the same reason
// in both eras: peer_gone, the client left the request's stream. Before,
// a 2025 session said peer_gone and a 2026-07-28 request writer_closed.
func TestDropReasonAlikeInBothEras(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			chaosWatchdog(t)
			rig := newChaosRig(t)
			started := make(chan struct{}, 1)
			rig.addTool(t, "wait", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			})
			ctx, cut := context.WithCancel(context.Background())
			defer cut()
			req := rig.newPost(ctx, "", chaosCall(1, "wait", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`))
			if era == "2025-11-25" {
				req = rig.newPost(ctx, rig.initialize(t, `{}`), chaosCall(1, "wait", ""))
			} else {
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "wait")
			}
			done := make(chan error, 1)
			go func() {
				resp, err := rig.do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				done <- err
			}()
			chaosRecv(t, started, "the handler to start")
			cut()
			require.Error(t, chaosRecv(t, done, "the client to give up"))

			outs := rig.rec.awaitOutcomes(t, "wait", 1)
			assert.Equal(t, protocol.DropPeerGone, outs[0].Dropped, "cause %v", outs[0].Cause)
			assert.Equal(t, []protocol.DropReason{protocol.DropPeerGone}, rig.rec.dropsOf("wait"))
		})
	}
}
