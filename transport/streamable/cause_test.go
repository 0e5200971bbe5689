package streamable_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
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
	sealed   chan time.Time // when each outcome was sealed, before it is sent on outcomes
	closedAt time.Time      // when the test closed the call's stream, if it says
}

func newCauseRig(t *testing.T, opts ...streamable.Option) *causeRig {
	t.Helper()
	outcomes, sealed := make(chan server.Outcome, 8), make(chan time.Time, 8)
	srv := htServer(t, server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) {
					select {
					case sealed <- time.Now(): // read by the tests that time the seal
					default:
					}
					outcomes <- out
				})
			}
			return next(ctx, req)
		}
	}))
	b := newHTBlocker()
	require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, b.tool))
	return &causeRig{htEnv: newHTEnv(t, srv, opts...), blocker: b, outcomes: outcomes, sealed: sealed}
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

// endedAtTheClose checks that a call whose stream closed at r.closedAt
// (when the test set it) is recorded ending then, not once its cause
// settled: the label waits out StreamCloseGrace (250 ms), the duration
// does not. The bound, half the grace, holds on a loaded machine; the
// time is logged.
func (r *causeRig) endedAtTheClose(out server.Outcome) {
	r.t.Helper()
	if r.closedAt.IsZero() {
		return
	}
	d := out.Ended.Sub(r.closedAt)
	r.t.Logf("recorded end %.2f ms after the close", float64(d)/float64(time.Millisecond))
	assert.Less(r.t, d, server.StreamCloseGrace/2, "the duration ends at the close, not at the grace's end")
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
			r.closedAt = time.Now()
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
			r.endedAtTheClose(out)
		})
	}
}

// A killed 2025 client whose POST's connection closes before its GET's is
// recorded transport_close as the GET closes: the GET's close wakes the
// settle, which does not wait out the rest of StreamCloseGrace.
func TestHTTPKilledClientPostFirst(t *testing.T) {
	r := newCauseRig(t)
	sid := r.initialize(`{}`)
	getCtx, closeGet := context.WithCancel(t.Context())
	get := r.send(r.request(getCtx, http.MethodGet, "", htSession(sid)))
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer func() { _ = get.Body.Close() }()
	closeStream := r.start(htCallBody("1", "block", `{}`), htSession(sid))
	closeStream()
	require.Error(t, <-r.blocker.cause)
	getClosed := time.Now()
	closeGet()
	out := r.outcome()
	assert.Equal(t, protocol.ReasonTransportClose, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
	// Without the wake the seal comes at the grace's end, 250 ms after the
	// POST's close, a bound no loaded machine makes it look like it met.
	// (The recorded end is the POST's close: the duration's, not the seal's.)
	assert.Less(t, (<-r.sealed).Sub(getClosed), server.StreamCloseGrace/2, "sealed at the GET's close")
}

// In the 2026-07-28 era, a closed POST is stream_close; the caller's
// notifications/cancelled for it, a POST of its own, makes it
// client_cancel: after the close (go-sdk), or with a principal while the
// request's stream stays open (mcp-remote with a token), whose response
// then ends with no answer.
func TestHTTPStatelessCancel(t *testing.T) {
	call := htSL(1, "tools/call", `{"name":"block","arguments":{}}`, htMeta26)
	hdr := htSLHeaders("tools/call", "block")
	cancelHdr := htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled"}
	t.Run("bare close", func(t *testing.T) {
		r := newCauseRig(t)
		closeStream := r.start(call, hdr)
		r.closedAt = time.Now()
		closeStream()
		require.Error(t, <-r.blocker.cause)
		out := r.outcome()
		assert.Equal(t, protocol.ReasonStreamClose, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
		r.endedAtTheClose(out)
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
	t.Run("notification before the close", func(t *testing.T) {
		r := newCauseRig(t)
		closeStream := r.start(call, hdr)
		r.notify(cancelOne, cancelHdr) // held: nothing shows it is the client's own yet
		closeStream()
		require.Error(t, <-r.blocker.cause)
		out := r.outcome()
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(out.Cause), "cause: %v", out.Cause)
		assert.Contains(t, out.Cause.Error(), "user pressed stop")
	})
	t.Run("notification of the principal while the stream is open", func(t *testing.T) {
		r := newCauseRig(t, streamable.WithPrincipal(func(r *http.Request) string { return r.Header.Get("X-Who") }))
		resp := make(chan htReply, 1)
		who := htH{"X-Who": "alice"}
		for k, v := range hdr {
			who[k] = v
		}
		go func() { resp <- r.do(http.MethodPost, call, who) }()
		<-r.blocker.started
		r.notify(cancelOne, htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled", "X-Who": "alice"})
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

// Without a principal, a request is filed by its client's address, which
// other clients share (another process on the host, another user of the
// same proxy): a notifications/cancelled from that address, while the
// request's stream is open, does not end the request, which is answered;
// the notification is counted (cancel_unproven). Its own client ends it by
// closing the stream (TestHTTPStatelessCancel).
func TestHTTPStatelessCancelFromTheSameAddress(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := htServer(t)
	require.NoError(t, srv.AddTool(server.Tool{Name: "slow"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- struct{}{}
		<-release
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return server.Text("answered"), nil
	}))
	var rejected sync.Map
	e := newHTEnv(t, srv, streamable.WithRejectHook(func(r protocol.RejectReason) {
		n, _ := rejected.LoadOrStore(r, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}))
	resp := make(chan htReply, 1)
	go func() {
		resp <- e.do(http.MethodPost, htSL(1, "tools/call", `{"name":"slow","arguments":{}}`, htMeta26), htSLHeaders("tools/call", "slow"))
	}()
	<-started
	cancelHdr := htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled"}
	for _, reason := range []string{"mallory", "mallory again"} {
		got := e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"`+reason+`"}}`, cancelHdr)
		require.Equal(t, http.StatusAccepted, got.status)
	}
	close(release)
	got := <-resp
	require.Equal(t, http.StatusOK, got.status)
	assert.Contains(t, string(got.body), "answered")
	n, ok := rejected.Load(protocol.RejectCancelUnproven)
	require.True(t, ok, "counted")
	assert.Equal(t, int64(2), n.(*atomic.Int64).Load(), "the second while the first was held, the first once the request was answered")
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
// notifications/cancelled lands on replica b, which relays it; a holds it
// (the request has no principal) until the request's stream closes, and
// the request ends as the client's cancel, with its reason.
func TestSharedStatelessCancel(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		rs := newSHReplicas(t, be, 2)
		a, b := rs.envs[0], rs.envs[1]
		held := make(chan struct{}, 1)
		streamable.OnHeld(a.h, func() { held <- struct{}{} })
		call := htSL(7, "tools/call", `{"name":"block","arguments":{}}`, htMeta26)
		ctx, closeStream := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := a.client.Do(a.request(ctx, http.MethodPost, call, htSLHeaders("tools/call", "block"))); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
		<-rs.blocker.started
		got := b.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"changed my mind"}}`,
			htH{"MCP-Protocol-Version": htV26, "Mcp-Method": "notifications/cancelled"})
		require.Equal(t, http.StatusAccepted, got.status)
		<-held // relayed to a, which holds it
		closeStream()
		require.Error(t, <-rs.blocker.cause)
		out := <-rs.ended
		require.ErrorIs(t, out.Cause, server.ErrClientCancel, "cause: %v", out.Cause)
		assert.Contains(t, out.Cause.Error(), "changed my mind")
		<-done
	})
}

// 80,000 notifications/cancelled that match nothing, from one address,
// make no more relays to the other replicas than that caller's burst and
// rate allow over the time they took; the rest are counted
// (cancel_relay_limit), and every one is accepted.
func TestSharedUnmatchedCancelsBounded(t *testing.T) {
	be := shMemory()
	var limited atomic.Int64
	rs := newSHReplicas(t, be, 2, streamable.WithRejectHook(func(r protocol.RejectReason) {
		if r == protocol.RejectCancelRelayLimit {
			limited.Add(1)
		}
	}))
	const n = 80_000
	start := time.Now()
	for i := range n {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+strconv.Itoa(i)+`}}`))
		req.RemoteAddr = "192.0.2.7:40000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", htV26)
		req.Header.Set("Mcp-Method", "notifications/cancelled")
		w := httptest.NewRecorder()
		rs.envs[1].h.ServeHTTP(w, req)
		require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	}
	elapsed := time.Since(start)
	relayed := be.memory.Relayed(replication.RelayCancel)
	t.Logf("%d unmatched cancels in %v: %d relayed", n, elapsed, relayed)
	assert.LessOrEqual(t, relayed, 20+int(10*elapsed.Seconds())+1, "the caller's burst and rate")
	assert.Positive(t, relayed)
	assert.Equal(t, int64(n-relayed), limited.Load(), "the others counted")
}
