package streamable_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The recorded cause of a request the client stops, as real clients stop
// them over HTTP (docs/operations.md, "Why requests were cancelled").

// causeRig is an Endpoint whose server has a tool "block" that waits for
// its cancellation, and records the outcome of every tools/call.
type causeRig struct {
	*htEnv
	blocker  *htBlocker
	outcomes chan server.Outcome
}

func newCauseRig(t *testing.T, opts ...streamable.Option) *causeRig {
	t.Helper()
	outcomes := make(chan server.Outcome, 8)
	srv := htServer(t, server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) { outcomes <- out })
			}
			return next(ctx, req)
		}
	}))
	b := newHTBlocker()
	require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, b.tool))
	return &causeRig{htEnv: newHTEnv(t, srv, opts...), blocker: b, outcomes: outcomes}
}

// start POSTs body with hdr on a stream the returned function closes, and
// waits for the handler to start.
func (r *causeRig) start(body string, hdr htH) (closeStream func()) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(r.t.Context())
	done := make(chan struct{})
	req := r.request(ctx, http.MethodPost, body, hdr)
	go func() {
		defer close(done)
		if resp, err := r.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	<-r.blocker.started
	return func() {
		cancel()
		<-done
	}
}

// outcome waits for the one outcome of the call.
func (r *causeRig) outcome() server.Outcome {
	r.t.Helper()
	select {
	case out := <-r.outcomes:
		return out
	case <-time.After(10 * time.Second):
		r.t.Fatal("no outcome")
		return server.Outcome{}
	}
}

// notify POSTs a notification and checks it is accepted.
func (r *causeRig) notify(body string, hdr htH) {
	r.t.Helper()
	got := r.do(http.MethodPost, body, hdr)
	require.Equal(r.t, http.StatusAccepted, got.status, "%s", got.body)
}

const cancelOne = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user pressed stop"}}`

// In a 2025 session: a closed POST whose client then (or already) sent
// notifications/cancelled is client_cancel (go-sdk, the TypeScript SDK); a
// bare close is stream_close (mcp-go, the AI SDK); a close along with the
// client's GET stream (a killed client) or the session's end is
// transport_close. The handler is cancelled at once in every case.
func TestHTTPCauseOfAClosedPost(t *testing.T) {
	cases := []struct {
		name string
		stop func(t *testing.T, r *causeRig, sid string, closeStream func(), closeGet func())
		want protocol.CancelReason
	}{
		{"notification after the close", func(t *testing.T, r *causeRig, sid string, closeStream, _ func()) {
			closeStream()
			require.Error(t, <-r.blocker.cause) // cancelled at once, before the notification
			r.notify(cancelOne, htSession(sid))
		}, protocol.ReasonClientCancel},
		{"notification before the close", func(t *testing.T, r *causeRig, sid string, closeStream, _ func()) {
			r.notify(cancelOne, htSession(sid))
			require.Error(t, <-r.blocker.cause)
			closeStream()
		}, protocol.ReasonClientCancel},
		{"bare close", func(t *testing.T, r *causeRig, _ string, closeStream, _ func()) {
			closeStream()
			require.Error(t, <-r.blocker.cause)
		}, protocol.ReasonStreamClose},
		{"killed client", func(t *testing.T, r *causeRig, _ string, closeStream, closeGet func()) {
			closeStream()
			closeGet()
			require.Error(t, <-r.blocker.cause)
		}, protocol.ReasonTransportClose},
		{"killed client, GET first", func(t *testing.T, r *causeRig, _ string, closeStream, closeGet func()) {
			closeGet()
			closeStream()
			require.Error(t, <-r.blocker.cause)
		}, protocol.ReasonTransportClose},
		{"session deleted after the close", func(t *testing.T, r *causeRig, sid string, closeStream, _ func()) {
			closeStream()
			require.Error(t, <-r.blocker.cause)
			require.Equal(t, http.StatusNoContent, r.do(http.MethodDelete, "", htSession(sid)).status)
		}, protocol.ReasonTransportClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newCauseRig(t)
			sid := r.initialize(`{}`)
			getCtx, closeGet := context.WithCancel(t.Context())
			get := r.send(r.request(getCtx, http.MethodGet, "", htSession(sid)))
			require.Equal(t, http.StatusOK, get.StatusCode)
			defer func() { _ = get.Body.Close() }()
			closeStream := r.start(htCallBody("1", "block", `{}`), htSession(sid))
			tc.stop(t, r, sid, closeStream, closeGet)
			out := r.outcome()
			assert.Equal(t, tc.want, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
			assert.Empty(t, r.outcomes, "one outcome")
		})
	}
}

// In the 2026-07-28 era, a closed POST is stream_close; the caller's
// notifications/cancelled for it, a POST of its own, makes it
// client_cancel, after the close (go-sdk) or while the request's stream
// stays open (mcp-remote), whose response then ends with no answer.
func TestHTTPStatelessCancel(t *testing.T) {
	call := htSL(1, "tools/call", `{"name":"block","arguments":{}}`, htMeta26)
	hdr := htSLHeaders("tools/call", "block")
	cancelHdr := htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled"}
	t.Run("bare close", func(t *testing.T) {
		r := newCauseRig(t)
		r.start(call, hdr)()
		require.Error(t, <-r.blocker.cause)
		out := r.outcome()
		assert.Equal(t, protocol.ReasonStreamClose, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
	})
	t.Run("notification after the close", func(t *testing.T) {
		r := newCauseRig(t)
		r.start(call, hdr)()
		require.Error(t, <-r.blocker.cause)
		r.notify(cancelOne, cancelHdr)
		out := r.outcome()
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
		assert.Contains(t, out.Cause.Error(), "user pressed stop")
	})
	t.Run("notification while the stream is open", func(t *testing.T) {
		r := newCauseRig(t)
		resp := make(chan htReply, 1)
		go func() { resp <- r.do(http.MethodPost, call, hdr) }()
		<-r.blocker.started
		r.notify(cancelOne, cancelHdr)
		require.ErrorIs(t, <-r.blocker.cause, server.ErrClientCancel)
		got := <-resp
		assert.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, "text/event-stream", got.header.Get("Content-Type"), "an empty event stream, not an empty 200")
		assert.Empty(t, got.body)
		out := r.outcome()
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(out.Cause))
		assert.Equal(t, protocol.DropCancelled, out.Dropped)
	})
	t.Run("unknown id", func(t *testing.T) {
		r := newCauseRig(t)
		r.notify(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, cancelHdr)
	})
}

// A notifications/cancelled of another caller (another principal) never
// cancels a request: the request's own caller's does.
func TestHTTPStatelessCancelOtherCaller(t *testing.T) {
	r := newCauseRig(t, streamable.WithPrincipal(func(r *http.Request) string { return r.Header.Get("X-Who") }))
	call := htSL(1, "tools/call", `{"name":"block","arguments":{}}`, htMeta26)
	hdr := htSLHeaders("tools/call", "block")
	hdr["X-Who"] = "alice"
	closeStream := r.start(call, hdr)
	defer closeStream()
	r.notify(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"mallory"}}`,
		htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled", "X-Who": "mallory"})
	r.notify(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"alice"}}`,
		htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled", "X-Who": "alice"})
	cause := <-r.blocker.cause
	require.ErrorIs(t, cause, server.ErrClientCancel)
	assert.Contains(t, cause.Error(), "alice", "the caller's own cancel, not another's: %v", cause)
	out := r.outcome()
	assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(out.Cause))
}

// Across replicas: a 2026-07-28 request runs on replica a; its client's
// notifications/cancelled lands on replica b, which relays it; a cancels
// the request as the client's, only for the same caller.
func TestSharedStatelessCancel(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2)
		a, b := rs.envs[0], rs.envs[1]
		call := htSL(7, "tools/call", `{"name":"block","arguments":{}}`, htMeta26)
		done := make(chan htReply, 1)
		go func() { done <- a.do(http.MethodPost, call, htSLHeaders("tools/call", "block")) }()
		<-rs.blocker.started
		got := b.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}}`,
			htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled"})
		require.Equal(t, http.StatusAccepted, got.status)
		cause := <-rs.blocker.cause
		require.ErrorIs(t, cause, server.ErrClientCancel, "cause: %v", cause)
		assert.Contains(t, cause.Error(), "changed my mind")
		assert.Equal(t, http.StatusOK, (<-done).status)
	})
}
