package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

const rsVersion = "2025-11-25"

// rsEnv serves a server.Server through an Endpoint on a loopback httptest
// server that reports when its connections close.
type rsEnv struct {
	t   *testing.T
	srv *server.Server
	h   *streamable.Endpoint
	ts  *httptest.Server

	mu     sync.Mutex
	closed map[string]chan struct{} // by the client's address
}

func newRSEnv(t *testing.T, srv *server.Server, opts ...streamable.Option) *rsEnv {
	t.Helper()
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
	e := &rsEnv{t: t, srv: srv, h: streamable.New(srv, opts...), closed: map[string]chan struct{}{}}
	e.ts = httptest.NewUnstartedServer(e.h)
	e.ts.Config.ConnState = func(c net.Conn, state http.ConnState) {
		if state == http.StateClosed || state == http.StateHijacked {
			close(e.closedCh(c.RemoteAddr().String()))
		}
	}
	e.ts.Start()
	t.Cleanup(func() {
		_ = e.h.Close()
		e.ts.CloseClientConnections()
		e.ts.Close()
		_ = srv.Close()
	})
	return e
}

// closedCh is closed when the server closes the connection from addr.
func (e *rsEnv) closedCh(addr string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.closed[addr]
	if ch == nil {
		ch = make(chan struct{})
		e.closed[addr] = ch
	}
	return ch
}

// rsResp is an HTTP response, with the client address of its connection.
type rsResp struct {
	*http.Response
	addr string
}

// do sends a request; the caller closes the body.
func (e *rsEnv) do(ctx context.Context, method, body string, hdr map[string]string) rsResp {
	e.t.Helper()
	var addr string
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { addr = info.Conn.LocalAddr().String() },
	})
	r, err := http.NewRequestWithContext(ctx, method, e.ts.URL, strings.NewReader(body))
	require.NoError(e.t, err)
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		r.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := e.ts.Client().Do(r)
	require.NoError(e.t, err)
	return rsResp{Response: resp, addr: addr}
}

// initialize opens a session and returns its id.
func (e *rsEnv) initialize() string {
	e.t.Helper()
	resp := e.do(e.t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+rsVersion+
		`","capabilities":{},"clientInfo":{"name":"rs","version":"1"}}}`, nil)
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	_ = resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode, "initialize: %s", body)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(e.t, sid)
	n := e.do(e.t.Context(), http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, rsSession(sid))
	_ = n.Body.Close()
	require.Equal(e.t, http.StatusAccepted, n.StatusCode)
	return sid
}

// resume sends GET with Last-Event-ID.
func (e *rsEnv) resume(ctx context.Context, sid, lastID string) rsResp {
	e.t.Helper()
	hdr := rsSession(sid)
	hdr["Last-Event-ID"] = lastID
	return e.do(ctx, http.MethodGet, "", hdr)
}

// waitClosed waits until the server closed the connection of resp, which
// happens only once the handler of the request on it returned.
func (e *rsEnv) waitClosed(resp rsResp) {
	e.t.Helper()
	require.NotEmpty(e.t, resp.addr)
	<-e.closedCh(resp.addr)
}

func rsSession(sid string) map[string]string {
	return map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": rsVersion}
}

// rsCall is a tools/call of tool with a progress token (tool's name).
func rsCall(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"progressToken":"` + tool + `"}}}`
}

// rsEvent is one SSE event as the client parsed it.
type rsEvent struct {
	id    string
	hasID bool
	retry string
	data  string
}

// rsSSE reads the events of an SSE response.
type rsSSE struct {
	t  testing.TB
	br *bufio.Reader
}

func rsStream(t testing.TB, resp rsResp) *rsSSE {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &rsSSE{t: t, br: bufio.NewReader(resp.Body)}
}

// next returns the next event (comments are skipped), or false at the end
// of the stream.
func (s *rsSSE) next() (rsEvent, bool) {
	s.t.Helper()
	var ev rsEvent
	seen := false
	for {
		line, err := s.br.ReadBytes('\n')
		if err != nil {
			require.Empty(s.t, bytes.TrimSpace(line), "truncated event")
			require.False(s.t, seen, "truncated event")
			return rsEvent{}, false
		}
		text := strings.TrimRight(string(line), "\r\n")
		field, value, _ := strings.Cut(text, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case text == "":
			if seen {
				return ev, true
			}
		case field == "id":
			ev.id, ev.hasID, seen = value, true, true
		case field == "retry":
			ev.retry, seen = value, true
		case field == "data":
			ev.data, seen = ev.data+value, true
		}
	}
}

// event returns the next event; it fails at the end of the stream.
func (s *rsSSE) event() rsEvent {
	s.t.Helper()
	ev, ok := s.next()
	require.True(s.t, ok, "the stream ended")
	return ev
}

// end asserts that the stream ends without another event.
func (s *rsSSE) end() {
	s.t.Helper()
	ev, ok := s.next()
	require.False(s.t, ok, "one more event: %+v", ev)
}

// rsMsg is the part of a JSON-RPC message the tests look at.
type rsMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Progress float64 `json:"progress"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// summary describes the message of an event: "progress N", "result <id>
// <result>" or the method.
func summary(t testing.TB, ev rsEvent) string {
	t.Helper()
	var m rsMsg
	require.NoError(t, json.Unmarshal([]byte(ev.data), &m), "event data %q", ev.data)
	switch {
	case m.Method == "notifications/progress":
		b, _ := json.Marshal(m.Params.Progress)
		return "progress " + string(b)
	case m.Result != nil:
		return "result " + string(m.ID) + " " + string(m.Result)
	default:
		return m.Method
	}
}

const rsDone = `{"content":[{"type":"text","text":"done"}]}`

// rsGates is a tool "steps" that reports progress 1, waits for release1,
// reports progress 2, waits for release2, reports progress 3 and answers
// "done". ended receives its context's cause when it ends (nil unless it
// was cancelled).
type rsGates struct {
	started  chan struct{}
	release1 chan struct{}
	release2 chan struct{}
	ended    chan error
}

func newRSGates() *rsGates {
	return &rsGates{started: make(chan struct{}, 1), release1: make(chan struct{}), release2: make(chan struct{}), ended: make(chan error, 1)}
}

func (g *rsGates) tool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	g.started <- struct{}{}
	wait := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-ctx.Done():
			g.ended <- context.Cause(ctx)
			return false
		}
	}
	_ = server.ReportProgress(ctx, 1, 3, "")
	if !wait(g.release1) {
		return nil, context.Cause(ctx)
	}
	_ = server.ReportProgress(ctx, 2, 3, "")
	if !wait(g.release2) {
		return nil, context.Cause(ctx)
	}
	_ = server.ReportProgress(ctx, 3, 3, "")
	g.ended <- context.Cause(ctx)
	return server.Text("done"), nil
}

// rsServer is a server with the tool "steps" of g.
func rsServer(t testing.TB, g *rsGates) *server.Server {
	t.Helper()
	srv := server.New(server.WithProgressInterval(0), server.WithListChangedDelay(0))
	if g != nil {
		require.NoError(t, srv.AddTool(server.Tool{Name: "steps", Description: "steps"}, g.tool))
	}
	return srv
}

// With an event store, a client that leaves a POST stream after its first
// events does not cancel the request: a GET with the id of the last event
// it received replays exactly what it missed, carries the stream on live
// until the response, and ends.
func TestResumeAfterClientDisconnect(t *testing.T) {
	g := newRSGates()
	store := streamable.NewMemoryEventStore(0, 0)
	e := newRSEnv(t, rsServer(t, g), streamable.WithEventStore(store), streamable.WithRetryInterval(1500*time.Millisecond))
	sid := e.initialize()

	ctx, leave := context.WithCancel(t.Context())
	post := e.do(ctx, http.MethodPost, rsCall("7", "steps"), rsSession(sid))
	sse := rsStream(t, post)
	priming := sse.event()
	assert.True(t, priming.hasID)
	assert.NotEmpty(t, priming.id)
	assert.Equal(t, "1500", priming.retry)
	assert.Empty(t, priming.data)
	first := sse.event()
	require.True(t, first.hasID)
	assert.Equal(t, "progress 1", summary(t, first))

	// The client leaves; the handler of its POST returns.
	leave()
	_ = post.Body.Close()
	e.waitClosed(post)

	// The tool goes on: progress 2 is stored for a resumption.
	close(g.release1)

	get := e.resume(t.Context(), sid, first.id)
	defer func() { _ = get.Body.Close() }()
	resumed := rsStream(t, get)
	second := resumed.event()
	require.True(t, second.hasID)
	assert.Equal(t, "progress 2", summary(t, second))

	// The rest comes live on the GET, which ends after the response.
	close(g.release2)
	third := resumed.event()
	result := resumed.event()
	assert.Equal(t, "progress 3", summary(t, third))
	assert.Equal(t, "result 7 "+rsDone, summary(t, result))
	resumed.end()
	require.NoError(t, <-g.ended, "the tool was not cancelled")

	ids := map[string]bool{}
	for _, ev := range []rsEvent{priming, first, second, third, result} {
		assert.False(t, ids[ev.id], "duplicate id %q", ev.id)
		ids[ev.id] = true
		assert.Regexp(t, `^[\x21-\x7E]+$`, ev.id)
	}

	// The stream is over; resuming it from its priming event replays all
	// of it and ends.
	again := e.resume(t.Context(), sid, priming.id)
	defer func() { _ = again.Body.Close() }()
	all := rsStream(t, again)
	var got []string
	for {
		ev, ok := all.next()
		if !ok {
			break
		}
		got = append(got, ev.id+" "+summary(t, ev))
	}
	assert.Equal(t, []string{
		first.id + " progress 1",
		second.id + " progress 2",
		third.id + " progress 3",
		result.id + " result 7 " + rsDone,
	}, got)
}

// The client reads only the priming event, leaves, and resumes after the
// tool answered: everything is replayed.
func TestResumeReplaysAfterPriming(t *testing.T) {
	g := newRSGates()
	e := newRSEnv(t, rsServer(t, g), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)),
		streamable.WithResponseMode(streamable.ResponseSSE))
	sid := e.initialize()

	ctx, leave := context.WithCancel(t.Context())
	post := e.do(ctx, http.MethodPost, rsCall(`"call-1"`, "steps"), rsSession(sid))
	priming := rsStream(t, post).event()
	require.True(t, priming.hasID)
	assert.Equal(t, "1000", priming.retry, "the default retry interval")
	assert.Empty(t, priming.data)
	<-g.started
	leave()
	_ = post.Body.Close()
	e.waitClosed(post)
	close(g.release1)
	close(g.release2)
	require.NoError(t, <-g.ended)

	get := e.resume(t.Context(), sid, priming.id)
	defer func() { _ = get.Body.Close() }()
	sse := rsStream(t, get)
	var got []string
	for {
		ev, ok := sse.next()
		if !ok {
			break
		}
		require.True(t, ev.hasID)
		got = append(got, summary(t, ev))
	}
	assert.Equal(t, []string{"progress 1", "progress 2", "progress 3", `result "call-1" ` + rsDone}, got)
}

// Without an event store, the same disconnect cancels the handler with the
// transport-close cause, and the events carry no ids.
func TestNoStoreDisconnectCancels(t *testing.T) {
	g := newRSGates()
	e := newRSEnv(t, rsServer(t, g))
	sid := e.initialize()

	ctx, leave := context.WithCancel(t.Context())
	post := e.do(ctx, http.MethodPost, rsCall("7", "steps"), rsSession(sid))
	first := rsStream(t, post).event()
	assert.False(t, first.hasID, "no ids without a store")
	assert.Empty(t, first.retry)
	assert.Equal(t, "progress 1", summary(t, first))
	leave()
	_ = post.Body.Close()

	cause := <-g.ended
	require.ErrorIs(t, cause, server.ErrStreamClose)
	require.ErrorIs(t, cause, transport.ErrStreamGone)

	// A GET with a Last-Event-ID is a plain GET stream then.
	get := e.resume(t.Context(), sid, "1_1")
	assert.Equal(t, http.StatusOK, get.StatusCode)
	assert.Equal(t, "text/event-stream", get.Header.Get("Content-Type"))
	_ = get.Body.Close()
}

// With a store, a client that leaves before any event (the answer would
// have been JSON) has no id to resume with: the handler is cancelled as
// without a store.
func TestResumeUnprimedDisconnectCancels(t *testing.T) {
	srv := rsServer(t, nil)
	started, ended := make(chan struct{}), make(chan error, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "block", Description: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}))
	e := newRSEnv(t, srv, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()

	ctx, leave := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block"}}`))
		if !assert.NoError(t, err) {
			return
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range rsSession(sid) {
			r.Header.Set(k, v)
		}
		resp, err := e.ts.Client().Do(r)
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-started
	leave()
	<-done
	require.ErrorIs(t, <-ended, server.ErrStreamClose)
}

// A resumption takes the stream over from the POST still carrying it: the
// POST ends and the GET carries the stream on.
func TestResumeTakesOverLiveStream(t *testing.T) {
	g := newRSGates()
	e := newRSEnv(t, rsServer(t, g), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()

	post := e.do(t.Context(), http.MethodPost, rsCall("3", "steps"), rsSession(sid))
	defer func() { _ = post.Body.Close() }()
	sse := rsStream(t, post)
	priming := sse.event()
	require.True(t, priming.hasID)
	assert.Equal(t, "progress 1", summary(t, sse.event()))

	get := e.resume(t.Context(), sid, priming.id)
	defer func() { _ = get.Body.Close() }()
	resumed := rsStream(t, get)
	assert.Equal(t, "progress 1", summary(t, resumed.event()), "replayed")
	sse.end() // the POST was taken over

	close(g.release1)
	close(g.release2)
	assert.Equal(t, "progress 2", summary(t, resumed.event()))
	assert.Equal(t, "progress 3", summary(t, resumed.event()))
	assert.Equal(t, "result 3 "+rsDone, summary(t, resumed.event()))
	resumed.end()
	require.NoError(t, <-g.ended)
}

// CloseSSEStream ends the POST after the priming event, before the result;
// the handler goes on and the client gets the result on a resumption.
func TestCloseSSEStreamPolling(t *testing.T) {
	srv := rsServer(t, nil)
	release, closeErr := make(chan struct{}), make(chan error, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "test_reconnection", Description: "reconnection"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		closeErr <- streamable.CloseSSEStream(ctx, req.Request.ID)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return server.Text("reconnected"), nil
	}))
	e := newRSEnv(t, srv, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()

	post := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}`, rsSession(sid))
	defer func() { _ = post.Body.Close() }()
	sse := rsStream(t, post)
	priming := sse.event()
	require.True(t, priming.hasID)
	assert.Equal(t, "1000", priming.retry)
	assert.Empty(t, priming.data)
	sse.end() // closed by the server before the result
	require.NoError(t, <-closeErr)

	get := e.resume(t.Context(), sid, priming.id)
	defer func() { _ = get.Body.Close() }()
	resumed := rsStream(t, get)
	close(release)
	result := resumed.event()
	assert.True(t, result.hasID)
	assert.Equal(t, `result 1 {"content":[{"type":"text","text":"reconnected"}]}`, summary(t, result))
	resumed.end()
}

func TestCloseSSEStreamErrors(t *testing.T) {
	srv := rsServer(t, nil)
	errs := make(chan error, 2)
	require.NoError(t, srv.AddTool(server.Tool{Name: "close", Description: "close"}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		errs <- streamable.CloseSSEStream(ctx, req.Request.ID)
		errs <- streamable.CloseSSEStream(ctx, transport.Int64ID(999))
		return server.Text("ok"), nil
	}))

	t.Run("no store", func(t *testing.T) {
		e := newRSEnv(t, srv)
		sid := e.initialize()
		resp := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"close"}}`, rsSession(sid))
		_ = resp.Body.Close()
		require.ErrorContains(t, <-errs, "no event store")
		require.ErrorContains(t, <-errs, "no event store")
	})
	t.Run("not a session context", func(t *testing.T) {
		require.ErrorContains(t, streamable.CloseSSEStream(t.Context(), transport.Int64ID(1)), "not one of a Streamable HTTP session")
	})
}

func TestCloseSSEStreamUnknownRequest(t *testing.T) {
	srv := rsServer(t, nil)
	errs := make(chan error, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "close", Description: "close"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		errs <- streamable.CloseSSEStream(ctx, transport.Int64ID(999))
		return server.Text("ok"), nil
	}))
	e := newRSEnv(t, srv, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()
	resp := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"close"}}`, rsSession(sid))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`, string(body))
	require.ErrorIs(t, <-errs, transport.ErrStreamGone)
}

// An id the store does not know in the session is answered 400, the
// session living on; another session's id is unknown too.
func TestResumeUnknownEventID(t *testing.T) {
	g := newRSGates()
	e := newRSEnv(t, rsServer(t, g), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)),
		streamable.WithResponseMode(streamable.ResponseSSE))
	sid := e.initialize()
	other := e.initialize()

	// A stream of the other session.
	post := e.do(t.Context(), http.MethodPost, rsCall("1", "steps"), rsSession(other))
	defer func() { _ = post.Body.Close() }()
	foreign := rsStream(t, post).event()
	require.True(t, foreign.hasID)

	tests := []struct {
		name string
		id   string
	}{
		{name: "garbage", id: "garbage"},
		{name: "never issued", id: "42_42"},
		{name: "another session's event", id: foreign.id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.resume(t.Context(), sid, tt.id)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var m struct {
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &m), "%s", body)
			assert.Equal(t, int64(-32600), m.Error.Code)
		})
	}
	// The session still serves.
	resp := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, rsSession(sid))
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	close(g.release1)
	close(g.release2)
	require.NoError(t, <-g.ended)
}

// Two streams of one session: resuming one replays only its events.
func TestResumeReplaysOnlyItsStream(t *testing.T) {
	srv := rsServer(t, nil)
	gates := map[string]*rsGates{"a": newRSGates(), "b": newRSGates()}
	for name, g := range gates {
		require.NoError(t, srv.AddTool(server.Tool{Name: name, Description: name}, g.tool))
	}
	e := newRSEnv(t, srv, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()

	firsts := map[string]rsEvent{}
	for id, name := range map[string]string{"1": "a", "2": "b"} {
		ctx, leave := context.WithCancel(t.Context())
		post := e.do(ctx, http.MethodPost, rsCall(id, name), rsSession(sid))
		sse := rsStream(t, post)
		require.True(t, sse.event().hasID)
		firsts[name] = sse.event()
		leave()
		_ = post.Body.Close()
		e.waitClosed(post)
	}
	for _, g := range gates {
		close(g.release1)
		close(g.release2)
		require.NoError(t, <-g.ended)
	}

	for name, want := range map[string]string{"a": "result 1 " + rsDone, "b": "result 2 " + rsDone} {
		get := e.resume(t.Context(), sid, firsts[name].id)
		sse := rsStream(t, get)
		var got []string
		for {
			ev, ok := sse.next()
			if !ok {
				break
			}
			got = append(got, summary(t, ev))
		}
		_ = get.Body.Close()
		assert.Equal(t, []string{"progress 2", "progress 3", want}, got, "stream %s", name)
	}
}

// The standalone GET stream has ids too: a resumption replays the
// notifications sent while the client was away and carries the stream on.
func TestResumeStandaloneStream(t *testing.T) {
	srv := rsServer(t, nil)
	e := newRSEnv(t, srv, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()
	// A ping answered means notifications/initialized was handled: the
	// session now gets list changes.
	ping := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, rsSession(sid))
	_ = ping.Body.Close()
	addTool := func(name string) {
		require.NoError(t, srv.AddTool(server.Tool{Name: name, Description: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		}))
	}

	ctx, leave := context.WithCancel(t.Context())
	get := e.do(ctx, http.MethodGet, "", rsSession(sid))
	sse := rsStream(t, get)
	priming := sse.event()
	require.True(t, priming.hasID)
	assert.Equal(t, "1000", priming.retry)
	assert.Empty(t, priming.data)
	addTool("one")
	first := sse.event()
	require.True(t, first.hasID)
	assert.Equal(t, "notifications/tools/list_changed", summary(t, first))
	leave()
	_ = get.Body.Close()
	e.waitClosed(get)

	addTool("two") // stored while the client is away

	again := e.resume(t.Context(), sid, first.id)
	defer func() { _ = again.Body.Close() }()
	resumed := rsStream(t, again)
	missed := resumed.event()
	require.True(t, missed.hasID)
	assert.Equal(t, "notifications/tools/list_changed", summary(t, missed))
	addTool("three") // live
	live := resumed.event()
	require.True(t, live.hasID)
	assert.Equal(t, "notifications/tools/list_changed", summary(t, live))
	assert.NotEqual(t, missed.id, live.id)

	// The resumed standalone stream is open: a second plain GET conflicts.
	second := e.do(t.Context(), http.MethodGet, "", rsSession(sid))
	_ = second.Body.Close()
	assert.Equal(t, http.StatusConflict, second.StatusCode)
}

// A client that cancels a request whose stream it left gives the stream
// up: a resumption replays what was stored and ends at once.
func TestResumeCancelledRequest(t *testing.T) {
	g := newRSGates()
	e := newRSEnv(t, rsServer(t, g), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	sid := e.initialize()

	ctx, leave := context.WithCancel(t.Context())
	post := e.do(ctx, http.MethodPost, rsCall("9", "steps"), rsSession(sid))
	sse := rsStream(t, post)
	priming := sse.event()
	require.True(t, priming.hasID)
	leave()
	_ = post.Body.Close()
	e.waitClosed(post)

	n := e.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, rsSession(sid))
	_ = n.Body.Close()
	require.Equal(t, http.StatusAccepted, n.StatusCode)
	require.ErrorIs(t, <-g.ended, server.ErrClientCancel)

	get := e.resume(t.Context(), sid, priming.id)
	defer func() { _ = get.Body.Close() }()
	resumed := rsStream(t, get)
	assert.Equal(t, "progress 1", summary(t, resumed.event()))
	resumed.end()
}

// The session's events are forgotten when it ends.
func TestResumeSessionEndForgetsEvents(t *testing.T) {
	store := streamable.NewMemoryEventStore(0, 0)
	srv := rsServer(t, nil)
	require.NoError(t, srv.AddTool(server.Tool{Name: "talk", Description: "talk"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		_ = server.ReportProgress(ctx, 1, 1, "")
		return server.Text("done"), nil
	}))
	e := newRSEnv(t, srv, streamable.WithEventStore(store))
	sid := e.initialize()

	post := e.do(t.Context(), http.MethodPost, rsCall("1", "talk"), rsSession(sid))
	sse := rsStream(t, post)
	var got []string
	for {
		ev, ok := sse.next()
		if !ok {
			break
		}
		require.True(t, ev.hasID)
		if ev.data != "" {
			got = append(got, summary(t, ev))
		}
	}
	_ = post.Body.Close()
	assert.Equal(t, []string{"progress 1", "result 1 " + rsDone}, got)
	events, _ := streamable.StoreSize(store)
	assert.Equal(t, 3, events, "priming, progress and result")

	del := e.do(t.Context(), http.MethodDelete, "", rsSession(sid))
	_ = del.Body.Close()
	require.Equal(t, http.StatusNoContent, del.StatusCode)
	events, bytes := streamable.StoreSize(store)
	assert.Zero(t, events)
	assert.Zero(t, bytes)
}
