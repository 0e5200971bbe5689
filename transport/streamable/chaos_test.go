package streamable_test

// Chaos tests: real loopback HTTP (httptest), the real session core, and
// clients that misbehave. Each test checks the exact cancellation cause every
// in-flight handler ends with, and the rig checks on cleanup that no request
// had two outcomes, that every drop had a reason, and that nothing wrote to a
// ResponseWriter after its handler returned or panicked.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// chaosPatience bounds every wait for an event, as a failure report (the
// events are signaled, never polled for).
const chaosPatience = 30 * time.Second

func chaosWatchdog(t testing.TB) {
	timer := time.AfterFunc(90*time.Second, func() { panic(t.Name() + ": hung for 90s") })
	t.Cleanup(func() { timer.Stop() })
}

// chaosRecv receives one value from ch, or fails the test.
func chaosRecv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(chaosPatience):
		require.FailNow(t, "timed out waiting for "+what)
		panic("unreachable")
	}
}

// --- Observer and outcome recorder ---

type chaosEntry struct {
	key  string // server session id / request id
	name string // the tool name, or the method for other requests
	out  server.Outcome
}

type chaosCancel struct {
	key, name string
	cause     error
}

type chaosDrop struct {
	key, name string
	reason    protocol.DropReason
}

type chaosWaiter struct {
	cond func() bool // called with mu held
	ch   chan struct{}
}

// chaosRecorder is the Observer of the rig's server, and its middleware
// records every request's sealed Outcome (Request.OnDone). Tests wait for
// what it saw with await, which is signaled by the events themselves.
type chaosRecorder struct {
	mu             sync.Mutex
	outcomes       []chaosEntry
	cancels        []chaosCancel
	drops          []chaosDrop
	writeFailed    []protocol.DropReason
	outgoingFailed []string
	started        int
	ended          []error
	panics         []any
	waiters        []chaosWaiter
}

func chaosKey(req *server.Request) string { return req.Session.ID() + "/" + req.ID.String() }

func chaosName(req *server.Request) string {
	if req.Name != "" {
		return req.Name
	}
	return req.Method
}

// update changes the record under the lock and wakes the waiters whose
// condition now holds.
func (r *chaosRecorder) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if w.cond() {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	r.waiters = kept
}

// await blocks until cond (called with the lock held) holds.
func (r *chaosRecorder) await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ch := make(chan struct{})
	r.mu.Lock()
	if cond() {
		r.mu.Unlock()
		return
	}
	r.waiters = append(r.waiters, chaosWaiter{cond: cond, ch: ch})
	r.mu.Unlock()
	chaosRecv(t, ch, what)
}

// observer returns the hooks of r.
func (r *chaosRecorder) observer() server.Observer {
	return server.Observer{
		SessionStarted: r.SessionStarted, SessionEnded: r.SessionEnded, RequestCancelled: r.RequestCancelled,
		ResponseDropped: r.ResponseDropped, WriteFailed: r.WriteFailed, OutgoingFailed: r.OutgoingFailed,
		HandlerPanicked: r.HandlerPanicked,
	}
}

func (r *chaosRecorder) SessionStarted(context.Context, *server.Session) {
	r.update(func() { r.started++ })
}

func (r *chaosRecorder) SessionEnded(_ context.Context, _ *server.Session, cause error) {
	r.update(func() { r.ended = append(r.ended, cause) })
}

func (r *chaosRecorder) RequestCancelled(_ context.Context, req *server.Request, cause error) {
	r.update(func() { r.cancels = append(r.cancels, chaosCancel{chaosKey(req), chaosName(req), cause}) })
}

func (r *chaosRecorder) ResponseDropped(_ context.Context, req *server.Request, reason protocol.DropReason) {
	r.update(func() { r.drops = append(r.drops, chaosDrop{chaosKey(req), chaosName(req), reason}) })
}

func (r *chaosRecorder) WriteFailed(_ context.Context, _ *server.Session, class protocol.DropReason, _ error) {
	r.update(func() { r.writeFailed = append(r.writeFailed, class) })
}

func (r *chaosRecorder) OutgoingFailed(_ context.Context, _ *server.Session, method string, _ error) {
	r.update(func() { r.outgoingFailed = append(r.outgoingFailed, method) })
}

func (r *chaosRecorder) HandlerPanicked(_ context.Context, _ *server.Request, v any, _ []byte) {
	r.update(func() { r.panics = append(r.panics, v) })
}

// middleware records the sealed outcome of every request.
func (r *chaosRecorder) middleware(next server.Handler) server.Handler {
	return func(ctx context.Context, req *server.Request) (any, error) {
		if !req.IsNotification() {
			key, name := chaosKey(req), chaosName(req)
			serverhook.Of[server.Outcome](ctx).OnDone(func(o server.Outcome) {
				r.update(func() { r.outcomes = append(r.outcomes, chaosEntry{key, name, o}) })
			})
		}
		return next(ctx, req)
	}
}

// outcomesLocked returns the outcomes of the requests named name.
func (r *chaosRecorder) outcomesLocked(name string) []server.Outcome {
	var out []server.Outcome
	for _, e := range r.outcomes {
		if e.name == name {
			out = append(out, e.out)
		}
	}
	return out
}

// awaitOutcomes waits for n outcomes of requests named name and returns them.
func (r *chaosRecorder) awaitOutcomes(t testing.TB, name string, n int) []server.Outcome {
	t.Helper()
	r.await(t, fmt.Sprintf("%d outcomes of %s", n, name), func() bool { return len(r.outcomesLocked(name)) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomesLocked(name)
}

// dropsOf returns the drop reasons the Observer saw for requests named name.
func (r *chaosRecorder) dropsOf(name string) []protocol.DropReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []protocol.DropReason
	for _, d := range r.drops {
		if d.name == name {
			out = append(out, d.reason)
		}
	}
	return out
}

// cancelsOf returns the causes the Observer saw for requests named name.
func (r *chaosRecorder) cancelsOf(name string) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []error
	for _, c := range r.cancels {
		if c.name == name {
			out = append(out, c.cause)
		}
	}
	return out
}

func (r *chaosRecorder) sessionsEnded() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.ended...)
}

// check asserts the invariants of every run: one outcome per request, at
// most one cancellation and one drop per request, every drop with a known
// reason that matches the outcome, and no handler panic.
func (r *chaosRecorder) check(t testing.TB) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]int)
	for _, e := range r.outcomes {
		seen[e.key]++
	}
	for key, n := range seen {
		assert.Equal(t, 1, n, "request %s has %d outcomes", key, n)
	}
	cancelled := make(map[string]int)
	for _, c := range r.cancels {
		cancelled[c.key]++
		require.Error(t, c.cause, "request %s cancelled without a cause", c.key)
	}
	for key, n := range cancelled {
		assert.Equal(t, 1, n, "request %s reported cancelled %d times", key, n)
	}
	dropped := make(map[string]protocol.DropReason)
	for _, d := range r.drops {
		_, twice := dropped[d.key]
		assert.False(t, twice, "request %s dropped twice", d.key)
		assert.Contains(t, protocol.DropReasons(), d.reason, "request %s dropped without a valid reason", d.key)
		dropped[d.key] = d.reason
	}
	for _, e := range r.outcomes {
		reason, wasDropped := dropped[e.key]
		if e.out.Dropped != protocol.DropNone {
			assert.Equal(t, e.out.Dropped, reason, "request %s: outcome and Observer disagree on the drop", e.key)
		} else {
			assert.False(t, wasDropped, "request %s was both answered and dropped", e.key)
		}
	}
	assert.Empty(t, r.panics, "handler panics")
}

// --- ResponseWriter probe ---

var errChaosLateWrite = errors.New("chaos probe: write after the HTTP handler returned")

// chaosProbe wraps the transport's http.Handler and records writes to a
// ResponseWriter after its ServeHTTP returned (a bug: net/http may panic or
// corrupt the next response), writes after the client left, and panics.
type chaosProbe struct {
	next http.Handler

	mu          sync.Mutex
	afterReturn []string
	afterGone   []string
	panics      []any
}

func (p *chaosProbe) note(list *[]string, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*list = append(*list, what)
}

func (p *chaosProbe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pw := &chaosProbeWriter{p: p, w: w, ctx: r.Context(), what: r.Method + " " + r.Header.Get("Mcp-Session-Id")}
	defer func() {
		pw.mu.Lock()
		pw.returned = true
		pw.mu.Unlock()
		if v := recover(); v != nil {
			p.mu.Lock()
			p.panics = append(p.panics, v)
			p.mu.Unlock()
		}
	}()
	p.next.ServeHTTP(pw, r)
}

// gone returns the writes seen after the client had left.
func (p *chaosProbe) gone() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.afterGone...)
}

func (p *chaosProbe) check(t testing.TB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.afterReturn, "writes after the HTTP handler returned")
	assert.Empty(t, p.panics, "panics in the HTTP handler")
}

type chaosProbeWriter struct {
	p    *chaosProbe
	w    http.ResponseWriter
	ctx  context.Context
	what string

	mu       sync.Mutex
	returned bool
}

// admit records the operation and reports whether it may reach the real
// writer. The write itself runs unlocked, so that a write racing with the
// handler's return stays visible to the race detector.
func (pw *chaosProbeWriter) admit(op string) bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.returned {
		pw.p.note(&pw.p.afterReturn, pw.what+": "+op)
		return false
	}
	if pw.ctx.Err() != nil {
		pw.p.note(&pw.p.afterGone, pw.what+": "+op)
	}
	return true
}

func (pw *chaosProbeWriter) Header() http.Header {
	if !pw.admit("header") {
		return http.Header{}
	}
	return pw.w.Header()
}

func (pw *chaosProbeWriter) WriteHeader(code int) {
	if pw.admit(fmt.Sprintf("WriteHeader(%d)", code)) {
		pw.w.WriteHeader(code)
	}
}

func (pw *chaosProbeWriter) Write(b []byte) (int, error) {
	if !pw.admit(fmt.Sprintf("Write(%q)", b)) {
		return 0, errChaosLateWrite
	}
	return pw.w.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (pw *chaosProbeWriter) FlushError() error {
	if !pw.admit("Flush") {
		return errChaosLateWrite
	}
	return http.NewResponseController(pw.w).Flush()
}

func (pw *chaosProbeWriter) Unwrap() http.ResponseWriter { return pw.w }

// --- the rig: server core + transport + loopback HTTP server + client ---

type chaosRig struct {
	srv    *server.Server
	h      *streamable.Endpoint
	ts     *httptest.Server
	client *http.Client
	rec    *chaosRecorder
	probe  *chaosProbe
}

func newChaosRig(t *testing.T, opts ...streamable.Option) *chaosRig {
	rec := &chaosRecorder{}
	srv := server.New(server.WithObserver(rec.observer()), server.WithMiddleware(rec.middleware))
	h := streamable.New(srv, opts...)
	probe := &chaosProbe{next: h}
	ts := httptest.NewServer(probe)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	rig := &chaosRig{srv: srv, h: h, ts: ts, client: &http.Client{Transport: tr}, rec: rec, probe: probe}
	// Cleanups run last-in first-out: the client's connections, the
	// sessions, the server, then the checks.
	t.Cleanup(func() {
		probe.check(t)
		rec.check(t)
	})
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		assert.NoError(t, srv.Close())
		assert.NoError(t, h.Close())
	})
	t.Cleanup(tr.CloseIdleConnections)
	return rig
}

func (r *chaosRig) addTool(t testing.TB, name string, h server.ToolHandler) {
	require.NoError(t, r.srv.AddTool(server.Tool{Name: name}, h))
}

// newPost builds a POST of body; sid "" means no session.
func (r *chaosRig) newPost(ctx context.Context, sid, body string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.ts.URL, strings.NewReader(body))
	if err != nil {
		panic(err) // the URL and method are fixed
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return req
}

func (r *chaosRig) do(req *http.Request) (*http.Response, error) { return r.client.Do(req) }

func (r *chaosRig) post(t testing.TB, sid, body string) *http.Response {
	t.Helper()
	resp, err := r.do(r.newPost(context.Background(), sid, body))
	require.NoError(t, err)
	return resp
}

// chaosBody reads and closes a response body.
func chaosBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

const chaosInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":"chaos","version":"1"}}}`

// open initializes a session (without notifications/initialized) and
// returns its id, or an error: it may run on any goroutine.
func (r *chaosRig) open(caps string) (string, error) {
	resp, err := r.do(r.newPost(context.Background(), "", fmt.Sprintf(chaosInitialize, caps)))
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var msg struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &msg) != nil || msg.Result.ProtocolVersion != "2025-11-25" {
		return "", fmt.Errorf("initialize: %s: %s", resp.Status, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return "", errors.New("initialize: no Mcp-Session-Id")
	}
	return sid, nil
}

// initialize opens a session and completes the handshake.
func (r *chaosRig) initialize(t testing.TB, caps string) string {
	t.Helper()
	sid, err := r.open(caps)
	require.NoError(t, err)
	resp := r.post(t, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Empty(t, chaosBody(t, resp))
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return sid
}

// chaosCall is the body of a tools/call; meta is the _meta object or "".
func chaosCall(id int, name, meta string) string {
	if meta != "" {
		meta = `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}%s}}`, id, name, meta)
}

// chaosNextEvent reads the data of the next SSE event, skipping comments.
func chaosNextEvent(br *bufio.Reader) (string, error) {
	var data strings.Builder
	has := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && has:
			return data.String(), nil
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			has = true
		}
	}
}

// chaosBlock is a tool that reports progress (when the client gave a
// token), signals started, blocks until its context is done, records the
// cause and returns a result the core must drop.
func chaosBlock(started chan<- struct{}, causes chan<- error) server.ToolHandler {
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		if _, ok := req.Request.Meta.Get("progressToken"); ok {
			if err := server.ReportProgress(ctx, 1, 0, "started"); err != nil {
				return nil, err
			}
		}
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		// The request is over: this sends nothing and returns nil.
		if err := server.ReportProgress(ctx, 2, 0, "after the end"); err != nil {
			return nil, err
		}
		return server.Text("too late"), nil
	}
}

func chaosEcho(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
	return server.Text("hello"), nil
}

const chaosProgress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"message":"started"}}`

// --- the scenarios ---

// The client resets its TCP connection (RST) while a 2025 tools/call
// streams: the handler is cancelled with ErrStreamClose (its stream is
// gone, its session lives on), the response is dropped as peer_gone, nothing more is written to
// the dead stream, and the session itself serves on.
func TestChaosClientResetMidCall(t *testing.T) {
	chaosWatchdog(t)
	rig := newChaosRig(t)
	started, causes, late := make(chan struct{}, 1), make(chan error, 1), make(chan error, 1)
	block := chaosBlock(started, causes)
	rig.addTool(t, "block", func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		res, err := block(ctx, req)
		// A handler that insists on writing to its dead stream once
		// cancelled gets an error, and nothing reaches the ResponseWriter.
		late <- req.Request.Session.Notify(context.WithoutCancel(ctx), "notifications/progress",
			map[string]any{"progressToken": "p1", "progress": 3})
		return res, err
	})
	rig.addTool(t, "echo", chaosEcho)
	sid := rig.initialize(t, `{}`)

	conn, err := net.Dial("tcp", rig.ts.Listener.Addr().String())
	require.NoError(t, err)
	body := chaosCall(7, "block", `{"progressToken":"p1"}`)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n"+
		"Content-Length: %d\r\n\r\n%s", rig.ts.Listener.Addr(), sid, len(body), body)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	ev, err := chaosNextEvent(br)
	require.NoError(t, err)
	assert.JSONEq(t, chaosProgress, ev)
	chaosRecv(t, started, "the handler to start")

	require.NoError(t, conn.(*net.TCPConn).SetLinger(0)) // Close sends RST
	require.NoError(t, conn.Close())

	cause := chaosRecv(t, causes, "the handler's cancellation")
	require.ErrorIs(t, cause, server.ErrStreamClose)
	require.ErrorIs(t, cause, transport.ErrStreamGone)
	require.ErrorIs(t, chaosRecv(t, late, "the late write"), transport.ErrStreamGone)
	outs := rig.rec.awaitOutcomes(t, "block", 1)
	assert.Equal(t, protocol.DropPeerGone, outs[0].Dropped)
	require.ErrorIs(t, outs[0].Cause, server.ErrStreamClose)
	assert.Equal(t, []protocol.DropReason{protocol.DropPeerGone}, rig.rec.dropsOf("block"))
	require.Len(t, rig.rec.cancelsOf("block"), 1)
	require.ErrorIs(t, rig.rec.cancelsOf("block")[0], server.ErrStreamClose)
	assert.Empty(t, rig.probe.gone(), "writes after the client reset")
	rig.rec.mu.Lock()
	assert.Equal(t, []protocol.DropReason{protocol.DropPeerGone}, rig.rec.writeFailed, "the late write failed, as peer_gone")
	rig.rec.mu.Unlock()

	// The session lives on: only that request's stream was gone.
	resp = rig.post(t, sid, chaosCall(8, "echo", ""))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"hello"}]}}`, chaosBody(t, resp))
	assert.Empty(t, rig.rec.sessionsEnded())
}

// The client resets its connection while a tools/call runs whose handler
// never looks at its context (it waits for the stream's end on its own,
// through the arrival context, and then answers): the request still ends
// cancelled with ErrStreamClose and its answer dropped, once, in a 2025
// session and as a stateless request alike.
func TestChaosClientGoneHandlerNeverWaits(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "2025", true: "stateless"}[stateless], func(t *testing.T) {
			chaosWatchdog(t)
			rig := newChaosRig(t)
			started := make(chan struct{}, 1)
			rig.addTool(t, "oblivious", func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				gone := make(chan struct{})
				stop := context.AfterFunc(req.Request.ArrivalContext(), func() { close(gone) })
				defer stop()
				started <- struct{}{}
				<-gone
				return server.Text("too late"), nil
			})
			head := "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
			var body string
			if stateless {
				body = chaosCall(1, "oblivious", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)
				head += "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: oblivious\r\n"
			} else {
				body = chaosCall(1, "oblivious", "")
				head += "Mcp-Session-Id: " + rig.initialize(t, `{}`) + "\r\nMCP-Protocol-Version: 2025-11-25\r\n"
			}
			conn, err := net.Dial("tcp", rig.ts.Listener.Addr().String())
			require.NoError(t, err)
			_, err = fmt.Fprintf(conn, head+"Content-Length: %d\r\n\r\n%s", rig.ts.Listener.Addr(), len(body), body)
			require.NoError(t, err)
			chaosRecv(t, started, "the handler to start")
			require.NoError(t, conn.(*net.TCPConn).SetLinger(0)) // Close sends RST
			require.NoError(t, conn.Close())

			outs := rig.rec.awaitOutcomes(t, "oblivious", 1)
			require.ErrorIs(t, outs[0].Cause, server.ErrStreamClose)
			// The stream's reader left, in both eras (stream_close).
			assert.Equal(t, protocol.DropPeerGone, outs[0].Dropped)
			require.Len(t, rig.rec.cancelsOf("oblivious"), 1)
			require.ErrorIs(t, rig.rec.cancelsOf("oblivious")[0], server.ErrStreamClose)
			assert.Empty(t, rig.probe.gone(), "writes after the client reset")
		})
	}
}

// DELETE while two handlers wait in elicitation/create (sent on their POST
// SSE streams, never answered): DELETE answers 204 without waiting for
// them; both wake with ErrConnectionClosed, their request contexts carry
// ErrTransportClose, their POST streams end with nothing more, and the
// session id answers 404 from then on.
func TestChaosDeleteWhileElicitationsWait(t *testing.T) {
	chaosWatchdog(t)
	rig := newChaosRig(t)
	type woke struct{ err, cause error }
	results, release := make(chan woke, 2), make(chan struct{})
	rig.addTool(t, "ask", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		_, err := server.Elicit(ctx, &server.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		results <- woke{err, context.Cause(ctx)}
		<-release // held until DELETE has returned: DELETE must not wait for us
		return nil, err
	})
	sid := rig.initialize(t, `{"elicitation":{}}`)

	streams := make([]*bufio.Reader, 2)
	for i := range streams {
		resp := rig.post(t, sid, chaosCall(i+1, "ask", ""))
		t.Cleanup(func() { _ = resp.Body.Close() })
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		streams[i] = bufio.NewReader(resp.Body)
		ev, err := chaosNextEvent(streams[i])
		require.NoError(t, err)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &msg), ev)
		assert.Equal(t, "elicitation/create", msg.Method)
		assert.Equal(t, "Your name?", msg.Params.Message)
		assert.NotEmpty(t, msg.ID)
	}

	req, err := http.NewRequest(http.MethodDelete, rig.ts.URL, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := rig.do(req)
	require.NoError(t, err)
	assert.Empty(t, chaosBody(t, resp))
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	for range 2 {
		w := chaosRecv(t, results, "a handler to wake")
		require.ErrorIs(t, w.err, server.ErrConnectionClosed)
		require.ErrorIs(t, w.err, server.ErrTransportClose)
		require.ErrorIs(t, w.cause, server.ErrTransportClose)
	}
	close(release)

	for _, br := range streams {
		rest, err := io.ReadAll(br)
		require.NoError(t, err, "the stream ends cleanly")
		assert.Empty(t, string(rest), "nothing more on a deleted session's stream")
	}
	outs := rig.rec.awaitOutcomes(t, "ask", 2)
	for _, o := range outs {
		assert.Equal(t, protocol.DropWriterClosed, o.Dropped)
		require.ErrorIs(t, o.Cause, server.ErrTransportClose)
	}
	assert.Equal(t, []protocol.DropReason{protocol.DropWriterClosed, protocol.DropWriterClosed}, rig.rec.dropsOf("ask"))
	rig.rec.await(t, "the session to end", func() bool { return len(rig.rec.ended) == 1 })
	ended := rig.rec.sessionsEnded()
	require.ErrorIs(t, ended[0], server.ErrTransportClose)
	require.ErrorIs(t, ended[0], transport.ErrPeerGone)
	rig.rec.mu.Lock()
	assert.Equal(t, []string{"elicitation/create", "elicitation/create"}, rig.rec.outgoingFailed)
	rig.rec.mu.Unlock()

	resp = rig.post(t, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	chaosBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A 2026-07-28 stateless tools/call streams progress, then the client
// cancels the request (closing the SSE stream): the handler is cancelled
// with ErrStreamClose, its result is dropped, and nothing more is
// written to the response.
func TestChaosStatelessSSEClose(t *testing.T) {
	chaosWatchdog(t)
	rig := newChaosRig(t)
	started, causes := make(chan struct{}, 1), make(chan error, 1)
	rig.addTool(t, "block", chaosBlock(started, causes))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := rig.newPost(ctx, "", chaosCall(1, "block",
		`{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`))
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "block")
	resp, err := rig.do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	ev, err := chaosNextEvent(bufio.NewReader(resp.Body))
	require.NoError(t, err)
	assert.JSONEq(t, chaosProgress, ev)
	chaosRecv(t, started, "the handler to start")

	cancel() // the client closes the stream

	cause := chaosRecv(t, causes, "the handler's cancellation")
	require.ErrorIs(t, cause, server.ErrStreamClose)
	require.ErrorIs(t, cause, transport.ErrStreamGone)
	outs := rig.rec.awaitOutcomes(t, "block", 1)
	assert.Equal(t, protocol.DropPeerGone, outs[0].Dropped)
	require.ErrorIs(t, outs[0].Cause, server.ErrStreamClose)
	assert.Equal(t, []protocol.DropReason{protocol.DropPeerGone}, rig.rec.dropsOf("block"))
	assert.Empty(t, rig.probe.gone(), "writes after the client closed the stream")
	rig.rec.mu.Lock()
	assert.Empty(t, rig.rec.writeFailed, "no write failed: none was attempted")
	assert.Zero(t, rig.rec.started, "a stateless request is no session (transport.Single)")
	assert.Empty(t, rig.rec.ended, "a stateless request is no session (transport.Single)")
	rig.rec.mu.Unlock()
}

// A session that sees no request for the idle timeout expires while a
// handler blocks: the handler is cancelled with ErrTransportClose, the
// waiting POST gets a JSON-RPC error, and the id answers 404 afterwards.
func TestChaosIdleExpiry(t *testing.T) {
	chaosWatchdog(t)
	// Long enough that initialize, notifications/initialized and the call
	// itself all land before it (each POST restarts it), even under -race.
	const idle = 500 * time.Millisecond
	rig := newChaosRig(t, streamable.WithIdleTimeout(idle))
	started, causes := make(chan struct{}, 1), make(chan error, 1)
	rig.addTool(t, "block", chaosBlock(started, causes))
	sid := rig.initialize(t, `{}`)

	type answer struct {
		status int
		body   string
		err    error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := rig.do(rig.newPost(context.Background(), sid, chaosCall(2, "block", "")))
		if err != nil {
			answers <- answer{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		answers <- answer{resp.StatusCode, string(b), err}
	}()
	chaosRecv(t, started, "the handler to start")

	cause := chaosRecv(t, causes, "the handler's cancellation by idle expiry")
	require.ErrorIs(t, cause, server.ErrTransportClose)
	require.ErrorIs(t, cause, transport.ErrPeerGone)

	a := chaosRecv(t, answers, "the POST's answer")
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusOK, a.status)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"session terminated"}}`, a.body)

	// Recorded as the client received it: cancelled, answered -32000.
	outs := rig.rec.awaitOutcomes(t, "block", 1)
	assert.Equal(t, protocol.DropNone, outs[0].Dropped)
	require.ErrorIs(t, outs[0].Cause, server.ErrTransportClose)
	assert.Equal(t, protocol.CodeServerBusy, server.CodeOf(outs[0].Err))
	assert.Empty(t, rig.rec.dropsOf("block"))
	rig.rec.await(t, "the session to end", func() bool { return len(rig.rec.ended) == 1 })
	require.ErrorIs(t, rig.rec.sessionsEnded()[0], server.ErrTransportClose)

	resp := rig.post(t, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	chaosBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// Shutdown runs out of time while one handler streams (SSE) and another
// has written nothing yet: both are cancelled with ErrShutdown, the SSE
// stream ends after what it carried, the quiet POST gets a JSON-RPC error,
// nobody hangs, and Endpoint.Close then refuses new sessions.
func TestChaosShutdownMidStream(t *testing.T) {
	chaosWatchdog(t)
	rig := newChaosRig(t)
	started, causes := make(chan struct{}, 2), make(chan error, 2)
	rig.addTool(t, "block", chaosBlock(started, causes))
	sid := rig.initialize(t, `{}`)

	resp := rig.post(t, sid, chaosCall(2, "block", `{"progressToken":"p1"}`))
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	stream := bufio.NewReader(resp.Body)
	ev, err := chaosNextEvent(stream)
	require.NoError(t, err)
	assert.JSONEq(t, chaosProgress, ev)
	chaosRecv(t, started, "the streaming handler to start")

	quiet := make(chan string, 1)
	go func() {
		resp, err := rig.do(rig.newPost(context.Background(), sid, chaosCall(3, "block", "")))
		if err != nil {
			quiet <- err.Error()
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		quiet <- string(b)
	}()
	chaosRecv(t, started, "the quiet handler to start")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, rig.srv.Shutdown(ctx), context.DeadlineExceeded)

	for range 2 {
		cause := chaosRecv(t, causes, "a handler's cancellation by shutdown")
		require.ErrorIs(t, cause, server.ErrShutdown)
		require.ErrorIs(t, cause, context.DeadlineExceeded)
	}
	rest, err := io.ReadAll(stream)
	require.NoError(t, err, "the SSE stream ends cleanly")
	assert.Empty(t, string(rest))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"session terminated"}}`,
		chaosRecv(t, quiet, "the quiet POST's answer"))

	require.NoError(t, rig.h.Close())
	// The streaming call's answer is dropped (its event stream ends with
	// none); the quiet one is recorded as its client received it:
	// cancelled, answered -32000 by the transport, not dropped.
	outs := rig.rec.awaitOutcomes(t, "block", 2)
	var dropped, answered int
	for _, o := range outs {
		require.ErrorIs(t, o.Cause, server.ErrShutdown)
		switch o.Dropped {
		case protocol.DropShutdown:
			dropped++
		case protocol.DropNone:
			assert.Equal(t, protocol.CodeServerBusy, server.CodeOf(o.Err))
			answered++
		}
	}
	assert.Equal(t, [2]int{1, 1}, [2]int{dropped, answered}, "dropped, answered")
	assert.Equal(t, []protocol.DropReason{protocol.DropShutdown}, rig.rec.dropsOf("block"))
	ended := rig.rec.sessionsEnded()
	require.Len(t, ended, 1)
	require.ErrorIs(t, ended[0], server.ErrShutdown)

	resp = rig.post(t, "", fmt.Sprintf(chaosInitialize, `{}`))
	chaosBody(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// 1,000 sessions are opened (initialize) and abandoned, never deleted;
// Endpoint.Close, or idle expiry, releases them: every session ends, and
// goroutines and heap return to their baseline.
func TestChaosAbandonedSessions(t *testing.T) {
	chaosWatchdog(t)
	const sessions, workers = 1000, 8
	tests := []struct {
		name    string
		idle    time.Duration // 0: the default (30 minutes)
		release func(t *testing.T, rig *chaosRig)
		class   error // what every session's end cause wraps
	}{
		{
			name:    "handler close",
			release: func(t *testing.T, rig *chaosRig) { require.NoError(t, rig.h.Close()) },
			class:   transport.ErrClosed,
		},
		{
			name: "idle expiry",
			idle: 2 * time.Second,
			release: func(t *testing.T, rig *chaosRig) {
				rig.rec.await(t, "every session to expire", func() bool { return len(rig.rec.ended) == sessions })
			},
			class: transport.ErrPeerGone,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []streamable.Option
			if tc.idle > 0 {
				opts = append(opts, streamable.WithIdleTimeout(tc.idle))
			}
			rig := newChaosRig(t, opts...)
			baseG, baseHeap := runtime.NumGoroutine(), chaosHeap()

			ids := make([][]string, workers)
			errs := make([]error, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for range sessions / workers {
						sid, err := rig.open(`{}`)
						if err != nil {
							errs[w] = err
							return
						}
						ids[w] = append(ids[w], sid)
					}
				})
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
			rig.rec.mu.Lock()
			assert.Equal(t, sessions, rig.rec.started)
			rig.rec.mu.Unlock()
			t.Logf("%d sessions open: %d goroutines (baseline %d), heap %.1f MiB (baseline %.1f MiB)",
				sessions, runtime.NumGoroutine(), baseG, chaosMiB(chaosHeap()), chaosMiB(baseHeap))

			tc.release(t, rig)
			rig.client.Transport.(*http.Transport).CloseIdleConnections()

			ended := rig.rec.sessionsEnded()
			require.Len(t, ended, sessions)
			for _, cause := range ended {
				require.ErrorIs(t, cause, server.ErrTransportClose)
				require.ErrorIs(t, cause, tc.class)
			}
			assert.Empty(t, rig.srv.Sessions())
			assert.Len(t, rig.rec.awaitOutcomes(t, "initialize", sessions), sessions)

			// The one bounded poll in these tests: the goroutines of the
			// closed keep-alive connections exit on their own schedule and
			// nothing signals it, so yield until the count is back.
			const slack = 4
			g := chaosSettle(baseG+slack, 20*time.Second)
			heap := chaosHeap()
			t.Logf("released: %d goroutines (baseline %d), heap %.1f MiB (baseline %.1f MiB)", g, baseG, chaosMiB(heap), chaosMiB(baseHeap))
			assert.LessOrEqual(t, g, baseG+slack, "goroutines back to baseline")
			assert.LessOrEqual(t, heap, baseHeap+8<<20, "heap back to baseline (+8 MiB)")

			resp := rig.post(t, ids[0][0], `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			chaosBody(t, resp)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "an abandoned session is gone")
		})
	}
}

// chaosSettle yields until at most want goroutines run or bound passes, and
// returns the last count.
func chaosSettle(want int, bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		runtime.Gosched()
	}
}

// chaosHeap returns the live heap after a full collection.
func chaosHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func chaosMiB(n uint64) float64 { return float64(n) / (1 << 20) }
