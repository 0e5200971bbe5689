// Package resourceserver builds the OAuth resource server that guards
// vigil's /mcp when -auth-issuer is set ([New]): its verifier (a JWT's,
// with discovery from the issuer, or introspection), and the
// oauth.ResourceServer around it. Only cmd/vigil imports it.
package resourceserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// HTTPTimeout bounds each call to the authorization server: discovery,
// the JWK Set, introspection.
const HTTPTimeout = 10 * time.Second

// Config is what the resource server is built from.
type Config struct {
	Issuer       string        // -auth-issuer
	Resource     string        // the canonical URI of /mcp, which tokens must name as their audience
	ClientID     string        // VIGIL_AUTH_INTROSPECTION_CLIENT_ID: tokens are introspected; "": JWTs
	ClientSecret string        // VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET
	CacheTTL     time.Duration // -auth-cache-ttl: how long an introspected token is trusted (0: not cached)
	MissRate     float64       // -auth-introspection-rate
	InsecureHTTP bool          // -auth-insecure-http
	Scopes       []string      // -auth-scopes, which every request needs
	HideTools    bool          // -auth-hide-tools
	// RequestScopes are the scopes a request needs besides Scopes (those of
	// the -catalog endpoint it is sent to); nil: none.
	RequestScopes func(*http.Request) []string
	// EndpointScopes are the scopes of the -catalog endpoints, which the
	// metadata advertises in scopes_supported beside Scopes and the
	// tools' (unless HideTools).
	EndpointScopes []string
	DPoP           *oauth.DPoPConfig
	MaxBodyBytes   int64          // -max-body
	Server         *server.Server // whose tools' scopes calls need (Tool.Scopes)
	Registerer     prometheus.Registerer
	Logger         *slog.Logger
}

// New builds the resource server of c and returns it with the HTTP client
// it asks the authorization server with and release, which releases its
// verifier (a JWT verifier's background key refresh). A JWT verifier
// fetches the issuer's metadata and keys now: an issuer that cannot be
// reached fails the start.
func New(ctx context.Context, c Config) (rs *oauth.ResourceServer, client *http.Client, release func(), err error) {
	client = &http.Client{Timeout: HTTPTimeout}
	verifier, release, err := newVerifier(ctx, c, client)
	if err != nil {
		return nil, nil, nil, err
	}
	rs, err = oauth.New(oauth.Config{
		Resource:             c.Resource,
		AuthorizationServers: []string{c.Issuer},
		Verifier:             verifier,
		Scopes:               c.Scopes,
		Tools:                c.Server,
		HideTools:            c.HideTools,
		RequestScopes:        c.RequestScopes,
		ScopesSupported:      scopesSupported(c),
		DPoP:                 c.DPoP,
		ResourceName:         "Vigil",
		MaxBodyBytes:         c.MaxBodyBytes,
		Registerer:           c.Registerer,
		Logger:               c.Logger,
	})
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return rs, client, release, nil
}

// newVerifier returns the verifier of c and its release: an introspection
// verifier at the issuer's introspection endpoint with c.ClientID, else a
// JWT verifier with discovery from the issuer.
func newVerifier(ctx context.Context, c Config, client *http.Client) (oauth.Verifier, func(), error) {
	cfg := oauth.VerifierConfig{
		Issuer:            c.Issuer,
		Audiences:         []string{c.Resource},
		HTTPClient:        client,
		Logger:            c.Logger,
		AllowInsecureHTTP: c.InsecureHTTP,
	}
	mode := ""
	if c.ClientID != "" {
		mode = "introspection: "
		cfg.ClientID, cfg.ClientSecret = c.ClientID, c.ClientSecret
		cfg.MissRate = c.MissRate
		cfg.CacheTTL = c.CacheTTL
		if cfg.CacheTTL == 0 {
			cfg.CacheTTL = -1 // no cache
		}
	}
	dctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	v, err := oauth.NewVerifier(dctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("-auth-issuer %s: %s%w", c.Issuer, mode, err)
	}
	return v, func() { _ = v.Close() }, nil
}

// Public returns the paths rs serves next to /mcp: its protected resource
// metadata.
func Public(rs *oauth.ResourceServer) map[string]http.Handler { return rs.MetadataHandlers() }

// scopesSupported is the metadata's scopes_supported of c: nil (the
// guard's own: Scopes and, unless HideTools, the tools') without
// EndpointScopes, else those and EndpointScopes, each once.
func scopesSupported(c Config) []string {
	if len(c.EndpointScopes) == 0 {
		return nil
	}
	all := slices.Clone(c.Scopes)
	if c.Server != nil && !c.HideTools {
		all = append(all, c.Server.AllToolScopes()...)
	}
	all = append(all, c.EndpointScopes...)
	slices.Sort(all)
	return slices.Compact(all)
}
