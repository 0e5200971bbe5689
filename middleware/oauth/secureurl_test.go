package oauth

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckTransport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url       string
		allowHTTP bool
		ok        bool
	}{
		{"https://as.example.com", false, true},
		{"http://127.0.0.1:8080", false, true},
		{"http://127.9.9.9", false, true},
		{"http://localhost:9000/realms/x", false, true},
		{"http://LOCALHOST", false, true},
		{"http://[::1]:80", false, true},
		{"http://[::ffff:127.0.0.1]:80", false, true},
		{"http://as.example.com", false, false},
		{"http://10.0.0.1", false, false},
		{"http://localhost.evil.example", false, false},
		{"http://127.0.0.1.nip.io", false, false},
		{"http://[::2]", false, false},
		{"ftp://as.example.com", false, false},
		{"http://as.example.com", true, true},
		{"ftp://as.example.com", true, false},
	} {
		err := checkTransport("issuer", tc.url, tc.allowHTTP)
		if tc.ok {
			require.NoError(t, err, tc.url)
			continue
		}
		if assert.Error(t, err, tc.url) {
			assert.Contains(t, err.Error(), tc.url)
		}
	}
}

// vtRemoteAS is an authorization server reached as http://as.test (a
// non-loopback name) through client, and also at srv.URL (loopback).
type vtRemoteAS struct {
	srv    *httptest.Server
	client *http.Client
	mu     sync.Mutex
	asked  []string // host + path of every request
}

// vtNewRemoteAS serves docs by path; "{loopback}" in a value becomes
// srv.URL. A path in redirects answers 302 to its value.
func vtNewRemoteAS(t *testing.T, docs map[string]map[string]any, redirects map[string]string) *vtRemoteAS {
	t.Helper()
	as := &vtRemoteAS{}
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.asked = append(as.asked, r.Host+r.URL.Path)
		as.mu.Unlock()
		if to, ok := redirects[r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		out := map[string]any{}
		for k, v := range doc {
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, "{loopback}", as.srv.URL)
			}
			out[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(as.srv.Close)
	addr := as.srv.Listener.Addr().String()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr) // every host is this server
	}}
	t.Cleanup(tr.CloseIdleConnections)
	as.client = &http.Client{Transport: tr}
	return as
}

func (as *vtRemoteAS) saw(hostPath string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Contains(as.asked, hostPath)
}

func (as *vtRemoteAS) count() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.asked)
}

const vtOAuthPath = "/.well-known/oauth-authorization-server"

func TestJWTVerifierRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	remote := map[string]map[string]any{
		vtOAuthPath: {"issuer": "http://as.test", "jwks_uri": "http://as.test/jwks"},
		"/jwks":     {"keys": []any{}},
	}
	newV := func(as *vtRemoteAS, issuer string, allow bool) error {
		v, err := NewVerifier(t.Context(), VerifierConfig{
			Issuer: issuer, Audiences: []string{"https://mcp.example/mcp"},
			HTTPClient: as.client, AllowInsecureHTTP: allow,
		})
		if err == nil {
			require.NoError(t, v.Close())
		}
		return err
	}

	t.Run("non-loopback http issuer", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, remote, nil)
		err := newV(as, "http://as.test", false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `"http://as.test"`)
		assert.Contains(t, err.Error(), "-auth-insecure-http")
		assert.Zero(t, as.count(), "nothing is fetched from a refused issuer")
	})
	t.Run("insecure option allows it", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, remote, nil)
		require.NoError(t, newV(as, "http://as.test", true))
		assert.True(t, as.saw("as.test/jwks"))
	})
	t.Run("loopback issuer, non-loopback http jwks_uri", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, map[string]map[string]any{
			vtOAuthPath: {"issuer": "{loopback}", "jwks_uri": "http://as.test/jwks"},
		}, nil)
		err := newV(as, as.srv.URL, false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `jwks_uri "http://as.test/jwks"`)
		assert.False(t, as.saw("as.test/jwks"))
	})
	t.Run("loopback issuer and jwks_uri", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, map[string]map[string]any{
			vtOAuthPath: {"issuer": "{loopback}", "jwks_uri": "{loopback}/jwks"},
			"/jwks":     {"keys": []any{}},
		}, nil)
		require.NoError(t, newV(as, as.srv.URL, false))
	})
	t.Run("redirect to plain http", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, map[string]map[string]any{
			vtOAuthPath: {"issuer": "{loopback}", "jwks_uri": "http://as.test/jwks"},
		}, map[string]string{vtOAuthPath: "http://as.test" + vtOAuthPath, "/.well-known/openid-configuration": "http://as.test/oidc"})
		err := newV(as, as.srv.URL, false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "plain http")
		assert.False(t, as.saw("as.test"+vtOAuthPath))
		assert.False(t, as.saw("as.test/oidc"))
	})
	t.Run("explicit jwks_uri over http", func(t *testing.T) {
		t.Parallel()
		as := vtNewRemoteAS(t, remote, nil)
		_, err := NewVerifier(t.Context(), VerifierConfig{
			Issuer: "https://as.test", JWKSURI: "http://as.test/jwks", Audiences: []string{"https://mcp.example/mcp"},
			HTTPClient: as.client,
		})
		require.Error(t, err)
		assert.Zero(t, as.count())
	})
}

func TestDiscoverRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	as := vtNewRemoteAS(t, map[string]map[string]any{vtOAuthPath: {"issuer": "http://as.test"}}, nil)
	_, err := discover(t.Context(), as.client, "http://as.test", false)
	require.Error(t, err)
	assert.Zero(t, as.count())
	md, err := discover(t.Context(), as.client, "http://as.test", true)
	require.NoError(t, err)
	assert.Equal(t, "http://as.test", md.Issuer)
}

func TestIntrospectionRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	aud := []string{"https://mcp.example/mcp"}
	for _, cfg := range []VerifierConfig{
		{IntrospectionEndpoint: "http://as.test/introspect", Audiences: aud},
		{Issuer: "http://as.test", ClientID: "rs", Audiences: aud},
	} {
		_, err := NewVerifier(t.Context(), cfg)
		require.Error(t, err, "%+v", cfg)
		assert.Contains(t, err.Error(), "http://as.test")
		cfg.AllowInsecureHTTP = true
		_, err = NewVerifier(t.Context(), cfg)
		require.NoError(t, err)
	}

	docs := map[string]map[string]any{
		vtOAuthPath:   {"issuer": "{loopback}", "introspection_endpoint": "http://as.test/introspect"},
		"/introspect": {"active": true, "aud": aud[0], "sub": "alice", "exp": 4102444800},
	}
	verify := func(allow bool) (*vtRemoteAS, error) {
		as := vtNewRemoteAS(t, docs, nil)
		v, err := NewVerifier(t.Context(), VerifierConfig{
			Issuer: as.srv.URL, Audiences: aud, ClientID: "rs", ClientSecret: "s3cret",
			HTTPClient: as.client, AllowInsecureHTTP: allow,
		})
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), "tok")
		return as, err
	}
	as, err := verify(false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unavailable")
	assert.False(t, as.saw("as.test/introspect"), "the client secret never goes over plain http")
	as, err = verify(true)
	require.NoError(t, err)
	assert.True(t, as.saw("as.test/introspect"))
}
