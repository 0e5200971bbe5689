package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Client is the client's end of one MCP session, for tests. A method that
// fails calls t.Fatalf, so it must run on the test's goroutine, and reading
// ([Client.Recv] and the typed calls) is for one goroutine at a time.
type Client struct {
	t       testing.TB
	outside *outsideTest // t, for a client made outside a test
	conn    transport.Conn
	cfg     config

	mu     sync.Mutex
	nextID int64               // the last id a typed call used
	queue  []transport.Message // read by a call, not yet by Recv

	// Set by Pipe: closed when Serve has returned, with its error.
	served   chan struct{}
	serveErr error
}

// NewClient returns a client on conn, before the initialize handshake
// (see [Client.Initialize]). It closes conn when the test ends. conn must
// not be nil; t may be, outside a test (the package doc says how).
func NewClient(t testing.TB, conn transport.Conn, opts ...Option) *Client {
	var outside *outsideTest
	if t == nil {
		outside = newOutsideTest()
		t = outside
	}
	t.Helper()
	if conn == nil {
		t.Fatalf("mcptest: NewClient with a nil Conn")
	}
	c := &Client{t: t, outside: outside, conn: conn, cfg: newConfig(opts)}
	t.Cleanup(func() { _ = conn.Close() })
	return c
}

// Conn returns the client's end of the connection, for what the Client
// does not cover (reading an error after Close, say).
func (c *Client) Conn() transport.Conn { return c.conn }

// Close closes the client's end of the connection: the server sees its
// peer go away. For a client made outside a test (a nil t), it then does
// what the end of a test does: for [Pipe] and [Connect], it waits for the
// server's Serve to return. It is idempotent.
func (c *Client) Close() error {
	err := c.conn.Close()
	if c.outside != nil {
		c.outside.end()
	}
	return err
}

// Wait waits for the server's Serve to return and returns its error, for a
// client made by [Pipe] or [Connect]; it may be called any number of
// times. For a client made by [NewClient] it returns nil at once.
func (c *Client) Wait() error {
	if c.served == nil {
		return nil
	}
	<-c.served
	return c.serveErr
}

// Done returns a channel closed once the server's Serve has returned (see
// [Client.Wait]); nil, which blocks forever, for a client made by
// [NewClient].
func (c *Client) Done() <-chan struct{} { return c.served }

// ctx is the context of the client's I/O: done when the test ends.
func (c *Client) ctx() context.Context { return c.t.Context() }

// fatalf ends the test with a failure.
func (c *Client) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf(format, args...)
}

// encode turns params into JSON: nil stays absent; a string, []byte or
// json.RawMessage is taken as JSON text; anything else is marshaled.
func (c *Client) encode(v any) json.RawMessage {
	c.t.Helper()
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	case []byte:
		return v
	case string:
		return json.RawMessage(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		c.fatalf("mcptest: encode %T: %v", v, err)
	}
	return b
}

// Send writes one message as is.
func (c *Client) Send(m transport.Message) {
	c.t.Helper()
	if err := c.conn.Write(c.ctx(), m); err != nil {
		c.fatalf("mcptest: send: %v", err)
	}
}

// SendFrame writes raw bytes as one frame, valid JSON-RPC or not, for tests
// of malformed input. The Conn must have a WriteFrame method, as
// [transport/memory.Conn] has.
func (c *Client) SendFrame(frame []byte) {
	c.t.Helper()
	fw, ok := c.conn.(interface {
		WriteFrame(ctx context.Context, frame []byte) error
	})
	if !ok {
		c.fatalf("mcptest: SendFrame: %T has no WriteFrame method", c.conn)
	}
	if err := fw.WriteFrame(c.ctx(), frame); err != nil {
		c.fatalf("mcptest: send frame: %v", err)
	}
}

// Request sends a request with the given id and does not wait for the
// answer (read it with [Client.RecvResult] and the like). params is
// marshaled with [encoding/json], except that a string, []byte or
// [json.RawMessage] is sent as the JSON text it holds, and nil leaves
// params out. A request with another kind of id, a string one say, is
// sent with [Client.Send] of a [transport.Request].
func (c *Client) Request(id int64, method string, params any) {
	c.t.Helper()
	c.request(transport.Int64ID(id), method, params)
}

// request sends a request with id, params as for [Client.Request].
func (c *Client) request(id transport.ID, method string, params any) {
	c.t.Helper()
	c.Send(&transport.Request{ID: id, Method: method, Params: c.encode(params)})
}

// Notify sends a notification; params as for [Client.Request].
func (c *Client) Notify(method string, params any) {
	c.t.Helper()
	c.Send(&transport.Request{Method: method, Params: c.encode(params)})
}

// SendCallTool sends a tools/call request for tool name with id and does
// not wait. args is the arguments object, encoded as params are by
// [Client.Request]; nil sends {}.
func (c *Client) SendCallTool(id int64, name string, args any) {
	c.t.Helper()
	if args == nil {
		args = json.RawMessage("{}")
	}
	c.Request(id, "tools/call", map[string]any{"name": name, "arguments": c.encode(args)})
}

// Cancel sends notifications/cancelled for the request with id; an empty
// reason is left out.
func (c *Client) Cancel(id int64, reason string) {
	c.t.Helper()
	p := map[string]any{"requestId": id}
	if reason != "" {
		p["reason"] = reason
	}
	c.Notify("notifications/cancelled", p)
}

// Reply answers the server's request req with result, encoded as params
// are by [Client.Request] (nil sends {}). Answer with an error by sending
// a [transport.Response] whose Error is set.
func (c *Client) Reply(req *transport.Request, result any) {
	c.t.Helper()
	raw := c.encode(result)
	if raw == nil {
		raw = json.RawMessage("{}")
	}
	c.Send(&transport.Response{ID: req.ID, Result: raw})
}

// Recv returns the next message from the server, whatever it is: one a
// typed call kept, else the next one read. It fails the test if the
// connection ends first.
func (c *Client) Recv() transport.Message {
	c.t.Helper()
	c.mu.Lock()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		return m
	}
	c.mu.Unlock()
	m, err := c.conn.Read(c.ctx())
	if err != nil {
		c.fatalf("mcptest: recv: %v", err)
	}
	return m
}

// RecvResponse returns the next message, which must be a response.
func (c *Client) RecvResponse() *transport.Response {
	c.t.Helper()
	m := c.Recv()
	resp, ok := m.(*transport.Response)
	if !ok {
		c.fatalf("mcptest: want a response, got %s", describe(m))
	}
	return resp
}

// RecvResponseTo returns the next message, which must be a response to the
// request with id.
func (c *Client) RecvResponseTo(id int64) *transport.Response {
	c.t.Helper()
	resp := c.RecvResponse()
	if want := transport.Int64ID(id); resp.ID != want {
		c.fatalf("mcptest: want the response to %s, got the one to %s", want, resp.ID)
	}
	return resp
}

// RecvResult returns the result of the next message, which must be a
// successful response to the request with id.
func (c *Client) RecvResult(id int64) json.RawMessage {
	c.t.Helper()
	resp := c.RecvResponseTo(id)
	if resp.Error != nil {
		c.fatalf("mcptest: want a result for %d, got error %d: %s", id, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

// RecvError returns the error of the next message, which must be an error
// response to the request with id.
func (c *Client) RecvError(id int64) *transport.Error {
	c.t.Helper()
	resp := c.RecvResponseTo(id)
	if resp.Error == nil {
		c.fatalf("mcptest: want an error response to %d, got result %s", id, resp.Result)
	}
	return resp.Error
}

// RecvRequest returns the next message, which must be a request or a
// notification from the server.
func (c *Client) RecvRequest() *transport.Request {
	c.t.Helper()
	m := c.Recv()
	req, ok := m.(*transport.Request)
	if !ok {
		c.fatalf("mcptest: want a request or notification, got %s", describe(m))
	}
	return req
}

// describe formats a message for a failure report.
func describe(m transport.Message) string {
	b, err := transport.AppendMessage(nil, m)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Call sends a request for method with params (as for [Client.Request])
// and an id of its own, and waits for the answer: its result, or the
// JSON-RPC error object. Meanwhile it answers the server's requests (see
// [WithRequestHandler]) and keeps every other message for [Client.Recv].
// Ids are 1, 2, 3, ... in order of the calls; a test that also picks ids
// itself should pick others.
func (c *Client) Call(method string, params any) (json.RawMessage, *transport.Error) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := transport.Int64ID(c.nextID)
	c.mu.Unlock()
	c.request(id, method, params)
	return c.await(id)
}

// await reads until the response to id, answering server requests and
// keeping the rest.
func (c *Client) await(id transport.ID) (json.RawMessage, *transport.Error) {
	c.t.Helper()
	var kept []transport.Message
	defer func() {
		c.mu.Lock()
		c.queue = append(c.queue, kept...)
		c.mu.Unlock()
	}()
	for {
		m, err := c.conn.Read(c.ctx())
		if err != nil {
			c.fatalf("mcptest: waiting for the response to %s: %v", id, err)
		}
		switch m := m.(type) {
		case *transport.Response:
			if m.ID == id {
				return m.Result, m.Error
			}
		case *transport.Request:
			if !m.IsNotification() {
				c.answer(m)
				continue
			}
		}
		kept = append(kept, m)
	}
}

// answer replies to a server request with the handler of WithRequestHandler.
func (c *Client) answer(req *transport.Request) {
	c.t.Helper()
	h := c.cfg.onRequest
	if h == nil {
		h = defaultHandler
	}
	res, err := h(c.ctx(), req)
	if err != nil {
		var rpc *transport.Error
		if !errors.As(err, &rpc) {
			rpc = &transport.Error{Code: int64(protocol.CodeInternal), Message: err.Error()}
		}
		c.Send(&transport.Response{ID: req.ID, Error: rpc})
		return
	}
	c.Reply(req, res)
}

func defaultHandler(_ context.Context, req *transport.Request) (any, error) {
	if req.Method == "ping" {
		return struct{}{}, nil
	}
	return nil, &transport.Error{Code: int64(protocol.CodeMethodNotFound), Message: "mcptest: the client does not handle " + req.Method}
}
