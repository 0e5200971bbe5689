package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

// httpConn is the client's end of a 2025-era Streamable HTTP session, as a
// [transport.Conn] for [NewClient]: Write POSTs each message to the
// endpoint, and Read returns the messages of the answers, JSON or SSE, in
// the order they arrive. It keeps the Mcp-Session-Id the server assigns in
// its answer to initialize, and sends it, with the negotiated
// MCP-Protocol-Version, on every later request. It opens no GET stream, so
// messages the server sends outside any request's stream do not reach it.
//
// Write returns once the answer's headers have arrived: a request answered
// with plain JSON blocks it until the handler is done, while one answered
// with SSE does not. Read, Write and Close are safe for concurrent use.
type httpConn struct {
	url    string
	client *http.Client
	own    bool // client is ours, to close

	ctx    context.Context // canceled by Close: ends every answer's body
	cancel context.CancelFunc
	bodies sync.WaitGroup
	in     chan transport.Message
	once   sync.Once

	mu      sync.Mutex
	session string
	version string
	initID  transport.ID // the id of the initialize request, once sent
}

var _ transport.Conn = (*httpConn)(nil)

// DialHTTP returns a Conn for the Streamable HTTP endpoint at url (the
// URL of an [net/http/httptest.Server], say), sending with client, or with
// a client of its own when nil. No request is sent yet. Write POSTs each
// message to the endpoint, and Read returns the messages of the answers,
// JSON or SSE, in the order they arrive; the Conn keeps the Mcp-Session-Id
// the server assigns in its answer to initialize (a
// [transport.SessionIDer]: empty before that answer), and sends it, with
// the negotiated MCP-Protocol-Version, on every later request. It opens no
// GET stream. Write returns once the answer's headers have arrived. The
// Conn is closed when the test ends: its session is deleted (DELETE) and
// every answer still being read is abandoned.
func DialHTTP(t testing.TB, url string, client *http.Client) transport.Conn {
	t.Helper()
	c := &httpConn{url: url, client: client, in: make(chan transport.Message, 64)}
	if c.client == nil {
		c.client, c.own = &http.Client{Transport: &http.Transport{}}, true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// SessionID returns the session's Mcp-Session-Id: empty before the answer
// to initialize.
func (c *httpConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Read returns the next message of any answer. It fails with
// [transport.ErrClosed] once the Conn is closed.
func (c *httpConn) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.ctx.Done():
		return nil, fmt.Errorf("mcptest: http read: %w", transport.ErrClosed)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Write POSTs msg and starts reading its answer. An answer that is not
// 200 or 202 is an error, unless its body is a JSON-RPC message, which is
// delivered to Read like any answer; a 404 on an established session
// wraps [transport.ErrPeerGone].
func (c *httpConn) Write(ctx context.Context, msg transport.Message) error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("mcptest: http write: %w", transport.ErrClosed)
	}
	body, err := transport.AppendMessage(nil, msg)
	if err != nil {
		return err
	}
	reqCtx, done := context.WithCancel(c.ctx) // lives until the answer is read
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		done()
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	session := c.session
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if c.version != "" {
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	if r, ok := msg.(*transport.Request); ok && r.Method == "initialize" {
		c.initID = r.ID
	}
	c.mu.Unlock()

	stop := context.AfterFunc(ctx, done) // ctx bounds only the wait for the headers
	resp, err := c.client.Do(req)
	if !stop() {
		if err == nil {
			_ = resp.Body.Close()
		}
		return context.Cause(ctx)
	}
	if err != nil {
		done()
		if c.ctx.Err() != nil {
			return fmt.Errorf("mcptest: http write: %w", transport.ErrClosed)
		}
		return fmt.Errorf("mcptest: http write: %w: %w", transport.ErrPeerGone, err)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		if c.session == "" {
			c.session = sid
		}
		c.mu.Unlock()
	}
	ctype := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted:
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		done()
		return nil
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(ctype, "text/event-stream"):
		c.bodies.Go(func() {
			defer done()
			c.readSSE(resp.Body)
		})
		return nil
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	done()
	if err != nil {
		return fmt.Errorf("mcptest: http write: read answer: %w: %w", transport.ErrPeerGone, err)
	}
	if m, derr := transport.DecodeMessage(data); derr == nil {
		c.deliver(m)
		return nil
	}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		return fmt.Errorf("mcptest: http write: %s: %w", resp.Status, transport.ErrPeerGone)
	}
	return fmt.Errorf("mcptest: http write: %s: %s", resp.Status, data)
}

// readSSE delivers the message of every event of an SSE body.
func (c *httpConn) readSSE(body io.ReadCloser) {
	defer func() { _ = body.Close() }()
	br := bufio.NewReader(body)
	var data [][]byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if m, err := transport.DecodeMessage(bytes.Join(data, []byte("\n"))); err == nil {
					c.deliver(m)
				}
			}
			data = nil
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(bytes.TrimSpace(d)) > 0 {
				data = append(data, d)
			}
		}
	}
}

// deliver hands m to Read, noting the version the answer to initialize
// negotiated.
func (c *httpConn) deliver(m transport.Message) {
	if resp, ok := m.(*transport.Response); ok && resp.Error == nil {
		c.mu.Lock()
		if c.initID.IsValid() && resp.ID == c.initID {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &r) == nil {
				c.version = r.ProtocolVersion
			}
			c.initID = transport.ID{}
		}
		c.mu.Unlock()
	}
	select {
	case c.in <- m:
	case <-c.ctx.Done():
	}
}

// Close deletes the session, if any, abandons the answers still being
// read and waits for their readers. It is idempotent and returns nil.
func (c *httpConn) Close() error {
	c.once.Do(func() {
		if sid := c.SessionID(); sid != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil); err == nil {
				req.Header.Set("Mcp-Session-Id", sid)
				if resp, err := c.client.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
			cancel()
		}
		c.cancel()
		c.bodies.Wait()
		if c.own {
			c.client.CloseIdleConnections()
		}
	})
	return nil
}
