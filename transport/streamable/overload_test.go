package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/overload"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// switchShedder sheds every request while on, and counts what it is asked.
type switchShedder struct {
	on    atomic.Bool
	asked atomic.Int64
}

func (s *switchShedder) Shed(context.Context) bool { s.asked.Add(1); return s.on.Load() }

// While the process is overloaded, a request is answered at once with
// 503, Retry-After and the busy error, counted as overloaded, and never
// reaches a handler; initialize, ping, notifications/cancelled and the
// answer to the server's own elicitation still get through.
func TestShedRequestsNeverReachAHandler(t *testing.T) {
	var shed switchShedder
	var rejects tally[protocol.RejectReason]
	e := newHTEnv(t, htServer(t, server.WithShedder(&shed)), streamable.WithRejectHook(rejects.add))
	var calls atomic.Int64
	block := newHTBlocker()
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		return block.tool(ctx, req)
	}))
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "count"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		return server.Text("counted"), nil
	}))
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		calls.Add(1)
		res, err := server.Elicit(ctx, &server.ElicitParams{
			Message:         "Who are you?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		if err != nil {
			return nil, err
		}
		return server.Text(res.Action), nil
	}))
	sid := e.initialize(`{"elicitation":{}}`)

	// Handlers in flight, blocked: two calls, and one waiting for the
	// client's answer to its elicitation.
	held := []<-chan htReply{e.htBackground(sid, htCallBody("1", "block", `{}`)), e.htBackground(sid, htCallBody("2", "block", `{}`))}
	<-block.started
	<-block.started
	resp := e.send(e.request(t.Context(), http.MethodPost, htCallBody("3", "ask", `{}`), htSession(sid)))
	asking := htStream(t, resp)
	defer asking.close()
	ask := asking.nextMsg()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Equal(t, int64(3), calls.Load())
	// The server's Shedder is asked once per request, by the Endpoint:
	// the session does not ask again about a request the Endpoint admitted.
	require.Equal(t, int64(3), shed.asked.Load(), "the Shedder was asked twice about a request")

	shed.on.Store(true)
	for i := range 5 {
		id := strconv.Itoa(10 + i)
		r := e.do(http.MethodPost, htCallBody(id, "count", `{}`), htSession(sid))
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
		wait := r.header.Get("Retry-After")
		assert.Contains(t, []string{"1", "2", "3"}, wait, "1 to overload.MaxRetryAfter seconds")
		msgs := r.messages(t)
		require.Len(t, msgs, 1)
		assert.JSONEq(t, id, string(msgs[0].ID))
		require.NotNil(t, msgs[0].Error)
		assert.Equal(t, int64(protocol.CodeServerBusy), msgs[0].Error.Code)
		assert.Equal(t, protocol.RejectOverloaded.Message(), msgs[0].Error.Message)
		assert.JSONEq(t, `{"retryAfterSeconds":`+wait+`}`, string(msgs[0].Error.Data), "the header and the error say the same")
	}
	assert.Equal(t, 5, rejects.get(protocol.RejectOverloaded))
	assert.Equal(t, int64(3), calls.Load(), "a shed request reached a handler")
	asked := shed.asked.Load()

	// Never shed: a new session, a ping, a cancellation, an answer.
	e.initialize(`{}`)
	r := e.do(http.MethodPost, `{"jsonrpc":"2.0","id":20,"method":"ping"}`, htSession(sid))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, htSession(sid))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.ErrorIs(t, <-block.cause, server.ErrClientCancel, "the cancellation reached the handler")
	answer := `{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`
	r = e.do(http.MethodPost, answer, htSession(sid))
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	rest := asking.rest()
	require.Len(t, rest, 1)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"accept"}]}`, string(rest[0].Result))
	assert.Equal(t, asked, shed.asked.Load(), "the Shedder was asked about what is never shed")
	assert.Equal(t, 5, rejects.get(protocol.RejectOverloaded))

	// Calm again: calls reach the handler.
	shed.on.Store(false)
	_, msgs := e.call(sid, `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	require.Len(t, msgs, 1)
	assert.Nil(t, msgs[0].Error)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", htSession(sid)).status)
	for _, h := range held {
		<-h
	}
}

// Many handlers in flight that wait (as slow tools do) are not shed while
// the scheduler is not saturated: the Endpoint's admission has no limit on
// concurrency of its own, only the Shedder's signal.
func TestShedSparesWaitingHandlers(t *testing.T) {
	const n = 300 // more than 4×GOMAXPROCS, and than the per-session limit
	calm := overload.New(overload.Config{Target: time.Millisecond, Sample: func() time.Duration { return time.Millisecond }})
	var rejects tally[protocol.RejectReason]
	e := newHTEnv(t, htServer(t, server.WithShedder(calm)), streamable.WithRejectHook(rejects.add))
	started, release := make(chan struct{}, n), make(chan struct{})
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "wait"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- struct{}{}
		<-release
		return server.Text("done"), nil
	}))
	sids := []string{e.initialize(`{}`), e.initialize(`{}`)}
	replies := make(chan htReply, n)
	for i := range n {
		r := e.htBackground(sids[i%2], htCallBody(strconv.Itoa(i+1), "wait", `{}`))
		go func() { replies <- <-r }()
	}
	for range n {
		select {
		case <-started:
		case reply := <-replies: // refused: no handler will release it
			close(release)
			require.Failf(t, "answered before its handler was released", "%d %s", reply.status, reply.body)
		}
	}
	close(release)
	for range n {
		reply := <-replies
		require.Equal(t, http.StatusOK, reply.status, "%s", reply.body)
	}
	assert.Zero(t, rejects.get(protocol.RejectOverloaded))
}

// The quotas come first: a caller over its in-flight quota gets the
// quota's 429 even while the process sheds, and the Shedder is asked only
// about what the quotas admitted.
func TestShedAfterTheQuotas(t *testing.T) {
	var shed switchShedder
	var rejects tally[protocol.RejectReason]
	e := newHTEnv(t, htServer(t, server.WithShedder(&shed)), streamable.WithRejectHook(rejects.add),
		streamable.WithQuotas(streamable.Quotas{InFlight: 1}))
	block := newHTBlocker()
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "block"}, block.tool))
	sid := e.initialize(`{}`)
	held := e.htBackground(sid, htCallBody("1", "block", `{}`))
	<-block.started

	shed.on.Store(true)
	asked := shed.asked.Load()
	r := e.do(http.MethodPost, htCallBody("2", "block", `{}`), htSession(sid))
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, asked, shed.asked.Load(), "the Shedder was asked about a request the quota refused")
	assert.Equal(t, 1, rejects.get(protocol.RejectInFlightLimit))
	assert.Zero(t, rejects.get(protocol.RejectOverloaded))

	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", htSession(sid)).status)
	<-held
}

// While the process sheds, the Endpoint tells its Limiter each
// request's caller (the quotas'): a caller sending nine requests in ten
// is refused, the other never is.
func TestShedSparesTheLightCaller(t *testing.T) {
	var now atomic.Int64
	var rnd atomic.Uint32
	limiter := overload.New(overload.Config{
		Target:     time.Millisecond,
		MinWaiting: 1e-9,
		Now:        func() time.Duration { return time.Duration(now.Load()) },
		Queued:     func(context.Context) (time.Duration, bool) { return time.Second, true },
		Sample:     func() time.Duration { return 0 },
		CPU:        func() time.Duration { return -1 },
		Rand:       func() uint32 { return rnd.Add(1<<32/64+1) - 1 },
	})
	e := newHTEnv(t, htServer(t, server.WithShedder(limiter)),
		streamable.WithPrincipal(func(r *http.Request) string { return r.Header.Get("X-Caller") }))
	heavy := htSession(e.initialize(`{}`)) // the caller 127.0.0.1
	init := e.do(http.MethodPost, htInitBody(`{}`), htH{"X-Caller": "light"})
	require.Equal(t, http.StatusOK, init.status, "%s", init.body)
	light := htSession(init.header.Get("Mcp-Session-Id"))
	light["X-Caller"] = "light"
	require.Equal(t, http.StatusAccepted, e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, light).status)

	id := 1000
	call := func(sess htH) int {
		id++
		return e.do(http.MethodPost, htCallBody(strconv.Itoa(id), "echo", `{"text":"x"}`), sess).status
	}
	for range 4 * overload.SamplesPerInterval {
		now.Add(int64(overload.DefaultInterval / overload.SamplesPerInterval))
		if id%10 == 0 {
			call(light)
		} else {
			call(heavy)
		}
	}
	require.Less(t, limiter.Share(), 1.0, "overloaded")
	refused := map[string]int{}
	for range 64 {
		if call(light) == http.StatusServiceUnavailable {
			refused["light"]++
		}
		if call(heavy) == http.StatusServiceUnavailable {
			refused["heavy"]++
		}
	}
	assert.Zero(t, refused["light"], "the light caller")
	assert.Positive(t, refused["heavy"], "the heavy caller")
}
