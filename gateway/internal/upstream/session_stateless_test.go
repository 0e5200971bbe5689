package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// openStateless opens a session on url that answers sampling with model
// "m1", with cfg's ProtocolVersion.
func openStateless(t *testing.T, url, version string) *upstream.Session {
	t.Helper()
	s, err := upstream.Open(t.Context(), streamable.Dial(streamable.ClientConfig{URL: url}), upstream.Config{
		Name:            "h",
		ProtocolVersion: version,
		Capabilities:    json.RawMessage(`{"sampling":{}}`),
		OnRequest: func(_ context.Context, req *transport.Request) (json.RawMessage, error) {
			if req.Method != "sampling/createMessage" {
				return nil, &transport.Error{Code: int64(protocol.CodeMethodNotFound), Message: "no " + req.Method}
			}
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"a"},"model":"m1"}`), nil
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStatelessUpstream: a session asked to speak 2026-07-28 to a Vigil
// server discovers it (no initialize, no session id), sends each request
// with the era's _meta and headers, gets results without the era's
// members, progress on the request's stream, and answers an
// input_required (sampling) through OnRequest, sending the call again.
func TestStatelessUpstream(t *testing.T) {
	testkit.Watchdog(t)
	u := startHTTPUpstream(t, streamable.ResponseSSE)
	s := openStateless(t, u.url, protocol.Version20260728)
	assert.Equal(t, protocol.Version20260728, s.Initialized().ProtocolVersion)
	assert.Contains(t, string(s.Initialized().Capabilities), `"tools"`)

	res, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"hello"}`), nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"hello"}]}`, string(res))

	var mu sync.Mutex
	steps := 0
	res, err = s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"progress"}`), &upstream.Notes{Progress: func(json.RawMessage) {
		mu.Lock()
		steps++
		mu.Unlock()
	}})
	require.NoError(t, err)
	assert.Contains(t, string(res), "done")
	assert.Equal(t, 2, steps)

	res, err = s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"sample"}`), nil)
	require.NoError(t, err)
	assert.Contains(t, string(res), "sampled m1", "the input_required round answered, the call sent again")

	tools, err := s.List(t.Context(), "tools/list", "tools", 100)
	require.NoError(t, err)
	assert.NotEmpty(t, tools)

	headers, methods := u.seen()
	require.NotEmpty(t, headers)
	assert.Equal(t, "server/discover", headers[0].Get("Mcp-Method"))
	var named bool
	for i, h := range headers {
		assert.Equal(t, http.MethodPost, methods[i], "no GET stream, no DELETE")
		assert.Empty(t, h.Get("Mcp-Session-Id"))
		assert.Equal(t, protocol.Version20260728, h.Get("Mcp-Protocol-Version"))
		named = named || (h.Get("Mcp-Method") == "tools/call" && h.Get("Mcp-Name") == "hello")
	}
	assert.True(t, named, "tools/call carries Mcp-Name")
}

// TestStatelessFallback: an upstream that refuses initialize (as one that
// speaks only 2026-07-28 does: method not found) is discovered and spoken
// to statelessly; one that speaks the session era gets initialize.
func TestStatelessFallback(t *testing.T) {
	testkit.Watchdog(t)
	u := startHTTPUpstream(t, streamable.ResponseJSON)
	only2026 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`))
			return
		}
		proxy, err := http.NewRequestWithContext(r.Context(), r.Method, u.url, bytes.NewReader(body))
		if err != nil {
			return
		}
		proxy.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(proxy)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(only2026.Close)

	s := openStateless(t, only2026.URL, "")
	assert.Equal(t, protocol.Version20260728, s.Initialized().ProtocolVersion)
	res, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"hello"}`), nil)
	require.NoError(t, err)
	assert.Contains(t, string(res), "hello")

	assert.Equal(t, protocol.Version20251125, openStateless(t, u.url, "").Initialized().ProtocolVersion, "initialize first")
}

// TestRound: one round, as the upstream answers it (input_required kept
// with its keys), with the caller's _meta members in place of the
// session's, and the task methods routed by Mcp-Name (a request without
// it is refused -32020 by a 2026-07-28 server).
func TestRound(t *testing.T) {
	testkit.Watchdog(t)
	u := startHTTPUpstream(t, streamable.ResponseJSON)
	s := openStateless(t, u.url, protocol.Version20260728)
	caller := map[string]json.RawMessage{"io.modelcontextprotocol/clientCapabilities": json.RawMessage(`{"sampling":{}}`)}
	res, err := s.Round(t.Context(), "tools/call", json.RawMessage(`{"name":"sample"}`), caller, nil)
	require.NoError(t, err)
	var r struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	require.NoError(t, json.Unmarshal(res, &r))
	assert.Equal(t, "input_required", r.ResultType)
	assert.Len(t, r.InputRequests, 1)

	_, err = s.Round(t.Context(), "tasks/get", json.RawMessage(`{"taskId":"AAAAAAAAAAAAAAAAAAAAAAAAAA"}`),
		map[string]json.RawMessage{"io.modelcontextprotocol/clientCapabilities": json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)}, nil)
	var rpc *transport.Error
	require.ErrorAs(t, err, &rpc)
	assert.NotEqual(t, int64(protocol.CodeHeaderMismatch), rpc.Code, "%s", rpc.Message)
	headers, _ := u.seen()
	last := headers[len(headers)-1]
	assert.Equal(t, "tasks/get", last.Get("Mcp-Method"))
	assert.Equal(t, "AAAAAAAAAAAAAAAAAAAAAAAAAA", last.Get("Mcp-Name"))

	plain := openStateless(t, u.url, "")
	_, err = plain.Round(t.Context(), "tools/call", json.RawMessage(`{"name":"hello"}`), nil, nil)
	require.Error(t, err, "a 2025 session has no rounds")
}
