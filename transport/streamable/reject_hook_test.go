package streamable_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Every request the endpoint refuses itself is reported to the reject hook
// with its reason, so that limit rejections and bad input are counted, not
// lost.
func TestRejectHookReportsEveryRefusal(t *testing.T) {
	var mu sync.Mutex
	var got []string
	e := newHTEnv(t, nil, streamable.WithMaxBodyBytes(512), streamable.WithRejectHook(func(reason protocol.RejectReason) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, reason.String())
	}))
	sid := e.initialize(`{}`)
	cases := []struct {
		method, body string
		hdr          htH
		status       int
		reason       string
	}{
		{http.MethodPost, `{}`, htH{"Host": "evil.example.com"}, http.StatusForbidden, "forbidden"},
		{http.MethodPut, ``, nil, http.StatusMethodNotAllowed, "invalid_request"},
		{http.MethodPost, `{"jsonrpc":`, htSession(sid), http.StatusBadRequest, "parse_error"},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 600) + `"}}`, htSession(sid), http.StatusRequestEntityTooLarge, "frame_too_large"},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, htSession("no-such-session"), http.StatusNotFound, "unknown_session"},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, http.StatusBadRequest, "invalid_request"},
	}
	var want []string
	for _, tc := range cases {
		r := e.do(tc.method, tc.body, tc.hdr)
		assert.Equal(t, tc.status, r.status, tc.reason)
		want = append(want, tc.reason)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, got)
}

// A session id presented by another principal is reported as
// session_principal_mismatch, yet answered byte for byte like an unknown
// session, so that the client learns nothing from the difference.
func TestRejectHookSessionPrincipal(t *testing.T) {
	var mu sync.Mutex
	var got []string
	e := newHTEnv(t, nil,
		streamable.WithPrincipal(func(r *http.Request) string { return r.Header.Get("X-User") }),
		streamable.WithRejectHook(func(reason protocol.RejectReason) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, reason.String())
		}))
	r := e.do(http.MethodPost, htInitBody(`{}`), htH{"X-User": "alice"})
	require.Equal(t, http.StatusOK, r.status)
	sid := r.header.Get("Mcp-Session-Id")
	as := func(id, user string) htH {
		h := htSession(id)
		h["X-User"] = user
		return h
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	other := e.do(http.MethodPost, ping, as(sid, "bob"))
	unknown := e.do(http.MethodPost, ping, as("no-such-session", "bob"))
	assert.Equal(t, http.StatusNotFound, other.status)
	assert.Equal(t, unknown.status, other.status)
	assert.Equal(t, string(unknown.body), string(other.body))
	assert.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "", as(sid, "bob")).status)
	assert.Equal(t, http.StatusNotFound, e.do(http.MethodDelete, "", as(sid, "bob")).status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		protocol.RejectSessionPrincipal.String(), protocol.RejectUnknownSession.String(),
		protocol.RejectSessionPrincipal.String(), protocol.RejectSessionPrincipal.String(),
	}, got)
}

// Each WithRejectHook adds its hook: telemetry's and an authorization
// layer's both hear every refusal, in the order given, and a nil hook is
// ignored.
func TestRejectHooksAdd(t *testing.T) {
	var mu sync.Mutex
	var got []string
	hook := func(name string) func(protocol.RejectReason) {
		return func(reason protocol.RejectReason) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, name+":"+reason.String())
		}
	}
	e := newHTEnv(t, nil, streamable.WithRejectHook(hook("first")), streamable.WithRejectHook(nil), streamable.WithRejectHook(hook("second")))
	r := e.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, htSession("no-such-session"))
	assert.Equal(t, http.StatusNotFound, r.status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"first:unknown_session", "second:unknown_session"}, got)
}
