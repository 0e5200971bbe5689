package oauth

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

func TestChallengeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    challenge
		want string
	}{
		{
			challenge{ResourceMetadata: "https://x/.well-known/oauth-protected-resource", Scopes: []string{"a", "b"}},
			`Bearer scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource"`,
		},
		{
			challenge{Error: "invalid_token", Description: "token expired", ResourceMetadata: "https://x/m"},
			`Bearer error="invalid_token", resource_metadata="https://x/m", error_description="token expired"`,
		},
		{
			challenge{Error: "insufficient_scope", Scopes: []string{"mcp", "deploy"}, ResourceMetadata: "https://x/m", Description: "missing scope: deploy"},
			`Bearer error="insufficient_scope", scope="mcp deploy", resource_metadata="https://x/m", error_description="missing scope: deploy"`,
		},
		{
			challenge{Error: "invalid_token", Description: "a \"quoted\"\r\nX-Injected: 1 \\ é"},
			`Bearer error="invalid_token", error_description="a 'quoted'  X-Injected: 1 /  "`,
		},
		{
			challenge{ResourceMetadata: "https://x/\"m\\\r\n"},
			`Bearer resource_metadata="https://x/\"m\\"`,
		},
		{challenge{}, `Bearer`},
	}
	for _, tt := range tests {
		got := tt.c.String()
		assert.Equal(t, tt.want, got)
		assert.NotContains(t, got, "\r")
		assert.NotContains(t, got, "\n")
	}
}

// Every challenge String builds parses back to what it holds (with the
// description sanitized as documented).
func TestChallengeRoundTrip(t *testing.T) {
	t.Parallel()
	c := challenge{Error: "insufficient_scope", Scopes: []string{"a:read", "b/write"}, ResourceMetadata: `https://h/p?q="1"\`, Description: `no "b" \ here`}
	roundTrip(t, c)
}

func roundTrip(t *testing.T, c challenge) {
	t.Helper()
	s := c.String()
	scheme, params, err := wwwauth.Parse(s)
	require.NoError(t, err, s)
	assert.Equal(t, "Bearer", scheme)
	want := map[string]string{}
	if c.Error != "" {
		want["error"] = dropControls(c.Error)
	}
	if len(c.Scopes) > 0 {
		want["scope"] = dropControls(strings.Join(c.Scopes, " "))
	}
	if c.ResourceMetadata != "" {
		want["resource_metadata"] = dropControls(c.ResourceMetadata)
	}
	if c.Description != "" {
		want["error_description"] = sanitizeDescription(c.Description)
	}
	assert.Equal(t, want, params, s)
}

// dropControls removes control bytes, as challenge.String does.
func dropControls(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x20 && s[i] != 0x7f {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer error="invalid_token", error_description="x", resource_metadata="https://h/m"`)
	f.Add(`Bearer scope="a b"`)
	f.Add(`Basic realm="x\"y"`)
	f.Add(`Bearer a=b, c`)
	f.Fuzz(func(t *testing.T, s string) {
		scheme, params, err := wwwauth.Parse(s)
		if err != nil {
			return
		}
		assert.NotEmpty(t, scheme)
		// Whatever parses, re-built as a Bearer challenge of the same
		// values, parses back to the same values.
		c := challenge{Error: params["error"], ResourceMetadata: params["resource_metadata"]}
		if v := params["scope"]; v != "" {
			c.Scopes = []string{v}
		}
		c.Description = params["error_description"]
		roundTrip(t, c)
	})
}

func FuzzBearerToken(f *testing.F) {
	f.Add("Bearer abc.def-ghi_jkl~+/==")
	f.Add("bearer x")
	f.Add("Bearer ")
	f.Add("Basic eDp5")
	f.Add("Bearer a b")
	f.Fuzz(func(t *testing.T, v string) {
		r, err := http.NewRequest(http.MethodPost, "https://h/mcp", http.NoBody)
		require.NoError(t, err)
		r.Header["Authorization"] = []string{v}
		tok, _, err := bearerToken(r, false)
		if err != nil {
			assert.Empty(t, tok)
			var e *Error
			require.ErrorAs(t, err, &e)
			// Descriptions are fixed texts: they never carry the token.
			assert.Contains(t, []string{"", "empty bearer token", "bearer token too long", "malformed bearer token"}, e.Description)
			return
		}
		assert.NotEmpty(t, tok)
		assert.LessOrEqual(t, len(tok), maxTokenBytes)
		assert.True(t, strings.HasSuffix(v, tok))
		// The token re-sent in a header is accepted as the same token.
		r.Header["Authorization"] = []string{"Bearer " + tok}
		again, _, err := bearerToken(r, false)
		require.NoError(t, err)
		assert.Equal(t, tok, again)
	})
}
