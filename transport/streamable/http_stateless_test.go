package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

const htV26 = "2026-07-28"

// htMeta26 is the full _meta of a 2026-07-28 request.
const htMeta26 = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"ht","version":"1"}}`

// htSL is a stateless request body: params is an object without _meta,
// meta the _meta to add ("" for none).
func htSL(id int, method, params, meta string) string {
	if meta != "" {
		if params == `{}` {
			params = `{"_meta":` + meta + `}`
		} else {
			params = params[:len(params)-1] + `,"_meta":` + meta + `}`
		}
	}
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`
}

// htSLHeaders are the headers of a stateless request.
func htSLHeaders(method, name string) htH {
	h := htH{"MCP-Protocol-Version": htV26, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// htStatelessServer adds a tool that needs the client's sampling capability
// and one that reports progress.
func htStatelessServer(t *testing.T) *server.Server {
	srv := htServer(t)
	require.NoError(t, srv.AddTool(server.Tool{Name: "needs_sampling"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		var out json.RawMessage
		if err := server.CallClient(ctx, "sampling/createMessage", map[string]any{"messages": []any{}, "maxTokens": 1}, &out); err != nil {
			return nil, err
		}
		return server.Text("sampled"), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "count"}, htCountTool))
	return srv
}

// A stateless request is validated in the order C12 observes (missing
// version header, _meta, header/meta mismatch, unsupported version, unknown
// method, missing capability, routing headers), each error with its status
// and code, and the request's id.
func TestHTTPStatelessValidation(t *testing.T) {
	e := newHTEnv(t, htStatelessServer(t))
	v999 := `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`
	noVersion := `{"io.modelcontextprotocol/clientCapabilities":{}}`
	noCaps := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	noInfo := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	echo := `{"name":"echo","arguments":{"text":"hi"}}`
	with := func(h htH, kv ...string) htH {
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}

	tests := []struct {
		name   string
		body   string
		hdr    htH
		status int
		code   int64 // 0: success
		data   string
		anyID  bool // a 2025-era error, which may have a null id
	}{
		// 1. The version header.
		{"no version header, _meta names 2026", htSL(101, "tools/list", `{}`, htMeta26), with(htSLHeaders("tools/list", ""), "MCP-Protocol-Version", ""), 400, -32020, "", false},
		{"no version header, no _meta: a 2025 request without session", htSL(102, "tools/list", `{}`, ""), htH{"Mcp-Method": "tools/list"}, 400, -32600, "", true},
		// 2. _meta.
		{"no _meta", htSL(103, "server/discover", `{}`, ""), htSLHeaders("server/discover", ""), 400, -32602, "", false},
		{"_meta without protocolVersion", htSL(104, "server/discover", `{}`, noVersion), htSLHeaders("server/discover", ""), 400, -32602, "", false},
		{"_meta without clientCapabilities", htSL(105, "server/discover", `{}`, noCaps), htSLHeaders("server/discover", ""), 400, -32602, "", false},
		{"no _meta and no Mcp-Method", htSL(106, "server/discover", `{}`, ""), with(htSLHeaders("server/discover", ""), "Mcp-Method", ""), 400, -32602, "", false},
		{"clientInfo is optional", htSL(107, "server/discover", `{}`, noInfo), htSLHeaders("server/discover", ""), 200, 0, "", false},
		// 3. Header and _meta disagree: checked before the version.
		{"header 2026, meta v999", htSL(302, "server/discover", `{}`, v999), htSLHeaders("server/discover", ""), 400, -32020, "", false},
		// 4. Unsupported version.
		{"unsupported version", htSL(301, "server/discover", `{}`, v999), with(htSLHeaders("server/discover", ""), "MCP-Protocol-Version", "v999.0.0"), 400, -32022, "", false},
		// 5. Unknown and removed methods.
		{"initialize", htSL(500, "initialize", `{}`, htMeta26), htSLHeaders("initialize", ""), 404, -32601, "", false},
		{"ping", htSL(501, "ping", `{}`, htMeta26), htSLHeaders("ping", ""), 404, -32601, "", false},
		{"logging/setLevel", htSL(502, "logging/setLevel", `{"level":"info"}`, htMeta26), htSLHeaders("logging/setLevel", ""), 404, -32601, "", false},
		{"resources/subscribe", htSL(503, "resources/subscribe", `{"uri":"test://x"}`, htMeta26), htSLHeaders("resources/subscribe", ""), 404, -32601, "", false},
		{"resources/unsubscribe", htSL(504, "resources/unsubscribe", `{"uri":"test://x"}`, htMeta26), htSLHeaders("resources/unsubscribe", ""), 404, -32601, "", false},
		{"unknown/method", htSL(601, "unknown/method", `{}`, htMeta26), htSLHeaders("unknown/method", ""), 404, -32601, "", false},
		// 6. Missing client capability.
		{"missing capability", htSL(401, "tools/call", `{"name":"needs_sampling","arguments":{}}`, htMeta26), htSLHeaders("tools/call", "needs_sampling"), 400, -32021, `{"requiredCapabilities":{"sampling":{}}}`, false},
		// Routing headers.
		{"Mcp-Method missing", htSL(701, "tools/list", `{}`, htMeta26), with(htSLHeaders("tools/list", ""), "Mcp-Method", ""), 400, -32020, "", false},
		{"Mcp-Method mismatch", htSL(702, "tools/list", `{}`, htMeta26), htSLHeaders("prompts/list", ""), 400, -32020, "", false},
		{"Mcp-Method case differs", htSL(703, "tools/list", `{}`, htMeta26), htSLHeaders("TOOLS/LIST", ""), 400, -32020, "", false},
		{"Mcp-Name mismatch", htSL(704, "tools/call", echo, htMeta26), htSLHeaders("tools/call", "wrong_tool_name"), 400, -32020, "", false},
		{"Mcp-Name missing", htSL(705, "tools/call", echo, htMeta26), htSLHeaders("tools/call", ""), 400, -32020, "", false},
		{"Mcp-Name trimmed", htSL(706, "tools/call", echo, htMeta26), htSLHeaders("tools/call", "  echo  "), 200, 0, "", false},
		{"Mcp-Name exact", htSL(707, "tools/call", echo, htMeta26), htSLHeaders("tools/call", "echo"), 200, 0, "", false},
		{"Mcp-Method on a plain request", htSL(708, "tools/list", `{}`, htMeta26), htSLHeaders("tools/list", ""), 200, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, tt.body, tt.hdr)
			var req htMsg
			require.NoError(t, json.Unmarshal([]byte(tt.body), &req))
			if tt.code == 0 {
				require.Equal(t, tt.status, r.status, "%s", r.body)
				m := htDecode(t, r.body)
				require.Nil(t, m.Error, "%s", r.body)
				assert.JSONEq(t, string(req.ID), string(m.ID))
				assert.Contains(t, string(m.Result), `"resultType":"complete"`)
				return
			}
			m := htRPCError(t, r, tt.status, tt.code)
			if !tt.anyID {
				assert.JSONEq(t, string(req.ID), string(m.ID), "the error's id is the request's")
			}
			if tt.data != "" {
				assert.JSONEq(t, tt.data, string(m.Error.Data))
			}
		})
	}
}

// The unsupported-version error lists the supported versions, which
// server/discover also lists, and echoes the requested one.
func TestHTTPStatelessUnsupportedVersionData(t *testing.T) {
	e := newHTEnv(t, nil)
	v999 := `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`
	hdr := htSLHeaders("server/discover", "")
	hdr["MCP-Protocol-Version"] = "v999.0.0"
	m := htRPCError(t, e.do(http.MethodPost, htSL(301, "server/discover", `{}`, v999), hdr), http.StatusBadRequest, -32022)
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	require.NoError(t, json.Unmarshal(m.Error.Data, &data), "%s", m.Error.Data)
	assert.Equal(t, "v999.0.0", data.Requested)
	require.NotEmpty(t, data.Supported)
	assert.Contains(t, data.Supported, htV26)

	r := e.do(http.MethodPost, htSL(201, "server/discover", `{}`, htMeta26), htSLHeaders("server/discover", ""))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var discover struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	require.NoError(t, json.Unmarshal(htDecode(t, r.body).Result, &discover))
	assert.Subset(t, discover.SupportedVersions, data.Supported)
}

// Header names are case-insensitive: mcp-method and MCP-METHOD are
// accepted.
func TestHTTPStatelessHeaderNameCase(t *testing.T) {
	e := newHTEnv(t, nil)
	for _, name := range []string{"mcp-method", "MCP-METHOD", "Mcp-Method"} {
		t.Run(name, func(t *testing.T) {
			req := e.request(t.Context(), http.MethodPost, htSL(800, "tools/list", `{}`, htMeta26), htH{})
			req.Header["mcp-protocol-version"] = []string{htV26} // sent as written
			req.Header[name] = []string{"tools/list"}
			r := e.doReq(req)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			m := htDecode(t, r.body)
			assert.Nil(t, m.Error)
			assert.Contains(t, string(m.Result), `"name":"echo"`)
		})
	}
}

// GET and DELETE do not exist in 2026-07-28: 405, Allow: POST.
func TestHTTPStatelessGETAndDELETE(t *testing.T) {
	e := newHTEnv(t, nil)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			r := e.do(method, "", htH{"MCP-Protocol-Version": htV26, "Mcp-Session-Id": "ignored"})
			htRPCError(t, r, http.StatusMethodNotAllowed, -32600)
			assert.Equal(t, "POST", r.header.Get("Allow"))
		})
	}
}

// A stateless request's progress and result travel as SSE events on its
// own POST; a notification is accepted with 202.
func TestHTTPStatelessProgressStream(t *testing.T) {
	e := newHTEnv(t, htStatelessServer(t))
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := e.send(e.request(t.Context(), http.MethodPost, body, htSLHeaders("tools/call", "count")))
	defer func() { _ = resp.Body.Close() }()
	msgs := htStream(t, resp).rest()
	require.Len(t, msgs, 4, "%+v", msgs)
	for i, m := range msgs[:3] {
		assert.Equal(t, "notifications/progress", m.Method)
		assert.JSONEq(t, `{"progressToken":"p","progress":`+strconv.Itoa(i+1)+`,"total":3}`, string(m.Params))
	}
	assert.JSONEq(t, `9`, string(msgs[3].ID))
	var res struct {
		Content    json.RawMessage `json:"content"`
		ResultType string          `json:"resultType"`
	}
	require.NoError(t, json.Unmarshal(msgs[3].Result, &res))
	assert.JSONEq(t, `[{"type":"text","text":"done"}]`, string(res.Content))
	assert.Equal(t, "complete", res.ResultType)

	n := e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, htSLHeaders("notifications/cancelled", ""))
	assert.Equal(t, http.StatusAccepted, n.status)
	assert.Empty(t, n.body)
}

// htTap records what a handler writes to its response.
type htTap struct {
	http.ResponseWriter
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *htTap) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

func (w *htTap) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *htTap) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Closing the SSE stream of a stateless tools/call cancels its handler with
// the transport-close cause, and nothing more is written for it: the
// handler's later progress and result go nowhere.
func TestHTTPStatelessStreamCloseCancels(t *testing.T) {
	htWatchdog(t)
	srv := htServer(t)
	started, cause, late := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "tick"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		if err := server.ReportProgress(ctx, 1, 0, "first"); err != nil {
			return nil, err
		}
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		late <- server.ReportProgress(ctx, 2, 0, "late")
		return server.Text("too late"), nil
	}))
	written := make(chan []byte, 1)
	h := newHTEnvHandler(t, srv, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tap := &htTap{ResponseWriter: w}
			next.ServeHTTP(tap, r)
			tap.mu.Lock()
			written <- bytes.Clone(tap.buf.Bytes())
			tap.mu.Unlock()
		})
	})

	ctx, cancel := context.WithCancel(t.Context())
	body := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"tick","arguments":{},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := h.send(h.request(ctx, http.MethodPost, body, htSLHeaders("tools/call", "tick")))
	stream := htStream(t, resp)
	first := stream.nextMsg()
	assert.JSONEq(t, `{"progressToken":1,"progress":1,"message":"first"}`, string(first.Params))
	<-started
	cancel()
	_ = resp.Body.Close()

	require.ErrorIs(t, <-cause, server.ErrStreamClose)
	require.NoError(t, <-late, "ReportProgress after cancellation sends nothing and succeeds")
	out := <-written
	var events []htMsg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && len(bytes.TrimSpace(data)) > 0 {
			events = append(events, htDecode(t, data))
		}
	}
	require.Len(t, events, 1, "only the first progress was written:\n%s", out)
	assert.Equal(t, "notifications/progress", events[0].Method)
	assert.NotContains(t, string(out), "too late")
}

// newHTEnvHandler is newHTEnv with the Endpoint wrapped by wrap.
func newHTEnvHandler(t *testing.T, srv *server.Server, wrap func(http.Handler) http.Handler) *htEnv {
	t.Helper()
	e := newHTEnv(t, srv)
	ts := httptest.NewServer(wrap(e.h))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	e.ts, e.client = ts, ts.Client()
	return e
}

// A stateless request whose own deadline passes (server.Request.SetDeadline,
// as the Timeout middleware sets it) is answered -32001 on its POST; its
// handler saw the deadline, DeadlineExceeded and the cause
// ErrHandlerTimeout. Its context is its single session's, so this is the
// path that arms the deadline on a session context.
func TestHTTPStatelessDeadline(t *testing.T) {
	srv := htServer(t, server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			req.SetDeadline(time.Now().Add(50 * time.Millisecond))
			return next(ctx, req)
		}
	}))
	type seen struct {
		hasDL bool
		err   error
		cause error
	}
	got := make(chan seen, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		_, ok := ctx.Deadline()
		<-ctx.Done()
		got <- seen{hasDL: ok, err: ctx.Err(), cause: context.Cause(ctx)}
		return server.Text("too late"), nil
	}))
	e := newHTEnv(t, srv)
	resp := e.send(e.request(t.Context(), http.MethodPost, htSL(7, "tools/call", `{"name":"block","arguments":{}}`, htMeta26), htSLHeaders("tools/call", "block")))
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	msg := htDecode(t, raw)
	require.NotNil(t, msg.Error, "%s", raw)
	assert.Equal(t, int64(-32001), msg.Error.Code)
	s := <-got
	assert.True(t, s.hasDL)
	require.ErrorIs(t, s.err, context.DeadlineExceeded)
	assert.Same(t, server.ErrHandlerTimeout, s.cause)
}
