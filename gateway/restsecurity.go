package gateway

import (
	"log/slog"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
)

// sayUnmetSecurity warns, at Mount, when the description's security
// requirements name schemes and the upstream's configuration meets none
// of them: a bearer token (http bearer, oauth2, openIdConnect) needs
// Credentials or an Authorization header, an API key in a header that
// header (Upstream.Header); an API key in the query or a cookie, HTTP
// basic and mutual TLS have no way in (docs/gateway.md, "REST APIs
// (OpenAPI)"). The calls are served all the same: the API answers them.
func sayUnmetSecurity(api *openapi.API, up Upstream, logger *slog.Logger) {
	schemes := api.SecuritySchemes()
	if len(schemes) == 0 {
		return
	}
	var asked []string
	for _, s := range schemes {
		if meetsScheme(s, up) {
			return
		}
		asked = append(asked, describeScheme(s))
	}
	logger.Warn("gateway: the OpenAPI description asks for credentials the upstream is not given: give -upstream-auth (a bearer token) or -upstream-header (an API key in a header); an API key in the query or a cookie, HTTP basic and mutual TLS are not supported",
		"schemes", strings.Join(asked, "; "))
}

// meetsScheme reports whether up's configuration sends what s asks for.
func meetsScheme(s openapi.SecurityScheme, up Upstream) bool {
	switch {
	case s.Type == "apiKey" && s.In == "header":
		return up.Header.Get(s.Param) != ""
	case s.Type == "oauth2", s.Type == "openIdConnect", s.Type == "http" && s.Scheme == "bearer":
		return up.Credentials != nil || up.Header.Get("Authorization") != ""
	case s.Type == "http":
		return up.Header.Get("Authorization") != "" // basic, or another scheme, given whole
	}
	return false
}

// describeScheme names s and what it asks for, no value.
func describeScheme(s openapi.SecurityScheme) string {
	switch s.Type {
	case "apiKey":
		return s.Name + ": an API key in the " + s.In + " " + s.Param
	case "http":
		return s.Name + ": HTTP " + s.Scheme
	}
	return s.Name + ": " + s.Type
}
