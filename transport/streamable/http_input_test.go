package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wholebody"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The helpers of the http_*_test.go files start with "ht", so that they do
// not collide with those of the other test files of this package.

const htVersion = "2025-11-25"

// htWatchdog panics if the test runs for more than a minute: a hung test
// then shows every goroutine's stack instead of timing out silently.
func htWatchdog(t testing.TB) {
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
}

// htEnv is an Endpoint for srv served on a loopback httptest server.
type htEnv struct {
	t      *testing.T
	srv    *server.Server
	h      *streamable.Endpoint
	ts     *httptest.Server
	client *http.Client
}

// newHTEnv serves srv (htServer() when nil) with opts on a loopback
// listener, and tears everything down when the test ends.
func newHTEnv(t *testing.T, srv *server.Server, opts ...streamable.Option) *htEnv {
	t.Helper()
	htWatchdog(t)
	if srv == nil {
		srv = htServer(t)
	}
	h := streamable.New(srv, opts...)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	return &htEnv{t: t, srv: srv, h: h, ts: ts, client: ts.Client()}
}

// htServer is a server with an echo tool that sends every progress update.
func htServer(t testing.TB, opts ...server.Option) *server.Server {
	t.Helper()
	srv := server.New(append([]server.Option{server.WithProgressInterval(0), server.WithListChangedDelay(0)}, opts...)...)
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(req.Arguments, &in)
		return server.Text(in.Text), nil
	}))
	return srv
}

// htH are request headers: a "" value removes a default header, and the
// key "Host" sets the request's Host.
type htH map[string]string

// request builds a request with the headers a client sends by default:
// Content-Type and Accept for POST, Accept: text/event-stream for GET.
func (e *htEnv) request(ctx context.Context, method, body string, hdr htH) *http.Request {
	e.t.Helper()
	r, err := http.NewRequestWithContext(ctx, method, e.ts.URL, strings.NewReader(body))
	require.NoError(e.t, err)
	switch method {
	case http.MethodPost:
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		r.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			r.Host = v
		case v == "":
			r.Header.Del(k)
		default:
			r.Header.Set(k, v)
		}
	}
	return r
}

// send sends r; the caller closes the body.
func (e *htEnv) send(r *http.Request) *http.Response {
	e.t.Helper()
	resp, err := e.client.Do(r)
	require.NoError(e.t, err)
	return resp
}

// htReply is a complete HTTP answer.
type htReply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request and reads the whole answer.
func (e *htEnv) do(method, body string, hdr htH) htReply {
	e.t.Helper()
	return e.doReq(e.request(e.t.Context(), method, body, hdr))
}

func (e *htEnv) doReq(r *http.Request) htReply {
	e.t.Helper()
	resp := e.send(r)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return htReply{status: resp.StatusCode, header: resp.Header, body: body}
}

// messages decodes the answer to a request: one JSON message, or the
// messages of an SSE stream.
func (r htReply) messages(t testing.TB) []htMsg {
	t.Helper()
	if r.header.Get("Content-Type") != "text/event-stream" {
		return []htMsg{htDecode(t, r.body)}
	}
	s := &htSSE{t: t, br: bufio.NewReader(bytes.NewReader(r.body))}
	return s.rest()
}

// htMsg is any JSON-RPC message, as decoded by the tests.
type htMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *htErr          `json:"error,omitempty"`
}

type htErr struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func htDecode(t testing.TB, data []byte) htMsg {
	t.Helper()
	var m htMsg
	require.NoError(t, json.Unmarshal(data, &m), "not a JSON-RPC message: %s", data)
	require.Equal(t, "2.0", m.JSONRPC, "jsonrpc member of %s", data)
	return m
}

// htRPCError asserts that r is an HTTP status answered with a JSON-RPC
// error of code, and returns the error message.
func htRPCError(t testing.TB, r htReply, status int, code int64) htMsg {
	t.Helper()
	require.Equal(t, status, r.status, "status; body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"), "body: %s", r.body)
	m := htDecode(t, r.body)
	require.NotNil(t, m.Error, "not an error: %s", r.body)
	assert.Equal(t, code, m.Error.Code, "error code; body: %s", r.body)
	assert.NotEmpty(t, m.Error.Message)
	assert.Nil(t, m.Result)
	return m
}

// htUnknownSession requires r to refuse an unknown session: 404 with a
// plain-text body, no JSON-RPC message (which clients would take for the
// refusal of one call; see refuseUnknownSession).
func htUnknownSession(t testing.TB, r htReply) {
	t.Helper()
	require.Equal(t, http.StatusNotFound, r.status, "status; body: %s", r.body)
	assert.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"), "body: %s", r.body)
	assert.Equal(t, "unknown or terminated session\n", string(r.body))
	_, err := transport.DecodeMessage(r.body)
	assert.Error(t, err, "the body is no JSON-RPC message: a client reads the 404 as the session's end")
}

// htSSE reads the events of an SSE response.
type htSSE struct {
	t      testing.TB
	resp   *http.Response
	br     *bufio.Reader
	lastID string // the id of the last event read that had one
}

func htStream(t testing.TB, resp *http.Response) *htSSE {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &htSSE{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the data of the next event that has some (priming events
// and comments are skipped), or false at the end of the stream.
func (s *htSSE) next() ([]byte, bool) {
	s.t.Helper()
	var data [][]byte
	for {
		line, err := s.br.ReadBytes('\n')
		if err != nil {
			require.Empty(s.t, bytes.TrimSpace(line), "truncated event")
			return nil, false
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				return bytes.Join(data, []byte("\n")), true
			}
		case bytes.HasPrefix(line, []byte("id:")):
			s.lastID = strings.TrimSpace(string(bytes.TrimPrefix(line, []byte("id:"))))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(bytes.TrimSpace(d)) > 0 {
				data = append(data, d)
			}
		}
	}
}

// nextMsg returns the next message; it fails at the end of the stream.
func (s *htSSE) nextMsg() htMsg {
	s.t.Helper()
	data, ok := s.next()
	require.True(s.t, ok, "the stream ended")
	return htDecode(s.t, data)
}

// rest returns the messages up to the end of the stream.
func (s *htSSE) rest() []htMsg {
	s.t.Helper()
	var out []htMsg
	for {
		data, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, htDecode(s.t, data))
	}
}

func (s *htSSE) close() { _ = s.resp.Body.Close() }

// sh are the headers of a request on session sid.
func htSession(sid string) htH {
	return htH{"Mcp-Session-Id": sid, "MCP-Protocol-Version": htVersion}
}

// htInitBody is an initialize request with id 0 declaring caps.
func htInitBody(caps string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + htVersion +
		`","capabilities":` + caps + `,"clientInfo":{"name":"ht","version":"1"}}}`
}

// initialize opens a session declaring caps and completes the handshake.
func (e *htEnv) initialize(caps string) string {
	e.t.Helper()
	r := e.do(http.MethodPost, htInitBody(caps), nil)
	require.Equal(e.t, http.StatusOK, r.status, "initialize: %s", r.body)
	msgs := r.messages(e.t)
	require.Len(e.t, msgs, 1, "initialize: %s", r.body)
	require.Nil(e.t, msgs[0].Error, "initialize: %s", r.body)
	sid := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(e.t, sid)
	n := e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, htSession(sid))
	require.Equal(e.t, http.StatusAccepted, n.status, "initialized: %s", n.body)
	return sid
}

// call sends a request on session sid and returns its answer: one JSON
// message, or every message of its SSE stream.
func (e *htEnv) call(sid, body string) (contentType string, msgs []htMsg) {
	e.t.Helper()
	resp := e.send(e.request(e.t.Context(), http.MethodPost, body, htSession(sid)))
	defer func() { _ = resp.Body.Close() }()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	contentType = resp.Header.Get("Content-Type")
	if contentType == "text/event-stream" {
		return contentType, htStream(e.t, resp).rest()
	}
	body2, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return contentType, []htMsg{htDecode(e.t, body2)}
}

// htBlocker is a tool that signals when it starts, then waits for its
// context and reports the cancellation cause.
type htBlocker struct {
	started chan struct{}
	cause   chan error
}

func newHTBlocker() *htBlocker {
	return &htBlocker{started: make(chan struct{}, 8), cause: make(chan error, 8)}
}

func (b *htBlocker) tool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.cause <- context.Cause(ctx)
	return nil, context.Cause(ctx)
}

// htCallBody is a tools/call request.
func htCallBody(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// TestHTTPBadInput sends malformed or unacceptable requests: each gets its
// exact status and a JSON-RPC error body, and the session keeps serving.
func TestHTTPBadInput(t *testing.T) {
	e := newHTEnv(t, nil, streamable.WithMaxBodyBytes(1024))
	sid := e.initialize(`{}`)
	deleted := e.initialize(`{}`)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, "", htSession(deleted)).status)
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	sess := htSession(sid)
	with := func(h htH, kv ...string) htH {
		out := htH{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	tests := []struct {
		name   string
		method string
		body   string
		hdr    htH
		status int
		code   int64
		allow  string
	}{
		{"wrong content type", http.MethodPost, list, with(sess, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType, -32600, ""},
		{"no content type", http.MethodPost, list, with(sess, "Content-Type", ""), http.StatusUnsupportedMediaType, -32600, ""},
		{"accept without event-stream", http.MethodPost, list, with(sess, "Accept", "application/json"), http.StatusNotAcceptable, -32600, ""},
		{"accept without json", http.MethodPost, list, with(sess, "Accept", "text/event-stream"), http.StatusNotAcceptable, -32600, ""},
		{"no accept", http.MethodPost, list, with(sess, "Accept", ""), http.StatusNotAcceptable, -32600, ""},
		{"invalid JSON", http.MethodPost, `{"jsonrpc":"2.0","id":7,`, sess, http.StatusBadRequest, -32700, ""},
		{"oversized body", http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, sess, http.StatusRequestEntityTooLarge, -32600, ""},
		{"missing session id", http.MethodPost, list, htH{"MCP-Protocol-Version": htVersion}, http.StatusBadRequest, -32600, ""},
		{"unknown session id", http.MethodPost, list, htSession("no-such-session"), http.StatusNotFound, -32600, ""},
		{"deleted session id", http.MethodPost, list, htSession(deleted), http.StatusNotFound, -32600, ""},
		{"deleted session notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, htSession(deleted), http.StatusNotFound, -32600, ""},
		{"unsupported protocol version", http.MethodPost, list, with(sess, "MCP-Protocol-Version", "1999-01-01"), http.StatusBadRequest, -32600, ""},
		{"batch", http.MethodPost, `[` + list + `]`, sess, http.StatusBadRequest, -32600, ""},
		{"GET without SSE accept", http.MethodGet, "", with(sess, "Accept", "application/json"), http.StatusNotAcceptable, -32600, ""},
		{"GET without session id", http.MethodGet, "", htH{}, http.StatusBadRequest, -32600, ""},
		{"GET unknown session", http.MethodGet, "", htSession("no-such-session"), http.StatusNotFound, -32600, ""},
		{"DELETE without session id", http.MethodDelete, "", htH{}, http.StatusBadRequest, -32600, ""},
		{"DELETE unknown session", http.MethodDelete, "", htSession("no-such-session"), http.StatusNotFound, -32600, ""},
		{"DELETE deleted session", http.MethodDelete, "", htSession(deleted), http.StatusNotFound, -32600, ""},
		{"PUT", http.MethodPut, list, sess, http.StatusMethodNotAllowed, -32600, "GET, POST, DELETE"},
		{"PATCH", http.MethodPatch, list, sess, http.StatusMethodNotAllowed, -32600, "GET, POST, DELETE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.body, tt.hdr)
			if tt.status == http.StatusNotFound {
				htUnknownSession(t, r)
			} else {
				htRPCError(t, r, tt.status, tt.code)
			}
			if tt.allow != "" {
				assert.Equal(t, tt.allow, r.header.Get("Allow"))
			}
		})
	}

	// The session still serves; a Content-Type with parameters is fine.
	r := e.do(http.MethodPost, list, with(sess, "Content-Type", "application/json; charset=utf-8"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	m := htDecode(t, r.body)
	assert.JSONEq(t, `7`, string(m.ID))
	assert.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"name":"echo"`)
}

// A request with the id of one still in flight on the session gets 409 with
// that id; the first one is unaffected.
func TestHTTPDuplicateInFlightID(t *testing.T) {
	e := newHTEnv(t, nil)
	b := newHTBlocker()
	require.NoError(t, e.srv.AddTool(server.Tool{Name: "block"}, b.tool))
	sid := e.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := e.client.Do(e.request(ctx, http.MethodPost, htCallBody("5", "block", `{}`), htSession(sid)))
		if err == nil {
			first <- resp
		}
		close(first)
	}()
	<-b.started

	m := htRPCError(t, e.do(http.MethodPost, htCallBody("5", "echo", `{"text":"x"}`), htSession(sid)), http.StatusConflict, -32600)
	assert.JSONEq(t, `5`, string(m.ID))
	// Another id is fine meanwhile.
	_, msgs := e.call(sid, htCallBody("6", "echo", `{"text":"x"}`))
	require.Len(t, msgs, 1)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"x"}]}`, string(msgs[0].Result))

	cancel()
	if resp, ok := <-first; ok {
		_ = resp.Body.Close()
	}
	require.ErrorIs(t, <-b.cause, server.ErrStreamClose, "the abandoned POST cancels its handler")
}

// A second GET stream on a session gets 409 while the first one is open.
func TestHTTPSecondGETConflict(t *testing.T) {
	e := newHTEnv(t, nil)
	sid := e.initialize(`{}`)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	get := e.send(e.request(ctx, http.MethodGet, "", htSession(sid)))
	defer func() { _ = get.Body.Close() }()
	htStream(t, get)
	assert.Equal(t, sid, get.Header.Get("Mcp-Session-Id"))
	assert.Equal(t, "no-cache", get.Header.Get("Cache-Control"))

	htRPCError(t, e.do(http.MethodGet, "", htSession(sid)), http.StatusConflict, -32600)
}

// A large declared body is read as it arrives: a Content-Length the client
// never sends costs no buffer of that size (a flood of such requests must
// not cost memory per connection).
func TestPOSTDeclaredLengthIsNotAllocated(t *testing.T) {
	htWatchdog(t)
	srv := server.New()
	h := streamable.New(srv)
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", io.NopCloser(strings.NewReader(body)))
	r.ContentLength = 4 << 20 // declared, never sent
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated for a 4 MiB declared body")
}

// A wholebody.Body read in front of the Endpoint is served as it is: the request is
// answered from its data, its original body is never read again (it would
// fail), and a Body someone already read from is read as a plain body.
func TestPOSTTakesABodyReadInFront(t *testing.T) {
	htWatchdog(t)
	srv := server.New()
	h := streamable.New(srv)
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	post := func(body io.ReadCloser) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", body)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	data := []byte(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"` + htVersion + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	closed := &closeCounter{}
	w := post(wholebody.New(data, closed))
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), `"id":7`)
	assert.NotEmpty(t, w.Header().Get("Mcp-Session-Id"))

	partly := wholebody.New([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`), nil)
	var first [9]byte
	_, err := partly.Read(first[:]) // someone read the start: the rest is not JSON
	require.NoError(t, err)
	w = post(partly)
	assert.Equal(t, http.StatusBadRequest, w.Code, "a partly read Body is read as it stands")
}

// closeCounter is a body that fails every read and counts its closes.
type closeCounter struct{ closes int }

func (c *closeCounter) Read([]byte) (int, error) {
	return 0, errors.New("the original body must not be read")
}
func (c *closeCounter) Close() error { c.closes++; return nil }
