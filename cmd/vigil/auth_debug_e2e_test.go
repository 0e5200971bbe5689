package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuthDebugPageShowsSubject: with -auth-issuer and a token of the real
// authorization server (client credentials: the subject is the client id),
// /debug/vigil shows the subject on the session, on its request in flight
// and, once the client cancels it, on the cancellation and the dropped
// response; in the JSON form and in the HTML page, never the token.
func TestAuthDebugPageShowsSubject(t *testing.T) {
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource})
	v := startVigilAuth(t, port, as.Issuer(), nil, "-auth-tool-scopes", "sleep=vigil.slow")
	base := strings.TrimSuffix(v.url, "/mcp")
	token := as.Token(t, "vigil.read", "vigil.slow")
	c := v.session(t, token)
	call := c.startCall(t.Context(), "sleep", map[string]any{"ms": 30000}, "")

	var snap debugSnapshot
	svcEventually(t, "the sleep in flight on /debug/vigil", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(v.hc, base)
		return err == nil && slices.ContainsFunc(snap.InFlight, func(r debugRequest) bool { return r.Name == "sleep" }), err
	})
	want := principalView{Subject: oidcClientID, ClientID: oidcClientID}
	require.Len(t, snap.Sessions, 1)
	assert.Equal(t, c.session, snap.Sessions[0].ID)
	assert.Equal(t, want, snap.Sessions[0].principalView)
	require.Len(t, snap.InFlight, 1)
	assert.Equal(t, want, snap.InFlight[0].principalView)
	raw := debugBody(t, v.hc, base+"/debug/vigil?format=json")
	assert.Contains(t, raw, `"subject": "`+oidcClientID+`"`)
	html := debugBody(t, v.hc, base+"/debug/vigil?refresh=0")
	assert.Equal(t, 2, strings.Count(html, `<span class="mono">`+oidcClientID+`</span>`), "the session and its request in flight")
	for _, body := range []string{raw, html} {
		assert.NotContains(t, body, token)
		assert.NotContains(t, body, strings.Split(token, ".")[1], "not even the token's claims")
	}

	end, err := c.cancel(t.Context(), call)
	require.NoError(t, err)
	require.NoError(t, end.err)
	svcEventually(t, "the cancellation and the drop on /debug/vigil", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(v.hc, base)
		return err == nil && len(snap.Cancellations) == 1 && len(snap.Drops) == 1, err
	})
	assert.Equal(t, want, snap.Cancellations[0].principalView)
	assert.Equal(t, want, snap.Drops[0].principalView)
	require.NoError(t, c.deleteSession(t.Context()))
	// Its ended session, beside the readiness handshake's (the page's
	// readiness check made it at its first load, with no principal).
	var ended endedSession
	svcEventually(t, "the ended session on /debug/vigil", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(v.hc, base)
		i := slices.IndexFunc(snap.EndedSessions, func(e endedSession) bool { return e.SessionID == c.session })
		if i >= 0 {
			ended = snap.EndedSessions[i]
		}
		return err == nil && i >= 0, err
	})
	assert.Equal(t, want, ended.principalView)
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// debugBody GETs u and returns its body, requiring 200.
func debugBody(t *testing.T, hc *http.Client, u string) string {
	t.Helper()
	resp, err := hc.Get(u)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", u, b)
	return string(b)
}
