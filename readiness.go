package vigil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// handshakeTimeout bounds the readiness handshake, all four requests.
const handshakeTimeout = 5 * time.Second

// handshakeClient is the clientInfo name of the readiness handshake.
const handshakeClient = "vigil-readiness"

// errNoHandshake is why a service whose readiness handshake has not been
// answered yet is not ready.
var errNoHandshake = errors.New("MCP handshake not answered yet")

// readyNow is /readyz's check: notReady, then, once nothing else keeps
// the service from being ready, the readiness handshake, until one is
// answered: an MCP client's initialize, notifications/initialized,
// tools/list (ping when no tool is served) and DELETE of the session, in
// process, over a Streamable HTTP endpoint of the Server (httptest, no
// network). It is counted under the memory transport
// (network_transport="memory"), never as a client's Streamable HTTP
// session. One handshake runs at a time, on a goroutine of its own that
// Shutdown waits for; readyNow waits for it at most handshakeTimeout (or
// until ctx is done), and is not ready meanwhile.
func (s *Service) readyNow(ctx context.Context) error {
	if err := s.notReady(); !errors.Is(err, errNoHandshake) {
		return err
	}
	s.handshakeMu.Lock()
	if !s.ready.Load() { // stopServing waits for the handshakes started before this
		s.handshakeMu.Unlock()
		return errDraining
	}
	if s.handshakeDone == nil {
		done := make(chan struct{})
		s.handshakeDone = done
		s.handshakes.Go(func() {
			hctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
			defer cancel()
			err := s.handshake(hctx)
			s.handshakeMu.Lock()
			defer s.handshakeMu.Unlock()
			s.handshakeErr, s.handshakeDone = err, nil
			if err != nil {
				s.Logger.Warn("the readiness handshake failed", "error", err)
			} else {
				s.handshook.Store(true)
				s.Logger.Info("ready: the MCP handshake was answered")
			}
			close(done)
		})
	}
	done := s.handshakeDone
	s.handshakeMu.Unlock()
	wait := time.NewTimer(handshakeTimeout)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		return fmt.Errorf("%w: under way", errNoHandshake)
	case <-ctx.Done():
		return fmt.Errorf("%w: under way", errNoHandshake)
	}
	s.handshakeMu.Lock()
	err := s.handshakeErr
	s.handshakeMu.Unlock()
	if err != nil && !s.handshook.Load() {
		return fmt.Errorf("%w: %w", errNoHandshake, err)
	}
	return s.notReady()
}

// handshake makes the readiness handshake on an endpoint of its own,
// closed before it returns: its session ends whatever the outcome.
func (s *Service) handshake(ctx context.Context) error {
	ep := streamable.New(s.Instrumentation.ConnServer(s.Server, telemetry.TransportMemory), streamable.WithLogger(s.Logger))
	defer func() { _ = ep.Close() }()
	init := `{"protocolVersion":"` + protocol.Version20251125 + `","capabilities":{},"clientInfo":{"name":"` + handshakeClient + `","version":"1"}}`
	sid, result, err := handshakeCall(ctx, ep, http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+init+`}`)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var answer struct {
		ServerInfo struct{ Name string } `json:"serverInfo"`
	}
	if err := json.Unmarshal(result, &answer); err != nil || answer.ServerInfo.Name != s.name {
		return fmt.Errorf("initialize: the result names server %q, not %q", answer.ServerInfo.Name, s.name)
	}
	if sid == "" {
		return errors.New("initialize: no session id")
	}
	defer func() { _, _, _ = handshakeCall(context.WithoutCancel(ctx), ep, http.MethodDelete, sid, "") }()
	if _, _, err := handshakeCall(ctx, ep, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	method := "ping"
	if len(s.Server.ToolNames()) > 0 {
		method = "tools/list"
	}
	if _, _, err := handshakeCall(ctx, ep, http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{}}`); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// handshakeCall sends one request of the handshake to ep as a loopback
// client would and returns the session id the answer names, and the
// result of a JSON-RPC response (nil for an answer without one).
func handshakeCall(ctx context.Context, ep http.Handler, method, sid, body string) (string, json.RawMessage, error) {
	r := httptest.NewRequestWithContext(ctx, method, "http://127.0.0.1/mcp", strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("Mcp-Protocol-Version", protocol.Version20251125)
	}
	w := httptest.NewRecorder()
	ep.ServeHTTP(w, r)
	if w.Code >= http.StatusMultipleChoices {
		return "", nil, fmt.Errorf("HTTP %d", w.Code)
	}
	raw := w.Body.Bytes()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		raw = lastEventData(raw)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return w.Header().Get("Mcp-Session-Id"), nil, nil
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return "", nil, fmt.Errorf("answer is not JSON-RPC: %w", err)
	}
	if msg.Error != nil {
		return "", nil, fmt.Errorf("error %d: %s", msg.Error.Code, msg.Error.Message)
	}
	return w.Header().Get("Mcp-Session-Id"), msg.Result, nil
}

// lastEventData is the data of the last event of an SSE stream (the
// response ends the stream of a request).
func lastEventData(stream []byte) []byte {
	var data []byte
	for line := range bytes.Lines(stream) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok {
			data = bytes.TrimSpace(d)
		}
	}
	return data
}
