package main

import (
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/vigil-mcp/vigil/cmd/internal/demotools"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// checkExchange refuses the token exchange settings unless they come
// whole (-auth-exchange-endpoint, -auth-exchange-client-id and
// VIGIL_AUTH_EXCHANGE_CLIENT_SECRET) and with -auth-issuer: the tokens
// exchanged are those the resource server verified.
func checkExchange(cfg config) error {
	set := 0
	for _, v := range []string{cfg.exchangeEndpoint, cfg.exchangeClientID, cfg.exchangeSecret} {
		if v != "" {
			set++
		}
	}
	switch {
	case set == 0:
		return nil
	case set < 3:
		return fmt.Errorf("-auth-exchange-endpoint, -auth-exchange-client-id and %sAUTH_EXCHANGE_CLIENT_SECRET must be set together", envPrefix)
	case !cfg.authEnabled():
		return errors.New("-auth-exchange-endpoint needs -auth-issuer: the tokens exchanged are the ones it verifies")
	}
	return nil
}

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
