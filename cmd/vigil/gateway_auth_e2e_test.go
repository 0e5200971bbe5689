package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// recordingUpstream is an MCP server behind Streamable HTTP on loopback
// that keeps every request it gets, headers and body.
type recordingUpstream struct {
	url  string
	stop func() // stops serving, for good
	mu   sync.Mutex
	seen []string // each request's method, URL, headers and body, as text
}

// requests returns the requests seen so far.
func (u *recordingUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// startRecordingUpstream serves the tool "hello".
func startRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello from upstream"), nil
	}))
	h := streamable.New(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var dump bytes.Buffer
		fmt.Fprintf(&dump, "%s %s\r\n", r.Method, r.URL) // a line of its own, as each header is
		_ = r.Header.Write(&dump)
		dump.Write(body)
		u.mu.Lock()
		u.seen = append(u.seen, dump.String())
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	u.url = ts.URL
	var once sync.Once
	u.stop = func() {
		once.Do(func() {
			_ = h.Close()
			ts.Close()
			_ = srv.Close()
		})
	}
	t.Cleanup(u.stop)
	return u
}

// TestGatewayTokenStaysDownstream: behind -auth-issuer, a client's call
// of an upstream's tool is authorized by vigil and forwarded, and the
// client's bearer token appears in no request the upstream gets, header or
// body: the upstream gets only its own credential.
func TestGatewayTokenStaysDownstream(t *testing.T) {
	const token = "client-token-8c1f2e"
	up := startRecordingUpstream(t)
	port := authResource(t)
	as := newScopeIssuer(t, port.resource, map[string]string{token: "vigil.read"})
	v := startVigilAuth(t, port, as.URL, []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
	}, "-auth-scopes", "vigil.read", "-upstream", "u="+up.url)

	v.initialize(t, "").requireRefused(t, http.StatusUnauthorized, "")
	hc := &http.Client{Transport: bearer{token: token, base: v.hc.Transport}, Timeout: 10 * time.Second}
	c := &svcClient{hc: hc, url: v.url}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	m, err = c.rpc("2", "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), "hello from upstream")

	seen := up.requests()
	require.NotEmpty(t, seen)
	for _, r := range seen {
		assert.NotContains(t, r, token, "the client's token reached the upstream")
		assert.NotContains(t, strings.ToLower(r), "authorization:", "no credential was configured for the upstream")
	}
}

// TestGatewayReadiness: /readyz is 200 while the upstream serves, and 503
// naming it failing once it cannot be started again, without its URL;
// calls meanwhile are refused -32000 with a retry hint.
func TestGatewayReadiness(t *testing.T) {
	up := startRecordingUpstream(t)
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "u="+up.url)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	svcGet(t, hc, svc.base+"/readyz", http.StatusOK)

	up.stop()
	// The call that finds it gone, unless its stop was noticed first; then
	// the start that fails, or the backoff after it.
	m, err = c.rpc("2", "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.NotNil(t, m.Error)
	assert.Regexp(t, `^upstream u (is gone|is not ready; try again in \d+ s)$`, m.Error.Message)
	m, err = c.rpc("3", "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.NotNil(t, m.Error)
	assert.Equal(t, int64(-32000), m.Error.Code)
	assert.Regexp(t, `^upstream u is not ready; try again in \d+ s$`, m.Error.Message)
	var body string
	svcEventually(t, "/readyz naming u failing", 10*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(body, "upstream u: failing, next start in "), err
	})
	assert.NotContains(t, body, strings.TrimPrefix(up.url, "http://"))
}
