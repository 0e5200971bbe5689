package upstreamspec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/vigil-mcp/vigil/cmd/internal/connect"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// upstreamTokenTimeout bounds each call to a token endpoint for an
// upstream.
const upstreamTokenTimeout = 10 * time.Second

// Credentials fills the upstreams' Credentials from -upstream-auth. A
// token_exchange upstream uses the Exchanger of -auth-exchange-*, built
// with the resource server once the MCP listener is known (after the
// upstreams are mounted): UseExchanger hands it over.
type Credentials struct {
	exchanger atomic.Pointer[oauth.Exchanger]
	users     *connect.Connector // the user-mode upstreams'; nil without
}

// StartUsers returns the Connector of the user-mode upstreams of auths
// (nil when none), cfg completed with them, which Apply then uses.
func (uc *Credentials) StartUsers(ctx context.Context, ups []gateway.Upstream, auths map[string]Auth, cfg connect.Config) (*connect.Connector, error) {
	for _, up := range ups {
		if ua, ok := auths[up.Name]; ok && ua.Mode == User {
			cfg.Upstreams = append(cfg.Upstreams, connect.Upstream{
				Name: up.Name, URL: up.URL, Issuer: ua.Issuer, ClientID: ua.ClientID, Secret: ua.Secret, Resource: ua.Resource, Scopes: ua.Scopes,
			})
		}
	}
	if len(cfg.Upstreams) == 0 {
		return nil, nil
	}
	var err error
	uc.users, err = connect.New(ctx, cfg)
	return uc.users, err
}

// ExchangeClient is the client of -auth-exchange-* at its token
// endpoint, which gets a token_exchange upstream the gateway's own token
// by client credentials.
type ExchangeClient struct {
	Endpoint, ID, Secret string
}

// UseExchanger makes x the Exchanger of the token_exchange upstreams; a
// nil uc or x changes nothing.
func (uc *Credentials) UseExchanger(x *oauth.Exchanger) {
	if uc != nil && x != nil {
		uc.exchanger.Store(x)
	}
}

// Apply returns a copy of ups with the Credentials of each upstream's
// entry in auths, by name; a token_exchange upstream's own token comes
// from xc.
func (uc *Credentials) Apply(ups []gateway.Upstream, auths map[string]Auth, xc ExchangeClient) []gateway.Upstream {
	ups = append([]gateway.Upstream(nil), ups...)
	client := &http.Client{
		Timeout:       upstreamTokenTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for i, up := range ups {
		ua, ok := auths[up.Name]
		if !ok {
			continue
		}
		switch ua.Mode {
		case ClientCredentials:
			ups[i].Credentials = bearerFrom(clientCredentials(client, ua.TokenURL, ua.ClientID, ua.Secret, ua.Resource, ua.Scopes))
		case TokenExchange:
			// What no caller sends (initialize, listings, the GET stream)
			// carries the gateway's own token: the exchange client's, by
			// client credentials at the same endpoint, for the same
			// audience.
			own := bearerFrom(clientCredentials(client, xc.Endpoint, xc.ID, xc.Secret, ua.Resource, ua.Scopes))
			ups[i].Credentials = uc.exchanged(ua, own)
		case User:
			// What no caller sends carries the gateway's own token, by
			// client credentials with the same client; a caller's request,
			// the caller's own (connect).
			own := bearerFrom(clientCredentials(client, uc.users.TokenURL(up.Name), ua.ClientID, ua.Secret, ua.Resource, ua.Scopes))
			ups[i].Credentials, ups[i].Authorize, ups[i].Refused = uc.users.Credentials(up.Name, own), uc.users.Authorize(up.Name), uc.users.Refused(up.Name)
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
func (uc *Credentials) exchanged(ua Auth, own func(context.Context) (http.Header, error)) func(context.Context) (http.Header, error) {
	return func(ctx context.Context) (http.Header, error) {
		if server.RequestFromContext(ctx) == nil {
			return own(ctx)
		}
		x := uc.exchanger.Load()
		if x == nil {
			return nil, errors.New("token exchange is not set up")
		}
		tok, err := x.Exchange(ctx, ua.Resource, ua.Scopes...)
		if err != nil {
			return nil, err
		}
		return http.Header{"Authorization": {"Bearer " + tok}}, nil
	}
}
