package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"testing"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A minimal MCP client for the fixture tests: one session with the fixture
// server over the memory transport, speaking either era.

// era is a protocol era the fixtures are checked in.
type era struct {
	name      string
	stateless bool // 2026-07-28 stateless requests; else a 2025-11-25 session
}

func eras() []era {
	return []era{{name: "2025-11-25", stateless: false}, {name: "2026-07-28", stateless: true}}
}

// defaultCaps are the client capabilities the conformance suite declares.
func defaultCaps() map[string]any {
	return map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{"listChanged": true}}
}

// serverInfoMeta is the _meta of every 2026-07-28 result.
const serverInfoMeta = `{"io.modelcontextprotocol/serverInfo":{"name":"vigil-everything","version":"dev"}}`

// fixtureClient is one session with a fresh fixture server.
type fixtureClient struct {
	t         testing.TB
	conn      *memory.Conn
	served    chan error
	nextID    int64
	stateless bool
	// caps are the client's capabilities: declared in initialize, or in
	// the _meta of each stateless request.
	caps map[string]any
	// logLevel is the _meta log level of stateless requests; "" for none.
	logLevel string
}

// startFixtures serves a fresh fixture server and, for a 2025 session,
// initializes it with caps (the suite's defaults when nil).
func startFixtures(t testing.TB, e era, caps map[string]any) *fixtureClient {
	t.Helper()
	srv, err := newServer(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	client, conn := memory.NewPair()
	if caps == nil {
		caps = defaultCaps()
	}
	c := &fixtureClient{t: t, conn: client, served: make(chan error, 1), stateless: e.stateless, caps: caps}
	go func() { c.served <- srv.Serve(context.Background(), conn) }()
	if !e.stateless {
		id := c.send("initialize", map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    caps,
			"clientInfo":      map[string]any{"name": "fixture-test", "version": "1"},
		})
		c.result(id)
		c.notify("notifications/initialized", nil)
	}
	return c
}

// stop ends the session and requires a clean end.
func (c *fixtureClient) stop() {
	c.t.Helper()
	require.NoError(c.t, c.conn.Close())
	require.NoError(c.t, <-c.served)
}

// meta is the _meta of a stateless request.
func (c *fixtureClient) meta() map[string]any {
	m := map[string]any{
		vocab.MetaProtocolVersion:    protocol.Version20260728,
		vocab.MetaClientCapabilities: c.caps,
		vocab.MetaClientInfo:         map[string]any{"name": "fixture-test", "version": "1"},
	}
	if c.logLevel != "" {
		m[vocab.MetaLogLevel] = c.logLevel
	}
	return m
}

// send sends a request and returns its id. A stateless client adds its
// _meta to params (keeping any _meta entries params has, like a progress
// token); initialize is sent as it is.
func (c *fixtureClient) send(method string, params map[string]any) int64 {
	c.t.Helper()
	c.nextID++
	params = maps.Clone(params)
	if c.stateless && method != "initialize" {
		if params == nil {
			params = map[string]any{}
		}
		meta := c.meta()
		if extra, ok := params["_meta"].(map[string]any); ok {
			maps.Copy(meta, extra)
		}
		params["_meta"] = meta
	}
	m := &transport.Request{ID: transport.Int64ID(c.nextID), Method: method}
	if params != nil {
		raw, err := json.Marshal(params)
		require.NoError(c.t, err)
		m.Params = raw
	}
	require.NoError(c.t, c.conn.Write(context.Background(), m))
	return c.nextID
}

// notify sends a notification.
func (c *fixtureClient) notify(method string, params any) {
	c.t.Helper()
	m := &transport.Request{Method: method}
	if params != nil {
		raw, err := json.Marshal(params)
		require.NoError(c.t, err)
		m.Params = raw
	}
	require.NoError(c.t, c.conn.Write(context.Background(), m))
}

// read returns the next message from the server.
func (c *fixtureClient) read() transport.Message {
	c.t.Helper()
	m, err := c.conn.Read(context.Background())
	require.NoError(c.t, err)
	return m
}

// response reads the next message and requires it to be the response to
// id.
func (c *fixtureClient) response(id int64) *transport.Response {
	c.t.Helper()
	m := c.read()
	resp, ok := m.(*transport.Response)
	require.True(c.t, ok, "want the response to %d, got %s", id, encode(c.t, m))
	require.Equal(c.t, transport.Int64ID(id), resp.ID)
	return resp
}

// result reads the response to id and requires a result.
func (c *fixtureClient) result(id int64) json.RawMessage {
	c.t.Helper()
	resp := c.response(id)
	require.Nil(c.t, resp.Error, "want a result for %d, got error %+v", id, resp.Error)
	return resp.Result
}

// rpcError reads the response to id and requires an error.
func (c *fixtureClient) rpcError(id int64) *transport.Error {
	c.t.Helper()
	resp := c.response(id)
	require.NotNil(c.t, resp.Error, "want an error for %d, got %s", id, resp.Result)
	return resp.Error
}

// call sends a request and returns its result.
func (c *fixtureClient) call(method string, params map[string]any) json.RawMessage {
	c.t.Helper()
	return c.result(c.send(method, params))
}

// callTool calls a tool; args nil leaves arguments out.
func (c *fixtureClient) callTool(name string, args map[string]any) json.RawMessage {
	c.t.Helper()
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	return c.call("tools/call", params)
}

// notification reads the next message and requires a notification.
func (c *fixtureClient) notification() *transport.Request {
	c.t.Helper()
	m := c.read()
	n, ok := m.(*transport.Request)
	require.True(c.t, ok && n.IsNotification(), "want a notification, got %s", encode(c.t, m))
	return n
}

// serverRequest reads the next message and requires a server-to-client
// request for method.
func (c *fixtureClient) serverRequest(method string) *transport.Request {
	c.t.Helper()
	m := c.read()
	r, ok := m.(*transport.Request)
	require.True(c.t, ok && !r.IsNotification(), "want a %s request, got %s", method, encode(c.t, m))
	require.Equal(c.t, method, r.Method)
	return r
}

// reply answers a server-to-client request.
func (c *fixtureClient) reply(r *transport.Request, result string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.Write(context.Background(), &transport.Response{ID: r.ID, Result: json.RawMessage(result)}))
}

// want returns the result JSON the client gets for base, the result in the
// 2025 shape: a stateless result also carries resultType "complete" (unless
// base names one), the server's info in _meta and, for cacheable methods,
// cache hints.
func (c *fixtureClient) want(method, base string) string {
	c.t.Helper()
	if !c.stateless {
		return base
	}
	var fields map[string]json.RawMessage
	require.NoError(c.t, json.Unmarshal([]byte(base), &fields))
	if _, ok := fields["resultType"]; !ok {
		fields["resultType"] = json.RawMessage(`"complete"`)
	}
	if _, ok := fields["_meta"]; !ok {
		fields["_meta"] = json.RawMessage(serverInfoMeta)
	}
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		fields["ttlMs"] = json.RawMessage(`0`)
		fields["cacheScope"] = json.RawMessage(`"private"`)
	}
	out, err := json.Marshal(fields)
	require.NoError(c.t, err)
	return string(out)
}

// encode renders a message for failure messages.
func encode(t testing.TB, m transport.Message) string {
	t.Helper()
	b, err := transport.AppendMessage(nil, m)
	require.NoError(t, err)
	return string(b)
}

// inputRequired is the shape of an input_required result.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// asInputRequired decodes an input_required result and requires a
// requestState.
func asInputRequired(t testing.TB, raw json.RawMessage) inputRequired {
	t.Helper()
	var r inputRequired
	require.NoError(t, json.Unmarshal(raw, &r))
	require.Equal(t, "input_required", r.ResultType, "result: %s", raw)
	require.NotEmpty(t, r.RequestState, "result: %s", raw)
	return r
}
