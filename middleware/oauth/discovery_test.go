package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vtMetadataServer serves doc at the paths of serve; "{issuer}" in an
// issuer value is replaced by the server's URL. It records the paths asked.
type vtMetadataServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	asked []string
}

func vtNewMetadataServer(t *testing.T, serve map[string]map[string]any, contentType string) *vtMetadataServer {
	t.Helper()
	ms := &vtMetadataServer{}
	ms.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms.mu.Lock()
		ms.asked = append(ms.asked, r.URL.Path)
		ms.mu.Unlock()
		doc, ok := serve[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		out := map[string]any{}
		for k, v := range doc {
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, "{issuer}", ms.srv.URL)
			}
			out[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(ms.srv.Close)
	return ms
}

func (ms *vtMetadataServer) paths() []string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]string(nil), ms.asked...)
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	const oauth, oidc = "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"
	doc := func(issuer string) map[string]any {
		return map[string]any{
			"issuer":                 issuer,
			"jwks_uri":               "{issuer}/jwks",
			"introspection_endpoint": "{issuer}/introspect",
			"token_endpoint":         "{issuer}/token",
			"scopes_supported":       []string{"files:read"},
			"introspection_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		}
	}
	tests := []struct {
		name    string
		serve   map[string]map[string]any
		ctype   string
		path    string // of the issuer
		asked   []string
		wantErr string
	}{
		{name: "RFC 8414", serve: map[string]map[string]any{oauth: doc("{issuer}")}, asked: []string{oauth}},
		{
			name: "RFC 8414 with a path", path: "/tenant",
			serve: map[string]map[string]any{oauth + "/tenant": doc("{issuer}/tenant")}, asked: []string{oauth + "/tenant"},
		},
		{
			name: "OpenID fallback", serve: map[string]map[string]any{oidc: doc("{issuer}")},
			asked: []string{oauth, oidc},
		},
		{
			name: "OpenID fallback with a path", path: "/tenant",
			serve: map[string]map[string]any{"/tenant" + oidc: doc("{issuer}/tenant")},
			asked: []string{oauth + "/tenant", "/tenant" + oidc},
		},
		{
			name: "issuer mismatch", serve: map[string]map[string]any{oauth: doc("https://evil.example.com"), oidc: doc("{issuer}")},
			asked: []string{oauth}, wantErr: "differs",
		},
		{
			name: "issuer mismatch in OpenID", serve: map[string]map[string]any{oidc: doc("{issuer}/")},
			asked: []string{oauth, oidc}, wantErr: "differs",
		},
		{name: "nothing", serve: map[string]map[string]any{}, asked: []string{oauth, oidc}, wantErr: "404"},
		{
			name: "not JSON", serve: map[string]map[string]any{oauth: doc("{issuer}")}, ctype: "text/html",
			asked: []string{oauth, oidc}, wantErr: "not JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctype := tt.ctype
			if ctype == "" {
				ctype = "application/json; charset=utf-8"
			}
			ms := vtNewMetadataServer(t, tt.serve, ctype)
			issuer := ms.srv.URL + tt.path
			md, err := discover(t.Context(), ms.srv.Client(), issuer, false)
			assert.Equal(t, tt.asked, ms.paths())
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Nil(t, md)
				assert.Contains(t, err.Error(), tt.wantErr)
				if tt.wantErr == "differs" {
					require.ErrorIs(t, err, errIssuerMismatch)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, &serverMetadata{
				Issuer:                issuer,
				JWKSURI:               ms.srv.URL + "/jwks",
				IntrospectionEndpoint: ms.srv.URL + "/introspect",
				TokenEndpoint:         ms.srv.URL + "/token",
				ScopesSupported:       []string{"files:read"},
				IntrospectionEndpointAuthMethodsSupported: []string{"client_secret_basic"},
			}, md)
		})
	}
}

func TestDiscoverRefuses(t *testing.T) {
	t.Parallel()
	for _, issuer := range []string{"", "as.example.com", "ftp://as.example.com", "https://as.example.com?x=1", "https://as.example.com#f", "https://"} {
		_, err := discover(t.Context(), nil, issuer, false)
		require.Error(t, err, issuer)
	}
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"http://` + r.Host + `","pad":"`))
		_, _ = w.Write([]byte(strings.Repeat("x", maxMetadataBody)))
		_, _ = w.Write([]byte(`"}`))
	}))
	defer big.Close()
	_, err := discover(t.Context(), big.Client(), big.URL, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "body over")
}
