package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// The modes of -upstream-auth.
const (
	authClientCredentials = "client_credentials" // the upstream's token by the client credentials grant
	authTokenExchange     = "token_exchange"     // the caller's token exchanged (RFC 8693) for one of the upstream's audience
)

// upstreamAuth is one -upstream-auth NAME=MODE,key=value,...
type upstreamAuth struct {
	mode     string
	tokenURL string // client_credentials: the token endpoint
	clientID string // client_credentials
	secret   string // client_credentials, read from @FILE or env:VAR: never printed
	resource string // client_credentials: resource=, the RFC 8707 indicator; token_exchange: audience=
	scopes   []string
}

// upstreamTokenTimeout bounds each call to a token endpoint for an
// upstream.
const upstreamTokenTimeout = 10 * time.Second

// parseUpstreamCredentials applies -upstream-header (NAME=Header-Name=VALUE)
// and -upstream-auth (NAME=MODE,key=value,...) to the upstreams, HTTP ones
// only, and returns the -upstream-auth settings by upstream name. A VALUE
// or a client_secret is read from a file (@/path, its last line end cut)
// or a variable (env:NAME) when written so; a client_secret must be.
func parseUpstreamCredentials(ups []gateway.Upstream, headers, auths []string, getenv func(string) string) (map[string]upstreamAuth, error) {
	index := map[string]int{}
	for i, up := range ups {
		index[up.Name] = i
	}
	httpUpstream := func(flag, name string) (*gateway.Upstream, error) {
		i, ok := index[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %s: no -upstream %s", flag, name, name)
		case ups[i].URL == "":
			return nil, fmt.Errorf("%s %s: only an HTTP upstream takes credentials (a stdio one takes -upstream-env)", flag, name)
		}
		return &ups[i], nil
	}
	for _, h := range headers {
		name, rest, _ := strings.Cut(h, "=")
		key, value, ok := strings.Cut(rest, "=")
		if !ok || name == "" || key == "" || !validHeaderName(key) {
			return nil, fmt.Errorf("-upstream-header %s: want NAME=Header-Name=VALUE (VALUE may be @FILE or env:VAR)", name)
		}
		up, err := httpUpstream("-upstream-header", name)
		if err != nil {
			return nil, err
		}
		v, err := secretValue(value, getenv)
		if err != nil {
			return nil, fmt.Errorf("-upstream-header %s %s: %w", name, key, err)
		}
		if up.Header == nil {
			up.Header = http.Header{}
		}
		up.Header.Add(key, v)
	}
	var out map[string]upstreamAuth // nil without -upstream-auth
	for _, a := range auths {
		name, spec, _ := strings.Cut(a, "=")
		if _, err := httpUpstream("-upstream-auth", name); err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("-upstream-auth %s: given twice", name)
		}
		ua, err := parseUpstreamAuth(spec, getenv)
		if err != nil {
			return nil, fmt.Errorf("-upstream-auth %s: %w", name, err)
		}
		if out == nil {
			out = map[string]upstreamAuth{}
		}
		out[name] = ua
	}
	return out, nil
}

// parseUpstreamAuth parses MODE,key=value,... of -upstream-auth; its
// errors never hold the secret.
func parseUpstreamAuth(spec string, getenv func(string) string) (upstreamAuth, error) {
	parts := strings.Split(spec, ",")
	ua := upstreamAuth{mode: parts[0]}
	var secretRef string
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" {
			return upstreamAuth{}, fmt.Errorf("%q: want key=value", k)
		}
		switch k {
		case "token_url":
			ua.tokenURL = v
		case "client_id":
			ua.clientID = v
		case "client_secret":
			secretRef = v
		case "resource", "audience":
			ua.resource = v
		case "scopes":
			ua.scopes = strings.Fields(v)
		default:
			return upstreamAuth{}, fmt.Errorf("unknown key %q", k)
		}
	}
	switch ua.mode {
	case authClientCredentials:
		if ua.tokenURL == "" || ua.clientID == "" || secretRef == "" {
			return upstreamAuth{}, errors.New("client_credentials needs token_url=, client_id= and client_secret=@FILE or env:VAR")
		}
		if err := checkURL(ua.tokenURL); err != nil {
			return upstreamAuth{}, fmt.Errorf("token_url: %w", err)
		}
		if !strings.HasPrefix(secretRef, "@") && !strings.HasPrefix(secretRef, "env:") {
			return upstreamAuth{}, errors.New("client_secret: give @FILE or env:VAR, not the secret itself (a command line is visible to every local user)")
		}
		var err error
		if ua.secret, err = secretValue(secretRef, getenv); err != nil {
			return upstreamAuth{}, fmt.Errorf("client_secret: %w", err)
		}
	case authTokenExchange:
		if ua.resource == "" || ua.tokenURL != "" || ua.clientID != "" || secretRef != "" {
			return upstreamAuth{}, errors.New("token_exchange needs audience= (scopes= optional) and uses -auth-exchange-endpoint and its client")
		}
	default:
		return upstreamAuth{}, fmt.Errorf("mode %q: want %s or %s", ua.mode, authClientCredentials, authTokenExchange)
	}
	return ua, nil
}

// secretValue returns v, or the contents of file FILE for @FILE (one
// trailing line end cut), or the variable VAR for env:VAR. Its errors name
// where it looked, never a value.
func secretValue(v string, getenv func(string) string) (string, error) {
	switch {
	case strings.HasPrefix(v, "@"):
		data, err := os.ReadFile(v[1:])
		if err != nil {
			return "", err
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if s == "" {
			return "", fmt.Errorf("%s is empty", v[1:])
		}
		return s, nil
	case strings.HasPrefix(v, "env:"):
		s := getenv(v[len("env:"):])
		if s == "" {
			return "", fmt.Errorf("the variable %s is empty or not set", v[len("env:"):])
		}
		return s, nil
	}
	return v, nil
}

// validHeaderName reports whether s is an HTTP header name (a token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// upstreamCredentials fills the upstreams' Credentials from -upstream-auth.
// A token_exchange upstream uses the Exchanger of -auth-exchange-*, built
// with the resource server once the MCP listener is known (after the
// upstreams are mounted): useExchanger hands it over.
type upstreamCredentials struct {
	exchanger atomic.Pointer[oauth.Exchanger]
}

// useExchanger makes x the Exchanger of the token_exchange upstreams.
func (uc *upstreamCredentials) useExchanger(x *oauth.Exchanger) {
	if uc != nil && x != nil {
		uc.exchanger.Store(x)
	}
}

// apply returns a copy of cfg.upstreams with the Credentials of each
// -upstream-auth.
func (uc *upstreamCredentials) apply(cfg config) []gateway.Upstream {
	ups := append([]gateway.Upstream(nil), cfg.upstreams...)
	client := &http.Client{
		Timeout:       upstreamTokenTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for i, up := range ups {
		ua, ok := cfg.upstreamAuth[up.Name]
		if !ok {
			continue
		}
		switch ua.mode {
		case authClientCredentials:
			ups[i].Credentials = bearerFrom(clientCredentials(client, ua.tokenURL, ua.clientID, ua.secret, ua.resource, ua.scopes))
		case authTokenExchange:
			// What no caller sends (initialize, listings, the GET stream)
			// carries the gateway's own token: the exchange client's, by
			// client credentials at the same endpoint, for the same
			// audience.
			own := bearerFrom(clientCredentials(client, cfg.exchangeEndpoint, cfg.exchangeClientID, cfg.exchangeSecret, ua.resource, ua.scopes))
			ups[i].Credentials = uc.exchanged(ua, own)
		}
	}
	return ups
}

// clientCredentials returns the cached token source of the client
// credentials grant at tokenURL (client_secret_basic), asking for
// resource (RFC 8707) when set.
func clientCredentials(client *http.Client, tokenURL, id, secret, resource string, scopes []string) oauth2.TokenSource {
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL, Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
	if resource != "" {
		cc.EndpointParams = url.Values{"resource": {resource}}
	}
	return cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, client))
}

// bearerFrom returns the Credentials that send ts's token, got again
// before it expires.
func bearerFrom(ts oauth2.TokenSource) func(context.Context) (http.Header, error) {
	return func(context.Context) (http.Header, error) {
		tok, err := ts.Token()
		if err != nil {
			return nil, tokenError(err)
		}
		return http.Header{"Authorization": {"Bearer " + tok.AccessToken}}, nil
	}
}

// tokenError is the error of a client credentials grant that failed,
// without the token endpoint's answer (only its error code).
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("client credentials refused: %.64s", re.ErrorCode)
		}
		return fmt.Errorf("client credentials: the token endpoint answered HTTP %d", re.Response.StatusCode)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("client credentials: %w", ue)
	}
	return errors.New("client credentials: no usable token")
}

// exchanged returns the Credentials of a token_exchange upstream: for a
// caller's call, the caller's token exchanged for the upstream's audience
// (the caller's own token never leaves for the upstream); for what no
// caller sends, own.
func (uc *upstreamCredentials) exchanged(ua upstreamAuth, own func(context.Context) (http.Header, error)) func(context.Context) (http.Header, error) {
	return func(ctx context.Context) (http.Header, error) {
		if server.RequestFromContext(ctx) == nil {
			return own(ctx)
		}
		x := uc.exchanger.Load()
		if x == nil {
			return nil, errors.New("token exchange is not set up")
		}
		tok, err := x.Exchange(ctx, ua.resource, ua.scopes...)
		if err != nil {
			return nil, err
		}
		return http.Header{"Authorization": {"Bearer " + tok}}, nil
	}
}
