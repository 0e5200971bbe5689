package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

func newAssertingServer(t *testing.T, resource string) *ResourceServer {
	t.Helper()
	rs, err := New(Config{Resource: resource, AuthorizationServers: []string{"https://as.example.com"}, Verifier: nopVerifier{}})
	require.NoError(t, err)
	return rs
}

type nopVerifier struct{}

func (nopVerifier) Verify(context.Context, string) (*auth.Principal, error) {
	return nil, &Error{Reason: ReasonInvalidToken}
}

// assertFor returns the assertion rs makes of a request by p.
func assertFor(rs *ResourceServer, p *auth.Principal) []byte {
	r := httptest.NewRequestWithContext(auth.ContextWithPrincipal(context.Background(), p), http.MethodPost, "/mcp", nil)
	return rs.assertPrincipal(r)
}

// The principal a forwarded request's assertion names comes back whole on
// the task's replica, with the same key, and its assertion expires after
// assertionMaxAge, or with the principal's token when that comes first.
func TestPrincipalAssertionRoundTrip(t *testing.T) {
	t.Parallel()
	rs := newAssertingServer(t, "https://mcp.example.com/mcp")
	now := time.Now()
	p := &auth.Principal{
		Issuer: "https://as.example.com", Subject: "alice", ClientID: "app", Scopes: []string{"mcp", "deploy"},
		Expiry: now.Add(time.Hour).Truncate(time.Millisecond).UTC(), Claims: map[string]any{"tenant": "acme", "groups": []any{"ops"}},
		Actors: []string{"agent", "gateway"},
	}
	p.Seal()
	data := assertFor(rs, p)
	for _, secret := range []string{"Bearer", "Authorization"} {
		assert.NotContains(t, string(data), secret)
	}
	got, err := rs.decodeAssertion(data, now)
	require.NoError(t, err)
	assert.Equal(t, p, got, "the same principal, key included")
	assert.Equal(t, p.Key(), got.Key())

	_, err = rs.decodeAssertion(data, now.Add(assertionMaxAge+time.Second))
	assert.Equal(t, ReasonExpired, reasonOf(err), "good for %v at most: %v", assertionMaxAge, err)

	soon := &auth.Principal{Issuer: "https://as.example.com", Subject: "bob", Expiry: now.Add(2 * time.Second)}
	data = assertFor(rs, soon)
	_, err = rs.decodeAssertion(data, now)
	require.NoError(t, err)
	_, err = rs.decodeAssertion(data, now.Add(3*time.Second))
	assert.Equal(t, ReasonExpired, reasonOf(err), "not past the token's expiry: %v", err)

	none := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	assert.Nil(t, rs.assertPrincipal(none), "no principal, no assertion")
}

// An assertion that is missing, too large, malformed, for another
// resource, without a subject, expired or good for too long is refused,
// each for its reason.
func TestPrincipalAssertionRefused(t *testing.T) {
	t.Parallel()
	rs := newAssertingServer(t, "https://mcp.example.com/mcp")
	now := time.Now()
	encode := func(edit func(a *assertion)) []byte {
		a := assertion{Resource: "https://mcp.example.com/mcp", Expires: now.Add(10 * time.Second).UnixMilli(), Subject: "alice"}
		edit(&a)
		b, err := json.Marshal(a)
		require.NoError(t, err)
		return b
	}
	_, err := rs.decodeAssertion(encode(func(*assertion) {}), now)
	require.NoError(t, err, "the base case is valid")
	for _, tc := range []struct {
		name string
		data []byte
		want Reason
	}{
		{"none", nil, ReasonMissingToken},
		{"too large", encode(func(a *assertion) { a.Claims = map[string]any{"x": strings.Repeat("x", maxAssertionBytes)} }), ReasonInvalidToken},
		{"malformed", []byte(`{"aud":`), ReasonInvalidToken},
		{"another resource", encode(func(a *assertion) { a.Resource = "https://other.example.com/mcp" }), ReasonWrongAudience},
		{"no subject", encode(func(a *assertion) { a.Subject = "" }), ReasonInvalidToken},
		{"expired", encode(func(a *assertion) { a.Expires = now.Add(-time.Millisecond).UnixMilli() }), ReasonExpired},
		{"token expired", encode(func(a *assertion) { a.Expiry = now.Add(-time.Second).UnixMilli() }), ReasonExpired},
		{"good for too long", encode(func(a *assertion) { a.Expires = now.Add(time.Hour).UnixMilli() }), ReasonInvalidToken},
	} {
		p, err := rs.decodeAssertion(tc.data, now)
		assert.Nil(t, p, tc.name)
		var e *Error
		require.ErrorAs(t, err, &e, tc.name)
		assert.Equal(t, tc.want, e.Reason, "%s: %v", tc.name, err)
	}
}

// Only a request another replica forwarded is authorized by an assertion:
// the guard reads one from the context restorePrincipal made, never from a
// client's request; and a token, when there is one, is what counts.
func TestAuthenticateByAssertion(t *testing.T) {
	t.Parallel()
	rs := newAssertingServer(t, "https://mcp.example.com/mcp")
	p := &auth.Principal{Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp"}}
	data := assertFor(rs, p)

	fwd := httptest.NewRequestWithContext(rs.restorePrincipal(context.Background(), data), http.MethodPost, "/mcp", nil)
	got, _, err := rs.authenticate(fwd)
	require.NoError(t, err)
	assert.Equal(t, p.Key(), got.Key())

	client := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(data)))
	client.Header.Set("X-Assertion", string(data))
	_, _, err = rs.authenticate(client)
	assert.Equal(t, ReasonMissingToken, reasonOf(err), "a client's request is authorized by its token only")

	bare := httptest.NewRequestWithContext(rs.restorePrincipal(context.Background(), nil), http.MethodPost, "/mcp", nil)
	_, _, err = rs.authenticate(bare)
	assert.Equal(t, ReasonMissingToken, reasonOf(err), "a forwarded request without an assertion")
}
