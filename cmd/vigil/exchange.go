package main

import (
	"fmt"
	"maps"
	"net/http"

	"github.com/vigil-mcp/vigil/cmd/internal/demotools"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// demoToolScopes returns -auth-tool-scopes without the entry of
// demotools.Whoami when token exchange is configured: addExchange applies it.
func demoToolScopes(cfg config) map[string][]string {
	if cfg.exchangeEndpoint == "" || cfg.authToolScopes[demotools.Whoami] == nil {
		return cfg.authToolScopes
	}
	m := maps.Clone(cfg.authToolScopes)
	delete(m, demotools.Whoami)
	return m
}

// addExchange gives rs the Exchanger of cfg's -auth-exchange-* settings,
// registers downstream_whoami, the demo tool that uses it, with srv, and
// returns it (for the token_exchange upstreams too).
func addExchange(rs *oauth.ResourceServer, cfg config, client *http.Client, srv *server.Server) (*oauth.Exchanger, error) {
	x, err := rs.Exchanger(oauth.ExchangeConfig{
		Endpoint:     cfg.exchangeEndpoint,
		ClientID:     cfg.exchangeClientID,
		ClientSecret: cfg.exchangeSecret,
		HTTPClient:   client,
	})
	if err != nil {
		return nil, fmt.Errorf("-auth-exchange-endpoint %s: %w", cfg.exchangeEndpoint, err)
	}
	return x, demotools.AddWhoami(srv, x, cfg.authToolScopes[demotools.Whoami])
}
