package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/quota"
)

// newClientIssuer is an authorization server for introspection whose
// tokens name a subject and a client, "<subject>/<client>": each is active
// for resource with scope vigil.read, issued to that client for that
// subject, as dynamic registration lets one user mint client ids.
func newClientIssuer(t *testing.T, resource string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "introspection_endpoint": srv.URL + "/introspect"})
		case "/introspect":
			sub, client, ok := strings.Cut(r.PostFormValue("token"), "/")
			if !ok {
				_, _ = io.WriteString(w, `{"active":false}`)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{
				"active": true, "sub": sub, "client_id": client, "aud": resource, "scope": "vigil.read", "exp": time.Now().Add(time.Hour).Unix(),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestQuotaE2EClientsOfOneSubject: vigil with -quota-sessions 5 behind
// authorization. One subject's tokens issued to ten client ids share the
// subject's five sessions (the other five initializes get 429 "sessions"),
// another subject still opens one, and a session still answers only the
// client that opened it (404 to another client of the same subject).
func TestQuotaE2EClientsOfOneSubject(t *testing.T) {
	port := authResource(t)
	as := newClientIssuer(t, port.resource)
	v := startVigilAuth(t, port, as.URL, []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
	}, "-auth-scopes", "vigil.read", "-quota-sessions", "5")

	var sessions []string
	refused := 0
	for i := range 10 {
		a := v.initialize(t, fmt.Sprintf("alice/client-%d", i))
		switch a.status {
		case http.StatusOK:
			sessions = append(sessions, fmt.Sprintf("alice/client-%d", i))
		case http.StatusTooManyRequests:
			var data quotaErrorData
			require.NoError(t, json.Unmarshal([]byte(a.body), &data), a.body)
			require.NotNil(t, data.Error, a.body)
			assert.Equal(t, "sessions", data.Error.Data.Quota)
			refused++
		default:
			t.Fatalf("initialize of client %d: %+v", i, a)
		}
	}
	assert.Len(t, sessions, 5, "ten clients of one subject share the subject's 5 sessions")
	assert.Equal(t, 5, refused)
	assert.Equal(t, http.StatusOK, v.initialize(t, "bob/client-0").status, "another subject is another caller")

	mine := v.session(t, "bob/client-1")
	other := newE2EClient(v.url, &http.Client{Transport: bearer{token: "bob/client-2", base: v.hc.Transport}, Timeout: 10 * time.Second})
	other.session = mine.session
	ping := map[string]any{"jsonrpc": "2.0", "id": 9, "method": "ping"}
	for c, want := range map[*e2eClient]int{mine: http.StatusOK, other: http.StatusNotFound} {
		resp, err := c.post(t.Context(), ping)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "a session answers only the client that opened it")
	}
}

// TestQuotaE2EToolShareOfOneSubject: vigil with -tool-concurrency 4 (so
// that one caller's share, half, is 2 slots of sleep) behind
// authorization. Two clients of one subject each hold a long sleep call; a
// third client of the same subject is refused at once (-32000
// "tool_share"), while another subject's call is admitted.
func TestQuotaE2EToolShareOfOneSubject(t *testing.T) {
	port := authResource(t)
	as := newClientIssuer(t, port.resource)
	v := startVigilAuth(t, port, as.URL, []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
	}, "-auth-scopes", "vigil.read", "-tool-concurrency", "4")

	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() { _ = v.proc.cmd.Process.Kill() }() // ends the long calls, before wg.Wait
	for i := range 2 {
		c := v.session(t, fmt.Sprintf("alice/client-%d", i))
		wg.Go(func() {
			_, _ = c.callTool(context.WithoutCancel(t.Context()), "sleep", map[string]any{"ms": 40000}, "")
		})
	}
	require.NoError(t, waitInFlight(t.Context(), v.hc, strings.TrimSuffix(v.url, "/mcp")+"/metrics", 2))

	res, err := v.session(t, "alice/client-2").callTool(t.Context(), "sleep", map[string]any{"ms": 1}, "")
	require.NoError(t, err)
	require.NotNil(t, res.Error, "a third client of the subject is over the subject's share")
	assert.Equal(t, int64(-32000), res.Error.Code)
	assert.Contains(t, res.Error.Message, "tool_share")

	res, err = v.session(t, "bob/client-0").callTool(t.Context(), "sleep", map[string]any{"ms": 1}, "")
	require.NoError(t, err)
	assert.Nil(t, res.Error, "another subject's call is admitted")
}

// An unauthenticated IPv6 client counts as its network of
// -quota-ipv6-prefix bits (clientConnContext), as callerOf, the endpoint
// and the rate limits read it; an IPv4-mapped one as its IPv4 address.
func TestClientConnContextIPv6Prefix(t *testing.T) {
	for _, c := range []struct {
		remote string
		bits   int
		want   string
	}{
		{"[2001:db8:1:2:aaaa::1]:5000", 64, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:5001", 64, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2ff::1]:5000", 56, "2001:db8:1:200::/56"},
		{"[2001:db8::1]:5000", 128, "2001:db8::1/128"},
		{"[::ffff:192.0.2.7]:5000", 64, "192.0.2.7"},
		{"192.0.2.7:5000", 64, "192.0.2.7"},
	} {
		ctx := clientConnContext(c.bits)(context.Background(), remoteConn{addr: c.remote})
		assert.Equal(t, c.want, quota.CallerAddr(ctx, ""), "%s with /%d", c.remote, c.bits)
	}
}

// remoteConn is a net.Conn whose client is at addr.
type remoteConn struct {
	net.Conn
	addr string
}

func (c remoteConn) RemoteAddr() net.Addr { return remoteAddr(c.addr) }

type remoteAddr string

func (a remoteAddr) Network() string { return "tcp" }
func (a remoteAddr) String() string  { return string(a) }
