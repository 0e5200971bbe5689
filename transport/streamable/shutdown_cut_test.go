package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// A 2026-07-28 call that shutdown cuts off (its grace over, the call
// still running) is answered with a JSON-RPC error carrying its id, as a
// 2025 session's is: never an empty answer; its outcome is that answer.
func TestShutdownCutCallAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var outs []server.Outcome
		srv := server.New(server.WithObserver(server.Observer{RequestEnded: func(_ context.Context, req *server.Request, out server.Outcome) {
			if req.Method == "tools/call" {
				mu.Lock()
				outs = append(outs, out)
				mu.Unlock()
			}
		}}))
		started := make(chan struct{}, 2)
		require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}))
		h := streamable.New(srv)
		sid := openIdle(t, h)
		answers := make(chan *httptest.ResponseRecorder, 2)
		go func() {
			answers <- drainPost(h, sid, "", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}}`)
		}()
		go func() {
			answers <- drainPost(h, "", "tools/call", "block", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"block",`+drainMeta+`}}`)
		}()
		<-started
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // the grace runs out: both calls are cut off
		ids := map[string]string{}
		for range 2 {
			w := <-answers
			assert.Equal(t, http.StatusOK, w.Code, "the call ran: no 503 inviting a retry")
			var msg struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &msg), "an answer, not an empty body: %q", w.Body.String())
			require.NotNil(t, msg.Error, "%s", w.Body)
			assert.Equal(t, int64(protocol.CodeServerBusy), msg.Error.Code)
			ids[string(msg.ID)] = msg.Error.Message
		}
		assert.Equal(t, map[string]string{"7": "session terminated", "8": protocol.RejectShuttingDown.Message()}, ids)
		synctest.Wait()
		mu.Lock()
		require.Len(t, outs, 2)
		for _, out := range outs {
			assert.Equal(t, protocol.DropNone, out.Dropped, "counted as what the client got: an error answer; %+v", out)
			assert.Equal(t, protocol.CodeServerBusy, server.CodeOf(out.Err))
		}
		mu.Unlock()
		require.NoError(t, h.Close())
		require.NoError(t, srv.Close())
	})
}
