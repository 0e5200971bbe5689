package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// askWithin bounds a request of the upstream sent to a downstream session
// outside any call (askSession): no call's deadline bounds it.
const askWithin = 2 * time.Minute

// askSession sends req, a request of the upstream session that serves the
// downstream session ss, to ss's client outside any call, and returns its
// answer: a request the upstream makes on its own, such as the roots/list
// server-filesystem sends right after initialize, or one whose call ended
// before it was sent. It ends when ctx does (the upstream cancelled it, or
// its session ended), when ss ends, or after askWithin.
func askSession(ctx context.Context, ss *server.Session, req *transport.Request) (json.RawMessage, error) {
	// A context of ss's, not of a call's: the request goes on the
	// session's own stream (stdio, the HTTP GET stream), not on a call's.
	sctx, cancel := context.WithTimeoutCause(context.Background(), askWithin,
		fmt.Errorf("gateway: %s: no answer from the client within %v", req.Method, askWithin))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	var params any
	if req.Params != nil {
		params = req.Params
	}
	var result json.RawMessage
	err := ss.Call(sctx, req.Method, params, &result)
	return result, clientError(req.Method, err)
}
