package oauth_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// e2e is a real server behind the guard and the streamable endpoint.
type e2e struct {
	t   *testing.T
	url string
	reg *prometheus.Registry
}

func newE2E(t *testing.T, mutate ...func(*oauth.Config)) *e2e {
	t.Helper()
	srv := server.New(
		server.WithListChangedDelay(0),
		server.WithMiddleware(auth.Middleware()),
		server.WithToolAccess(auth.ToolAccess),
	)
	whoami := func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		p, ok := auth.PrincipalFromContext(ctx)
		if !ok {
			return server.Text("nobody"), nil
		}
		return server.Text(p.Subject), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "whoami"}, whoami))
	require.NoError(t, srv.AddTool(server.Tool{Name: "deploy", Scopes: []string{"deploy"}}, whoami))

	reg := prometheus.NewPedanticRegistry()
	x := &auth.Principal{Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp"}}
	x2 := *x // a refreshed token of the same principal
	cfg := oauth.Config{
		Resource:             "http://127.0.0.1/mcp",
		AuthorizationServers: []string{"https://as.example.com"},
		Verifier: &fakeVerifier{principals: map[string]*auth.Principal{
			"x1": x, "x2": &x2,
			"y":      {Issuer: "https://as.example.com", Subject: "bob", Scopes: []string{"mcp", "deploy"}},
			"no-mcp": {Issuer: "https://as.example.com", Subject: "carol", Scopes: []string{"deploy"}},
		}},
		Scopes:     []string{"mcp"},
		Tools:      srv,
		Registerer: reg,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	rs, err := oauth.New(cfg)
	require.NoError(t, err)

	ep, guarded := rs.Endpoint(srv)
	mux := http.NewServeMux()
	mux.Handle("/mcp", guarded)
	for p, h := range rs.MetadataHandlers() {
		mux.Handle(p, h)
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = ep.Close()
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	return &e2e{t: t, url: ts.URL, reg: reg}
}

type e2eReply struct {
	status int
	header http.Header
	msg    struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// rawReply is an answer as a client sees it, byte for byte.
type rawReply struct {
	status int
	header http.Header
	body   []byte
}

func (e *e2e) raw(token, body string, hdr map[string]string) rawReply {
	e.t.Helper()
	r, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.url+"/mcp", strings.NewReader(body))
	require.NoError(e.t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	require.NoError(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	h := resp.Header.Clone()
	h.Del("Date")
	return rawReply{status: resp.StatusCode, header: h, body: b}
}

// tasksMeta2026 is the _meta member of a 2026-07-28 request from a client
// that supports tasks.
const tasksMeta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
	`","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// headers2026 are the routing headers of a 2026-07-28 request.
func headers2026(method, name string) map[string]string {
	return map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": method, "Mcp-Name": name}
}

// post sends body as token with the extra headers, and decodes the answer:
// a JSON message or the last message of an SSE stream.
func (e *e2e) post(token, body string, hdr map[string]string) e2eReply {
	e.t.Helper()
	reply := e.raw(token, body, hdr)
	raw := reply.body
	out := e2eReply{status: reply.status, header: reply.header}
	if strings.HasPrefix(reply.header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		raw = last
	}
	// 202 has no body, and an unknown session's 404 is plain text.
	if len(raw) > 0 && out.status != http.StatusAccepted && !strings.HasPrefix(reply.header.Get("Content-Type"), "text/plain") {
		require.NoError(e.t, json.Unmarshal(raw, &out.msg), "%s", raw)
	}
	return out
}

func toolNames(t *testing.T, result json.RawMessage) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(result, &res), "%s", result)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(result, &res), "%s", result)
	require.Len(t, res.Content, 1)
	return res.Content[0].Text
}

func (e *e2e) failures(reason oauth.Reason) float64 {
	e.t.Helper()
	n, err := testutil.GatherAndCount(e.reg)
	require.NoError(e.t, err)
	require.Equal(e.t, len(oauth.Reasons()), n, "every reason is pre-created")
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, m := range mfs[0].GetMetric() {
		if m.GetLabel()[0].GetValue() == reason.String() {
			return m.GetCounter().GetValue()
		}
	}
	e.t.Fatalf("no series for %s", reason)
	return 0
}

// A 2025 session: tools/list is filtered for its principal, the handler
// sees the principal, a refreshed token of the same principal continues
// the session, and another principal presenting the session id gets 404,
// counted as session_principal_mismatch.
func TestEndToEndSession(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	init := e.post("x1", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+
		`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, init.status)
	sid := init.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	in := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
	require.Equal(t, http.StatusAccepted, e.post("x1", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in).status)

	list := e.post("x1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, in)
	require.Equal(t, http.StatusOK, list.status)
	assert.Equal(t, []string{"whoami"}, toolNames(t, list.msg.Result))

	who := e.post("x2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}`, in)
	require.Equal(t, http.StatusOK, who.status, "a refreshed token continues the session")
	assert.Equal(t, "alice", callText(t, who.msg.Result))

	denied := e.post("x1", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"deploy"}}`, in)
	assert.Equal(t, http.StatusForbidden, denied.status)
	_, params, err := wwwauth.Parse(denied.header.Get("WWW-Authenticate"))
	require.NoError(t, err)
	assert.Equal(t, "mcp deploy", params["scope"])
	assert.InDelta(t, 1, e.failures(oauth.ReasonInsufficientScope), 0)

	other := e.post("y", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, in)
	assert.Equal(t, http.StatusNotFound, other.status)
	assert.InDelta(t, 1, e.failures(oauth.ReasonSessionPrincipalMismatch), 0)

	again := e.post("x1", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, in)
	assert.Equal(t, http.StatusOK, again.status, "the session survives the other principal's attempt")
}

// A 2026-07-28 stateless request: tools/list is filtered per principal,
// and an allowed scoped tool runs as its caller.
func TestEndToEndStateless(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}}`
	hdr := func(method, name string) map[string]string {
		h := map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	listBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	for token, want := range map[string][]string{"x1": {"whoami"}, "y": {"deploy", "whoami"}} {
		r := e.post(token, listBody, hdr("tools/list", ""))
		require.Equal(t, http.StatusOK, r.status, token)
		require.Nil(t, r.msg.Error, token)
		assert.Equal(t, want, toolNames(t, r.msg.Result), token)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy",` + meta + `}}`
	r := e.post("y", call, hdr("tools/call", "deploy"))
	require.Equal(t, http.StatusOK, r.status)
	require.Nil(t, r.msg.Error)
	assert.Equal(t, "bob", callText(t, r.msg.Result))
	assert.Equal(t, http.StatusForbidden, e.post("x1", call, hdr("tools/call", "deploy")).status)

	// The guard reads a 2026-07-28 request's tool from its Mcp-Method and
	// Mcp-Name headers; headers that lie about the body get past the guard
	// but not the transport, and the tool never runs.
	for _, h := range []map[string]string{hdr("tools/call", "whoami"), hdr("tools/list", ""), hdr("tools/call", "")} {
		lie := e.post("x1", call, h)
		assert.Equal(t, http.StatusBadRequest, lie.status, "%v", h)
		require.NotNil(t, lie.msg.Error, "%v", h)
		assert.Equal(t, int(protocol.CodeHeaderMismatch), int(lie.msg.Error.Code), "%v", h)
	}
}

// A 2026-07-28 task belongs to no session: with server.WithCallerKey
// (auth.CallerKey) it answers only the principal that created it. Another
// principal presenting its id gets an unknown task from tasks/get,
// tasks/update and tasks/cancel, and never the result.
func TestEndToEndTaskOfAnotherPrincipal(t *testing.T) {
	t.Parallel()
	srv := server.New(server.WithMiddleware(auth.Middleware()),
		server.WithToolAccess(auth.ToolAccess), server.WithCallerKey(auth.CallerKey))
	secret := func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		p, _ := auth.PrincipalFromContext(ctx)
		return server.Text("SECRET of " + p.Subject), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{
		Name: "deploy", Scopes: []string{"deploy"},
		Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional},
	}, secret))
	rs, err := oauth.New(oauth.Config{
		Resource: "http://127.0.0.1/mcp", AuthorizationServers: []string{"https://as.example.com"},
		Verifier: &fakeVerifier{principals: map[string]*auth.Principal{
			"alice": {Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp"}},
			"bob":   {Issuer: "https://as.example.com", Subject: "bob", Scopes: []string{"mcp", "deploy"}},
		}},
		Scopes: []string{"mcp"}, Tools: srv,
	})
	require.NoError(t, err)
	ep, guarded := rs.Endpoint(srv, streamable.WithPrincipal(auth.SessionPrincipal))
	ts := httptest.NewServer(guarded)
	t.Cleanup(func() {
		_ = ep.Close()
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Close()
	})
	e := &e2e{t: t, url: ts.URL}
	meta, hdr := tasksMeta2026, headers2026
	c := e.post("bob", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy",`+meta+`}}`, hdr("tools/call", "deploy"))
	require.Equal(t, http.StatusOK, c.status)
	require.Nil(t, c.msg.Error)
	var task struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(c.msg.Result, &task), "%s", c.msg.Result)
	require.NotEmpty(t, task.TaskID, "%s", c.msg.Result)
	id := task.TaskID

	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`
	var done json.RawMessage
	for range 10000 { // the handler returns at once: poll until bob's task is done
		r := e.post("bob", get, hdr("tasks/get", id))
		require.Nil(t, r.msg.Error)
		require.NoError(t, json.Unmarshal(r.msg.Result, &task))
		if task.Status == "completed" {
			done = r.msg.Result
			break
		}
	}
	require.Contains(t, string(done), "SECRET of bob")

	for _, body := range []string{
		get,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"` + id + `","inputResponses":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"taskId":"` + id + `",` + meta + `}}`,
	} {
		var method struct {
			Method string `json:"method"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &method))
		r := e.post("alice", body, hdr(method.Method, id))
		require.NotNil(t, r.msg.Error, "%s: %s", method.Method, r.msg.Result)
		assert.Equal(t, int64(protocol.CodeInvalidParams), r.msg.Error.Code, method.Method)
		assert.Contains(t, r.msg.Error.Message, "unknown task", method.Method)
		assert.NotContains(t, string(r.msg.Result), "SECRET", method.Method)
	}
}
