package upstreamspec

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/gateway"
)

// The modes of -upstream-auth.
const (
	ClientCredentials = "client_credentials" // the upstream's token by the client credentials grant
	TokenExchange     = "token_exchange"     // the caller's token exchanged (RFC 8693) for one of the upstream's audience
	User              = "user"               // each caller's own token, which the user authorizes once in a browser (authorization code)
)

// Auth is one -upstream-auth NAME=MODE,key=value,...: how the gateway
// gets an HTTP upstream its token.
type Auth struct {
	Mode     string // ClientCredentials, TokenExchange or User
	TokenURL string // client_credentials: the token endpoint
	ClientID string // client_credentials, user
	Secret   string // client_credentials, user: read from @FILE or env:VAR, never printed
	Resource string // client_credentials, user: resource=, the RFC 8707 indicator (user: the upstream's URL by default); token_exchange: audience=
	Scopes   []string
	// Issuer is user's issuer=, the upstream's authorization server;
	// "": found from the upstream (its 401's resource_metadata, RFC 9728).
	Issuer string
}

// ParseCredentials applies -upstream-header (NAME=Header-Name=VALUE)
// and -upstream-auth (NAME=MODE,key=value,...) to the upstreams, HTTP and
// OpenAPI ones only (an OpenAPI one's user mode with issuer=), and returns the -upstream-auth settings by upstream name. A VALUE
// or a client_secret is read from a file (@/path, its last line end cut)
// or a variable (env:NAME) when written so; a client_secret must be.
func ParseCredentials(ups []gateway.Upstream, headers, auths []string, getenv func(string) string) (map[string]Auth, error) {
	index := map[string]int{}
	for i, up := range ups {
		index[up.Name] = i
	}
	httpUpstream := func(flag, name string) (*gateway.Upstream, error) {
		i, ok := index[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %s: no -upstream %s", flag, name, name)
		case ups[i].URL == "" && ups[i].OpenAPI == nil:
			return nil, fmt.Errorf("%s %s: only an HTTP upstream takes credentials (a stdio one takes -upstream-env)", flag, name)
		}
		return &ups[i], nil
	}
	for _, h := range headers {
		name, rest, _ := strings.Cut(h, "=")
		key, value, ok := strings.Cut(rest, "=")
		if !ok || name == "" || key == "" || !flagvalue.IsHeaderName(key) {
			return nil, fmt.Errorf("-upstream-header %s: want NAME=Header-Name=VALUE (VALUE may be @FILE or env:VAR)", name)
		}
		up, err := httpUpstream("-upstream-header", name)
		if err != nil {
			return nil, err
		}
		v, err := flagvalue.Secret(value, getenv)
		if err != nil {
			return nil, fmt.Errorf("-upstream-header %s %s: %w", name, key, err)
		}
		if up.Header == nil {
			up.Header = http.Header{}
		}
		up.Header.Add(key, v)
	}
	var out map[string]Auth // nil without -upstream-auth
	for _, a := range auths {
		name, spec, _ := strings.Cut(a, "=")
		up, err := httpUpstream("-upstream-auth", name)
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("-upstream-auth %s: given twice", name)
		}
		ua, err := parseAuth(spec, getenv)
		if err != nil {
			return nil, fmt.Errorf("-upstream-auth %s: %w", name, err)
		}
		if ua.Mode == User && up.OpenAPI != nil && ua.Issuer == "" {
			// A REST API has no RFC 9728 metadata to find its
			// authorization server from, as an MCP upstream's 401 gives.
			return nil, fmt.Errorf("-upstream-auth %s: an OpenAPI upstream's user mode needs issuer=, the API's authorization server (a REST API names none)", name)
		}
		if ua.Mode == User && ua.Resource == "" {
			ua.Resource = up.URL // RFC 8707: the upstream itself
		}
		if out == nil {
			out = map[string]Auth{}
		}
		out[name] = ua
	}
	return out, nil
}

// parseAuth parses MODE,key=value,... of -upstream-auth; its
// errors never hold the secret.
func parseAuth(spec string, getenv func(string) string) (Auth, error) {
	parts := strings.Split(spec, ",")
	ua := Auth{Mode: parts[0]}
	var secretRef string
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			return Auth{}, fmt.Errorf("%q: want key=value", k)
		}
		switch k {
		case "token_url":
			ua.TokenURL = v
		case "client_id":
			ua.ClientID = v
		case "client_secret":
			secretRef = v
		case "resource", "audience":
			ua.Resource = v
		case "scopes":
			ua.Scopes = strings.Fields(v)
		case "issuer":
			ua.Issuer = v
		default:
			return Auth{}, fmt.Errorf("unknown key %q", k)
		}
	}
	switch ua.Mode {
	case ClientCredentials:
		if ua.TokenURL == "" || ua.ClientID == "" || secretRef == "" || ua.Issuer != "" {
			return Auth{}, errors.New("client_credentials needs token_url=, client_id= and client_secret=@FILE or env:VAR")
		}
		if err := flagvalue.CheckURL(ua.TokenURL); err != nil {
			return Auth{}, fmt.Errorf("token_url: %w", err)
		}
		if err := readSecret(&ua, secretRef, getenv); err != nil {
			return Auth{}, err
		}
	case User:
		if ua.ClientID == "" || secretRef == "" || ua.TokenURL != "" {
			return Auth{}, errors.New("user needs client_id= and client_secret=@FILE or env:VAR (issuer=, scopes= and resource= optional; the token endpoint is discovered)")
		}
		if ua.Issuer != "" {
			if err := flagvalue.CheckURL(ua.Issuer); err != nil {
				return Auth{}, fmt.Errorf("issuer: %w", err)
			}
		}
		if err := readSecret(&ua, secretRef, getenv); err != nil {
			return Auth{}, err
		}
	case TokenExchange:
		if ua.Resource == "" || ua.TokenURL != "" || ua.ClientID != "" || secretRef != "" || ua.Issuer != "" {
			return Auth{}, errors.New("token_exchange needs audience= (scopes= optional) and uses -auth-exchange-endpoint and its client")
		}
	default:
		return Auth{}, fmt.Errorf("mode %q: want %s, %s or %s", ua.Mode, ClientCredentials, TokenExchange, User)
	}
	return ua, nil
}

// readSecret sets ua.Secret from ref, which must be @FILE or env:VAR.
func readSecret(ua *Auth, ref string, getenv func(string) string) error {
	if !strings.HasPrefix(ref, "@") && !strings.HasPrefix(ref, "env:") {
		return errors.New("client_secret: give @FILE or env:VAR, not the secret itself (a command line is visible to every local user)")
	}
	var err error
	if ua.Secret, err = flagvalue.Secret(ref, getenv); err != nil {
		return fmt.Errorf("client_secret: %w", err)
	}
	return nil
}

// Users returns how many upstreams of auths are in the user mode.
func Users(auths map[string]Auth) int {
	n := 0
	for _, ua := range auths {
		if ua.Mode == User {
			n++
		}
	}
	return n
}
