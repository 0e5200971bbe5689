package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
)

// securedDescription is a description whose operation asks for the
// security scheme scheme (a JSON object).
func securedDescription(scheme string) string {
	return `{"openapi":"3.0.3","info":{"title":"s","version":"1"},
"components":{"securitySchemes":{"auth":` + scheme + `}},"security":[{"auth":[]}],
"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}`
}

// TestOpenAPIUpstreamSecurityWarning: Mount warns when the description
// asks for credentials the upstream is not given, naming the scheme and
// no value, and says nothing when it is given them.
func TestOpenAPIUpstreamSecurityWarning(t *testing.T) {
	testkit.Watchdog(t)
	bearer := func(context.Context) (http.Header, error) { return http.Header{"Authorization": {"Bearer t"}}, nil }
	for name, c := range map[string]struct {
		scheme string
		up     gateway.Upstream
		want   string // "": no warning
	}{
		"api key in the query": {`{"type":"apiKey","in":"query","name":"api_key"}`, gateway.Upstream{}, "auth: an API key in the query api_key"},
		"api key in a header":  {`{"type":"apiKey","in":"header","name":"X-Api-Key"}`, gateway.Upstream{}, "auth: an API key in the header X-Api-Key"},
		"api key given":        {`{"type":"apiKey","in":"header","name":"X-Api-Key"}`, gateway.Upstream{Header: http.Header{"X-Api-Key": {"k-9f2"}}}, ""},
		"bearer":               {`{"type":"http","scheme":"bearer"}`, gateway.Upstream{}, "auth: HTTP bearer"},
		"bearer given":         {`{"type":"http","scheme":"bearer"}`, gateway.Upstream{Credentials: bearer}, ""},
		"oauth2 given":         {`{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://as.example/token","scopes":{}}}}`, gateway.Upstream{Credentials: bearer}, ""},
		"basic":                {`{"type":"http","scheme":"basic"}`, gateway.Upstream{}, "auth: HTTP basic"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			up := c.up
			up.Name, up.OpenAPI, up.URL = "s", []byte(securedDescription(c.scheme)), "http://127.0.0.1:1"
			srv := server.New()
			g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{up}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
			warned := strings.Contains(logs.String(), "the OpenAPI description asks for credentials")
			if c.want == "" {
				assert.False(t, warned, "%s", logs.String())
				return
			}
			assert.True(t, warned, "%s", logs.String())
			assert.Contains(t, logs.String(), c.want)
			assert.NotContains(t, logs.String(), "k-9f2")
		})
	}
}
