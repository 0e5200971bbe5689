package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// A raw Streamable HTTP client (2025-11-25 era) for the end-to-end test:
// plain net/http and JSON-RPC, so that what the test counts is exactly what
// went over the wire.

// rpcMessage is a JSON-RPC message as the client reads it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// e2eClient is one MCP session over Streamable HTTP.
type e2eClient struct {
	url     string
	hc      *http.Client
	session string         // Mcp-Session-Id, set by initialize
	caps    map[string]any // the capabilities initialize declares; nil: none
	nextID  atomic.Int64
}

func newE2EClient(url string, hc *http.Client) *e2eClient {
	return &e2eClient{url: url, hc: hc}
}

// post sends one JSON-RPC message and returns the HTTP response; the caller
// closes its body.
func (c *e2eClient) post(ctx context.Context, msg any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return c.hc.Do(req)
}

// request builds a request with a fresh id.
func (c *e2eClient) request(method string, params map[string]any) (int64, map[string]any) {
	id := c.nextID.Add(1)
	return id, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

// initialize opens the session and sends notifications/initialized.
func (c *e2eClient) initialize(ctx context.Context) error {
	caps := c.caps
	if caps == nil {
		caps = map[string]any{}
	}
	id, msg := c.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "vigil-e2e", "version": "1"},
	})
	resp, err := c.post(ctx, msg)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: HTTP %s", resp.Status)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	if c.session == "" {
		return errors.New("initialize: no Mcp-Session-Id")
	}
	m, err := readResponse(resp, id, nil)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if m.Error != nil {
		return fmt.Errorf("initialize: error %d %s", m.Error.Code, m.Error.Message)
	}
	return c.notify(ctx, "notifications/initialized", nil)
}

// notify sends a notification and requires 202 Accepted.
func (c *e2eClient) notify(ctx context.Context, method string, params map[string]any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	resp, err := c.post(ctx, msg)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: HTTP %s, want 202", method, resp.Status)
	}
	return nil
}

// callTool calls a tool with params._meta.traceparent set (when not empty)
// and returns the response.
func (c *e2eClient) callTool(ctx context.Context, name string, args map[string]any, traceparent string) (rpcMessage, error) {
	id, msg := c.request("tools/call", toolParams(name, args, traceparent, ""))
	resp, err := c.post(ctx, msg)
	if err != nil {
		return rpcMessage{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return rpcMessage{}, fmt.Errorf("tools/call %s: HTTP %s", name, resp.Status)
	}
	return readResponse(resp, id, nil)
}

// pendingCall is a tools/call whose POST is under way.
type pendingCall struct {
	id    int64
	abort context.CancelFunc // abandons the POST
	done  chan callEnd       // receives how the POST ended, once
}

// callEnd is how a POST ended: with a response (msg), without one (msg nil:
// the response body ended with no message for the call), or with err (the
// POST failed or was abandoned).
type callEnd struct {
	msg *rpcMessage
	err error
}

// startCall posts a tools/call on a goroutine of its own; the call's end
// arrives on the returned call's done channel.
func (c *e2eClient) startCall(ctx context.Context, name string, args map[string]any, traceparent string) *pendingCall {
	callCtx, abort := context.WithCancel(ctx)
	id, msg := c.request("tools/call", toolParams(name, args, traceparent, ""))
	p := &pendingCall{id: id, abort: abort, done: make(chan callEnd, 1)}
	go func() {
		defer abort()
		resp, err := c.post(callCtx, msg)
		if err != nil {
			p.done <- callEnd{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			p.done <- callEnd{err: fmt.Errorf("tools/call %s: HTTP %s: %s", name, resp.Status, body)}
			return
		}
		m, err := readResponse(resp, id, nil)
		switch {
		case errors.Is(err, io.EOF):
			p.done <- callEnd{} // no response
		case err != nil:
			p.done <- callEnd{err: err}
		default:
			p.done <- callEnd{msg: &m}
		}
	}()
	return p
}

// cancelledPOSTEnd bounds the wait for the POST of a cancelled call to
// end: the server has nothing more to send on it.
const cancelledPOSTEnd = 10 * time.Second

// cancel sends notifications/cancelled for the call and returns how its
// POST ended. A POST that does not end within cancelledPOSTEnd is
// abandoned and reported as an error.
func (c *e2eClient) cancel(ctx context.Context, p *pendingCall) (callEnd, error) {
	if err := c.notify(ctx, "notifications/cancelled", map[string]any{"requestId": p.id, "reason": "e2e cancel"}); err != nil {
		return callEnd{}, err
	}
	t := time.NewTimer(cancelledPOSTEnd)
	defer t.Stop()
	select {
	case end := <-p.done:
		return end, nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.abort()
	<-p.done
	return callEnd{}, fmt.Errorf("the POST of cancelled call %d did not end within %v of notifications/cancelled", p.id, cancelledPOSTEnd)
}

// deleteSession ends the session with DELETE.
func (c *e2eClient) deleteSession(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE: HTTP %s", resp.Status)
	}
	return nil
}

func toolParams(name string, args map[string]any, traceparent, progressToken string) map[string]any {
	p := map[string]any{"name": name, "arguments": args}
	meta := map[string]any{}
	if traceparent != "" {
		meta["traceparent"] = traceparent
	}
	if progressToken != "" {
		meta["progressToken"] = progressToken
	}
	if len(meta) > 0 {
		p["_meta"] = meta
	}
	return p
}

// readResponse reads the response to id from a JSON or SSE answer, passing
// the other messages to onOther (when not nil).
func readResponse(resp *http.Response, id int64, onOther func(rpcMessage)) (rpcMessage, error) {
	if events := newSSEReader(resp); events != nil {
		for {
			m, err := events.next()
			if err != nil {
				return rpcMessage{}, err
			}
			if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
				return m, nil
			}
			if onOther != nil {
				onOther(m)
			}
		}
	}
	var m rpcMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return rpcMessage{}, err
	}
	if string(m.ID) != fmt.Sprint(id) {
		return rpcMessage{}, fmt.Errorf("response id %s, want %d", m.ID, id)
	}
	return m, nil
}

// sseReader reads the JSON-RPC messages of an SSE response.
type sseReader struct{ r *bufio.Reader }

// newSSEReader returns nil when resp is not an SSE stream.
func newSSEReader(resp *http.Response) *sseReader {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		return nil
	}
	return &sseReader{r: bufio.NewReader(resp.Body)}
}

// next returns the next message; io.EOF when the stream ended. Events
// without data (priming events) are skipped.
func (s *sseReader) next() (rpcMessage, error) {
	var data strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && data.Len() == 0 {
				return rpcMessage{}, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return rpcMessage{}, io.ErrUnexpectedEOF
			}
			return rpcMessage{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var m rpcMessage
			if err := json.Unmarshal([]byte(data.String()), &m); err != nil {
				return rpcMessage{}, fmt.Errorf("SSE data %q: %w", data.String(), err)
			}
			return m, nil
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// newTraceparent returns a W3C traceparent for a fresh sampled trace, with
// its trace and span ids.
func newTraceparent() (traceparent, traceID, spanID string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}
