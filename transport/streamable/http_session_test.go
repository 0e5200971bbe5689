package streamable_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// initialize answers with JSON and a session id of visible ASCII carrying at
// least 128 random bits (22 or more base64url characters); every session
// gets its own.
func TestHTTPSessionID(t *testing.T) {
	e := newHTEnv(t, nil)
	visible := regexp.MustCompile(`^[\x21-\x7E]+$`)
	seen := map[string]bool{}
	for range 8 {
		r := e.do(http.MethodPost, htInitBody(`{}`), htH{"MCP-Protocol-Version": htVersion})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		m := htDecode(t, r.body)
		assert.JSONEq(t, `0`, string(m.ID))
		require.Nil(t, m.Error)
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		require.NoError(t, json.Unmarshal(m.Result, &res))
		assert.Equal(t, htVersion, res.ProtocolVersion)

		sid := r.header.Get("Mcp-Session-Id")
		require.Regexp(t, visible, sid)
		require.GreaterOrEqual(t, len(sid), 22)
		raw, err := base64.RawURLEncoding.DecodeString(sid)
		require.NoError(t, err, "session id %q is not base64url", sid)
		assert.GreaterOrEqual(t, len(raw)*8, 128)
		assert.False(t, seen[sid], "session id %q issued twice", sid)
		seen[sid] = true
	}
}

// Notifications and the client's responses are accepted with 202 and an
// empty body.
func TestHTTPNotificationsAndResponsesAccepted(t *testing.T) {
	e := newHTEnv(t, nil)
	sid := e.initialize(`{}`)
	tests := []struct {
		name string
		body string
	}{
		{"initialized again", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"cancel of an unknown request", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/whatever"}`},
		{"result for no request", `{"jsonrpc":"2.0","id":99,"result":{}}`},
		{"error for no request", `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"no"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, tt.body, htSession(sid))
			assert.Equal(t, http.StatusAccepted, r.status)
			assert.Empty(t, r.body)
		})
	}
	_, msgs := e.call(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `{}`, string(msgs[0].Result), "the session keeps serving")
}

// htCountTool reports progress 1..3 of 3, then returns "done".
func htCountTool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	for i := 1; i <= 3; i++ {
		if err := server.ReportProgress(ctx, float64(i), 3, ""); err != nil {
			return nil, err
		}
	}
	return server.Text("done"), nil
}

// A tool that sends progress answers with an SSE stream: the progress
// notifications in order, then the result, then the end of the stream. A
// tool that sends nothing first answers with JSON.
func TestHTTPProgressMakesSSE(t *testing.T) {
	e := newHTEnv(t, nil)
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "count"}, htCountTool))
	sid := e.initialize(`{}`)

	ct, msgs := e.call(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"tok"}}}`)
	require.Equal(t, "text/event-stream", ct)
	require.Len(t, msgs, 4, "%+v", msgs)
	for i, m := range msgs[:3] {
		assert.Equal(t, "notifications/progress", m.Method)
		assert.Nil(t, m.ID)
		assert.JSONEq(t, `{"progressToken":"tok","progress":`+strconv.Itoa(i+1)+`,"total":3}`, string(m.Params))
	}
	assert.JSONEq(t, `3`, string(msgs[3].ID))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"done"}]}`, string(msgs[3].Result))

	ct, msgs = e.call(sid, htCallBody(`"e"`, "echo", `{"text":"plain"}`))
	assert.Equal(t, "application/json", ct)
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `"e"`, string(msgs[0].ID))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"plain"}]}`, string(msgs[0].Result))

	// Without a progress token the same tool sends nothing first: JSON.
	ct, msgs = e.call(sid, htCallBody("4", "count", `{}`))
	assert.Equal(t, "application/json", ct)
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"done"}]}`, string(msgs[0].Result))
}

// A notification unrelated to any request (tools/list_changed after
// AddTool) goes to the session's GET stream, not to an open POST stream.
func TestHTTPUnrelatedNotificationOnGET(t *testing.T) {
	e := newHTEnv(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		if err := server.ReportProgress(ctx, 1, 0, "holding"); err != nil {
			return nil, err
		}
		close(started)
		select {
		case <-release:
			return server.Text("held"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}))
	sid := e.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	getResp := e.send(e.request(ctx, http.MethodGet, "", htSession(sid)))
	get := htStream(t, getResp)
	defer get.close()

	postResp := e.send(e.request(t.Context(), http.MethodPost,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{},"_meta":{"progressToken":7}}}`, htSession(sid)))
	post := htStream(t, postResp)
	defer post.close()
	first := post.nextMsg()
	assert.Equal(t, "notifications/progress", first.Method)
	assert.JSONEq(t, `{"progressToken":7,"progress":1,"message":"holding"}`, string(first.Params))
	<-started

	require.NoError(t, e.srv.AddTool(server.Tool{Name: "late"}, htCountTool))
	changed := get.nextMsg()
	assert.Equal(t, "notifications/tools/list_changed", changed.Method)
	assert.Nil(t, changed.ID)

	close(release)
	rest := post.rest()
	require.Len(t, rest, 1, "only the result follows on the POST stream: %+v", rest)
	assert.JSONEq(t, `1`, string(rest[0].ID))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"held"}]}`, string(rest[0].Result))
}

// A server-to-client request (elicitation/create) travels on the stream of
// the request that made it, and the client's POSTed answer completes the
// call.
func TestHTTPElicitationOnRequestStream(t *testing.T) {
	obs := &htRejectCounter{ended: make(chan struct{})}
	e := newHTEnv(t, htServer(t, server.WithObserver(server.Observer{MessageRejected: obs.MessageRejected, SessionEnded: obs.SessionEnded})))
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		res, err := server.Elicit(ctx, &server.ElicitParams{
			Message:         "Who are you?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		if err != nil {
			return nil, err
		}
		return server.Text(res.Action + ": " + res.Content["name"].(string)), nil
	}))
	sid := e.initialize(`{"elicitation":{}}`)

	resp := e.send(e.request(t.Context(), http.MethodPost, htCallBody("10", "ask", `{}`), htSession(sid)))
	post := htStream(t, resp)
	defer post.close()
	ask := post.nextMsg()
	require.Equal(t, "elicitation/create", ask.Method)
	require.NotNil(t, ask.ID)
	assert.JSONEq(t, `{"message":"Who are you?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`, string(ask.Params))

	answer := `{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`
	r := e.do(http.MethodPost, answer, htSession(sid))
	require.Equal(t, http.StatusAccepted, r.status)
	assert.Empty(t, r.body)

	rest := post.rest()
	require.Len(t, rest, 1, "%+v", rest)
	assert.JSONEq(t, `10`, string(rest[0].ID))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"accept: Ada"}]}`, string(rest[0].Result))

	// The answer was handled exactly once: a second copy would be a response
	// to nothing, rejected before the session ends (the read loop takes
	// messages in order).
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", htSession(sid)).status)
	<-obs.ended
	assert.Zero(t, obs.rejected.Load(), "a message was handled twice")
}

// htRejectCounter counts the messages a session rejected and signals its end.
type htRejectCounter struct {
	rejected atomic.Int64
	ended    chan struct{}
}

func (o *htRejectCounter) MessageRejected(context.Context, *server.Session, protocol.Code, protocol.RejectReason) {
	o.rejected.Add(1)
}

func (o *htRejectCounter) SessionEnded(context.Context, *server.Session, error) { close(o.ended) }

// htHolder is a tool that, once cancelled, reports its cause and then waits
// for release before returning: it shows who waits for handlers.
type htHolder struct {
	started chan struct{}
	cause   chan error
	release chan struct{}
}

func newHTHolder(t *testing.T) *htHolder {
	h := &htHolder{started: make(chan struct{}, 1), cause: make(chan error, 1), release: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

func (h *htHolder) tool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	h.cause <- context.Cause(ctx)
	<-h.release
	return nil, context.Cause(ctx)
}

// htBackground POSTs body on session sid from a goroutine and delivers the
// complete answer.
func (e *htEnv) htBackground(sid, body string) <-chan htReply {
	out := make(chan htReply, 1)
	req := e.request(e.t.Context(), http.MethodPost, body, htSession(sid))
	go func() {
		defer close(out)
		resp, err := e.client.Do(req)
		if err != nil {
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return
		}
		out <- htReply{status: resp.StatusCode, header: resp.Header, body: body}
	}()
	return out
}

// DELETE answers 204 at once while a handler is still running (it does not
// wait for it), cancels the handler with the transport-close cause, answers
// the pending POST, and the session id then answers 404.
func TestHTTPDeleteCancelsHandlers(t *testing.T) {
	e := newHTEnv(t, nil)
	h := newHTHolder(t)
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "hold"}, h.tool))
	sid := e.initialize(`{}`)

	pending := e.htBackground(sid, htCallBody("1", "hold", `{}`))
	<-h.started
	r := e.do(http.MethodDelete, "", htSession(sid))
	require.Equal(t, http.StatusNoContent, r.status)
	assert.Empty(t, r.body)
	cause := <-h.cause // the handler is cancelled and still running
	require.ErrorIs(t, cause, server.ErrTransportClose)
	assert.Equal(t, protocol.ReasonTransportClose, server.ReasonOfCause(cause))

	answer, ok := <-pending
	require.True(t, ok, "the pending POST failed")
	m := htRPCError(t, answer, http.StatusOK, -32000)
	assert.JSONEq(t, `1`, string(m.ID))

	htUnknownSession(t, e.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, htSession(sid)))
	close(h.release)
}

// An idle session expires as if deleted: its handlers are cancelled with
// the transport-close cause and its id answers 404.
func TestHTTPIdleExpiryCancelsHandlers(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithIdleTimeout(250*time.Millisecond))
	h := newHTHolder(t)
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "hold"}, h.tool))
	sid := e.initialize(`{}`)

	pending := e.htBackground(sid, htCallBody("1", "hold", `{}`))
	<-h.started
	cause := <-h.cause // blocks until the session expires
	require.ErrorIs(t, cause, server.ErrTransportClose)

	htUnknownSession(t, e.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, htSession(sid)))
	htUnknownSession(t, e.do(http.MethodGet, "", htSession(sid)))
	answer, ok := <-pending
	require.True(t, ok, "the pending POST failed")
	m := htRPCError(t, answer, http.StatusOK, -32000)
	assert.JSONEq(t, `1`, string(m.ID))
	close(h.release)
}

// With WithMaxSessions(2) a third initialize is refused with 503 and
// Retry-After until a session ends.
func TestHTTPMaxSessions(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithMaxSessions(2))
	first := e.initialize(`{}`)
	e.initialize(`{}`)

	r := e.do(http.MethodPost, htInitBody(`{}`), nil)
	m := htRPCError(t, r, http.StatusServiceUnavailable, -32000)
	assert.JSONEq(t, `0`, string(m.ID))
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	assert.Empty(t, r.header.Get("Mcp-Session-Id"))

	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", htSession(first)).status)
	e.initialize(`{}`)
}

// With WithMaxRequestStreamsPerSession(1) a second concurrent request on a session is
// refused with 429 and Retry-After; another session is not affected.
func TestHTTPMaxInFlight(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithMaxRequestStreamsPerSession(1))
	b := newHTBlocker()
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "block"}, b.tool))
	sid := e.initialize(`{}`)
	other := e.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := e.client.Do(e.request(ctx, http.MethodPost, htCallBody("1", "block", `{}`), htSession(sid)))
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-b.started

	r := e.do(http.MethodPost, htCallBody("2", "echo", `{"text":"x"}`), htSession(sid))
	m := htRPCError(t, r, http.StatusTooManyRequests, -32000)
	assert.JSONEq(t, `2`, string(m.ID))
	assert.NotEmpty(t, r.header.Get("Retry-After"))

	_, msgs := e.call(other, htCallBody("2", "echo", `{"text":"x"}`))
	require.Len(t, msgs, 1)
	assert.Nil(t, msgs[0].Error)

	cancel()
	<-done
	require.ErrorIs(t, <-b.cause, server.ErrStreamClose)
}

// With WithPrincipal a session answers only its creator's principal: for
// anyone else it does not exist (404).
func TestHTTPPrincipalBinding(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithPrincipal(func(r *http.Request) string { return r.Header.Get("X-User") }))
	r := e.do(http.MethodPost, htInitBody(`{}`), htH{"X-User": "alice"})
	require.Equal(t, http.StatusOK, r.status)
	sid := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	as := func(user string) htH {
		h := htSession(sid)
		h["X-User"] = user
		return h
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	tests := []struct {
		name   string
		method string
		body   string
		user   string
	}{
		{"POST as bob", http.MethodPost, ping, "bob"},
		{"POST as nobody", http.MethodPost, ping, ""},
		{"notification as bob", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "bob"},
		{"GET as bob", http.MethodGet, "", "bob"},
		{"DELETE as bob", http.MethodDelete, "", "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			htUnknownSession(t, e.do(tt.method, tt.body, as(tt.user)))
		})
	}

	require.Equal(t, http.StatusAccepted, e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, as("alice")).status)
	a := e.do(http.MethodPost, ping, as("alice"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	assert.JSONEq(t, `{}`, string(htDecode(t, a.body).Result))
	assert.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", as("alice")).status)
}

// A POST whose client goes away cancels its handler with the transport-close
// cause (the answer can no longer be delivered); the session lives on.
func TestHTTPPostDisconnectCancelsHandler(t *testing.T) {
	e := newHTEnv(t, nil)
	b := newHTBlocker()
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "block"}, b.tool))
	sid := e.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	failed := make(chan error, 1)
	go func() {
		resp, err := e.client.Do(e.request(ctx, http.MethodPost, htCallBody("1", "block", `{}`), htSession(sid)))
		if err == nil {
			_ = resp.Body.Close()
		}
		failed <- err
	}()
	<-b.started
	cancel()
	require.ErrorIs(t, <-failed, context.Canceled)
	cause := <-b.cause
	require.ErrorIs(t, cause, server.ErrStreamClose)
	require.NotErrorIs(t, cause, server.ErrShutdown)

	_, msgs := e.call(sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `{}`, string(msgs[0].Result), "the session serves on")
}

// WithResponseMode(ResponseSSE) answers even a plain request with an SSE
// stream; WithResponseMode(ResponseJSON) answers with JSON and sends the
// request's progress on the session's GET stream instead.
func TestHTTPResponseModes(t *testing.T) {
	t.Run("SSE", func(t *testing.T) {
		e := newHTEnv(t, nil, streamable.WithResponseMode(streamable.ResponseSSE))
		sid := e.initialize(`{}`)
		ct, msgs := e.call(sid, htCallBody("1", "echo", `{"text":"s"}`))
		assert.Equal(t, "text/event-stream", ct)
		require.Len(t, msgs, 1)
		assert.JSONEq(t, `1`, string(msgs[0].ID))
		assert.JSONEq(t, `{"content":[{"type":"text","text":"s"}]}`, string(msgs[0].Result))
	})
	t.Run("JSON", func(t *testing.T) {
		e := newHTEnv(t, nil, streamable.WithResponseMode(streamable.ResponseJSON))
		require.NoError(t, e.srv.AddTool(server.Tool{Name: "count"}, htCountTool))
		sid := e.initialize(`{}`)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		getResp := e.send(e.request(ctx, http.MethodGet, "", htSession(sid)))
		get := htStream(t, getResp)
		defer get.close()

		ct, msgs := e.call(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"j"}}}`)
		assert.Equal(t, "application/json", ct)
		require.Len(t, msgs, 1)
		assert.JSONEq(t, `{"content":[{"type":"text","text":"done"}]}`, string(msgs[0].Result))
		for i := 1; i <= 3; i++ {
			m := get.nextMsg()
			assert.Equal(t, "notifications/progress", m.Method)
			assert.JSONEq(t, `{"progressToken":"j","progress":`+strconv.Itoa(i)+`,"total":3}`, string(m.Params))
		}
	})
}

// WithKeepAlive sends SSE comments on an idle GET stream.
func TestHTTPKeepAlive(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithKeepAlive(5*time.Millisecond))
	sid := e.initialize(`{}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := e.send(e.request(ctx, http.MethodGet, "", htSession(sid)))
	defer func() { _ = resp.Body.Close() }()
	get := htStream(t, resp)
	for {
		line, err := get.br.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, ":") {
			assert.Equal(t, ": keep-alive\n", line)
			return
		}
	}
}
