// Package connect is the gateway's side of -upstream-auth NAME=user: a
// caller whose call needs an upstream it has not authorized gets a URL
// elicitation (-32042) whose link opens the gateway's own pages; they sign
// the browser in at the gateway's identity provider, refuse anyone but
// the principal the link was made for, run the upstream's authorization
// code flow (PKCE S256, state, RFC 8707 resource, RFC 9207 iss) and give
// the tokens to the vault (gateway/accounts). Calls then carry the
// caller's own token to that upstream only.
package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"

	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/internal/asmeta"
	"github.com/vigil-mcp/vigil/internal/quota"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The defaults of Config's bounds.
const (
	DefaultTTL             = 10 * time.Minute
	DefaultMaxPending      = 10000
	DefaultMaxPendingOfOne = 16
)

// Upstream is one upstream of the user mode: the gateway as an OAuth
// client of its authorization server.
type Upstream struct {
	Name, URL        string
	Issuer           string // its authorization server; "": discovered from URL
	ClientID, Secret string
	Resource         string // RFC 8707
	Scopes           []string
}

// Config configures [New].
type Config struct {
	Upstreams []Upstream
	// SignInIssuer is the gateway's own identity provider (-auth-issuer),
	// where the browser signs in with the client SignInClientID.
	SignInIssuer, SignInClientID, SignInSecret string
	Store                                      accounts.Store
	// Flows keeps the flows under way where every replica finds them
	// (redisshare's FlowStore); nil keeps them in this process, where a
	// link opens only on the replica that made it.
	Flows                       FlowStore
	TTL                         time.Duration // a link's life (DefaultTTL when 0)
	MaxPending, MaxPendingOfOne int           // pending flows in all, and of one principal
	Registerer                  prometheus.Registerer
	Logger                      *slog.Logger
	HTTPClient                  *http.Client // to the authorization servers, with a timeout
	Now                         func() time.Time
}

// upstreamOf is an Upstream with its authorization server found.
type upstreamOf struct {
	Upstream
	as    *asmeta.Server
	oauth oauth2.Config // RedirectURL set per request (the base is known late)
}

// Connector runs the flows. Its methods are safe for concurrent use.
type Connector struct {
	cfg       Config
	ups       map[string]*upstreamOf
	vault     *accounts.Vault
	signIn    oauth2.Config
	idToken   *oidc.IDTokenVerifier
	flows     flowTable
	base      atomic.Pointer[string] // the gateway's own URL, scheme://host[:port]
	events    *prometheus.CounterVec
	log       *slog.Logger
	secureCtx context.Context // carries the HTTP client for x/oauth2
}

// New finds each upstream's authorization server and the gateway's
// identity provider, and returns the Connector of cfg; SetBase must be
// called before its pages serve.
func New(ctx context.Context, cfg Config) (*Connector, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.MaxPendingOfOne <= 0 {
		cfg.MaxPendingOfOne = DefaultMaxPendingOfOne
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	hctx := oidc.ClientContext(context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, cfg.HTTPClient), cfg.HTTPClient)
	c := &Connector{cfg: cfg, ups: map[string]*upstreamOf{}, log: cfg.Logger, secureCtx: hctx}
	clients := map[string]accounts.Client{}
	for _, up := range cfg.Upstreams {
		issuer := up.Issuer
		if issuer == "" {
			var err error
			if issuer, err = discoverIssuer(ctx, cfg.HTTPClient, up.URL); err != nil {
				return nil, fmt.Errorf("-upstream-auth %s: finding its authorization server: %w", up.Name, err)
			}
		}
		as, err := discoverServer(ctx, cfg.HTTPClient, issuer)
		if err != nil {
			return nil, fmt.Errorf("-upstream-auth %s: %w", up.Name, err)
		}
		u := &upstreamOf{Upstream: up, as: as, oauth: oauth2.Config{
			ClientID: up.ClientID, ClientSecret: up.Secret, Scopes: up.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader},
		}}
		c.ups[up.Name] = u
		clients[up.Name] = accounts.Client{
			TokenURL: as.TokenEndpoint, RevocationURL: as.RevocationEndpoint, ClientID: up.ClientID, ClientSecret: up.Secret,
			Resource: up.Resource, Scopes: up.Scopes, AuthStyle: oauth2.AuthStyleInHeader,
		}
	}
	provider, err := oidc.NewProvider(hctx, cfg.SignInIssuer)
	if err != nil {
		return nil, fmt.Errorf("-connect-client-id: the identity provider %s: %w", cfg.SignInIssuer, err)
	}
	c.signIn = oauth2.Config{ClientID: cfg.SignInClientID, ClientSecret: cfg.SignInSecret, Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID}}
	c.idToken = provider.Verifier(&oidc.Config{ClientID: cfg.SignInClientID, Now: cfg.Now})
	if c.vault, err = accounts.NewVault(accounts.VaultConfig{
		Store: cfg.Store, Clients: clients, Logger: cfg.Logger, Registerer: cfg.Registerer, Now: cfg.Now, HTTPClient: cfg.HTTPClient,
	}); err != nil {
		return nil, err
	}
	c.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_upstream_authorizations_total",
		Help: "Authorizations of an upstream by its users (-upstream-auth NAME=user), by event: started (a link made), completed (tokens stored), refused (a sign-in as another user, a wrong state or cookie, an error or failed exchange), expired (not completed in time, or pushed out by the same user's newer ones).",
	}, []string{"upstream", "event"})
	for name := range c.ups {
		for _, ev := range []string{"started", "completed", "refused", "expired"} {
			c.events.WithLabelValues(name, ev)
		}
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(c.events); err != nil {
			return nil, err
		}
	}
	ended := func(f *flow, why string) { c.events.WithLabelValues(f.upstream, why).Inc() }
	if cfg.Flows == nil {
		c.flows = localFlows{newPending(cfg.TTL, cfg.MaxPending, cfg.MaxPendingOfOne, ended)}
	} else {
		c.flows = &sharedFlows{
			store: cfg.Flows, local: newPending(cfg.TTL, cfg.MaxPending, cfg.MaxPendingOfOne, nil),
			ttl: cfg.TTL, most: cfg.MaxPending, mostOf: cfg.MaxPendingOfOne, ended: ended, log: cfg.Logger,
			known: func(upstream string) bool { return c.ups[upstream] != nil },
		}
	}
	return c, nil
}

// SetBase sets the gateway's own URL (scheme://host[:port]), under which
// /connect/ is served; the identity provider and the upstreams'
// authorization servers must know its redirect URIs,
// base/connect/signin and base/connect/callback.
func (c *Connector) SetBase(base string) {
	base = strings.TrimSuffix(base, "/")
	c.base.Store(&base)
}

func (c *Connector) baseURL() string {
	if b := c.base.Load(); b != nil {
		return *b
	}
	return ""
}

// PrincipalKey is the vault's key of p: its user (issuer and subject),
// whatever its client.
func PrincipalKey(p *auth.Principal) string { return quota.PrincipalKey(p.Issuer, p.Subject, "") }

// callerOf returns the verified principal of the caller of ctx's request.
func callerOf(ctx context.Context) (*server.Request, *auth.Principal) {
	req := server.RequestFromContext(ctx)
	if req == nil {
		return nil, nil
	}
	p, ok := auth.PrincipalFromContext(req.ArrivalContext())
	if !ok || p.Subject == "" {
		return req, nil
	}
	return req, p
}

// Authorize is the gateway.Upstream.Authorize of upstream: a caller with
// a token in the vault goes on; one without gets -32042, a URL
// elicitation of the link to authorize it; one without a principal is
// refused.
func (c *Connector) Authorize(upstream string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, p := callerOf(ctx)
		if p == nil {
			return server.Errorf(protocol.CodeInvalidRequest, "upstream %s acts as each user: call it with a token of the gateway's own authorization", upstream)
		}
		_, err := c.vault.Token(ctx, PrincipalKey(p), upstream)
		if err == nil {
			return nil
		}
		if !errors.Is(err, accounts.ErrAuthorize) {
			c.log.Warn("connect: the vault failed", "upstream", upstream, "error", err)
			return server.Errorf(protocol.CodeInternal, "upstream %s: the user's token is not available now; try again later", upstream)
		}
		f := &flow{principal: PrincipalKey(p), issuer: p.Issuer, sub: p.Subject, upstream: upstream}
		if req.InSession() {
			f.session = req.Session
		}
		added, err := c.flows.add(ctx, f, c.cfg.Now())
		if err != nil {
			c.log.Warn("connect: the flows' store failed", "upstream", upstream, "error", err)
			return server.Errorf(protocol.CodeInternal, "upstream %s: the authorization cannot start now; try again later", upstream)
		}
		if !added {
			return server.Errorf(protocol.CodeServerBusy, "upstream %s: too many authorizations under way; try again later", upstream)
		}
		c.events.WithLabelValues(upstream, "started").Inc()
		return c.ask(ctx, req, f, c.baseURL()+"/connect/"+f.id)
	}
}

// Refused is the gateway.Upstream.Refused of upstream, which answered
// HTTP 401 to a caller's request: the first time, the caller's token is
// renewed (a refresh, whatever its expiry); when the refresh fails, or
// again (the renewed token was refused too: the connection is
// forgotten), the caller is asked to authorize the upstream again, as
// Authorize asks, on this call.
func (c *Connector) Refused(upstream string) func(ctx context.Context, again bool) error {
	authorize := c.Authorize(upstream)
	return func(ctx context.Context, again bool) error {
		_, p := callerOf(ctx)
		if p == nil {
			return server.Errorf(protocol.CodeInvalidRequest, "upstream %s acts as each user: call it with a token of the gateway's own authorization", upstream)
		}
		key := PrincipalKey(p)
		if again {
			if err := c.vault.Forget(ctx, key, upstream); err != nil {
				c.log.Warn("connect: the vault failed", "upstream", upstream, "error", err)
				return server.Errorf(protocol.CodeInternal, "upstream %s refused your token; it cannot be forgotten now: try again later", upstream)
			}
			c.log.Info("connect: the upstream refused a renewed token: its user authorizes again", "upstream", upstream)
			return authorize(ctx)
		}
		// The token the entry holds is the one refused, unless another
		// call renewed it since: then it is renewed once more.
		_, err := c.vault.Renew(ctx, key, upstream, "")
		switch {
		case err == nil:
			return nil
		case errors.Is(err, accounts.ErrAuthorize):
			c.log.Info("connect: the upstream refused a token that cannot be renewed: its user authorizes again", "upstream", upstream)
			return authorize(ctx)
		default:
			c.log.Warn("connect: a refused token could not be renewed", "upstream", upstream, "error", err)
			return server.Errorf(protocol.CodeInternal, "upstream %s refused your token (HTTP 401), and it cannot be renewed now; try again later", upstream)
		}
	}
}

// ask asks the caller of req to open link, the flow f's. A client that
// declared the elicitation url capability is asked in its era's way: in a
// 2025-11-25 session, elicitation/create in url mode, after whose accept
// the call waits for the flow to end (or the call to be cancelled, or the
// link to expire) and goes on as the user; in a 2026-07-28 request, the
// elicitation is an input request of an input_required result, and the
// retry goes on when the user completed the flow. Any other client, a
// declined elicitation, or a retry before the flow completed gets -32042.
func (c *Connector) ask(ctx context.Context, req *server.Request, f *flow, link string) error {
	fallback := urlElicitation(f, link)
	if caps := req.ClientCapabilities.Elicitation; caps == nil || caps.URL == nil {
		c.log.Debug("connect: the client declared no url elicitation; -32042", "upstream", f.upstream)
		return fallback
	}
	f.waiting.Store(req.InSession())
	res, err := server.Elicit(ctx, &server.ElicitParams{
		Mode: server.ElicitModeURL, URL: link, ElicitationID: f.elicitation, Message: elicitationMessage(f),
	})
	if err != nil && !req.InSession() {
		return err // a 2026-07-28 request interrupted: the core makes it the input_required result
	}
	if err != nil || res.Action != server.ElicitAccept || !req.InSession() {
		f.waiting.Store(false) // no call waits: the callback tells the session
		if err != nil {
			c.log.Debug("connect: the url elicitation was not asked; -32042", "upstream", f.upstream, "error", err)
		}
		return fallback
	}
	if err := c.await(ctx, f); err != nil {
		f.waiting.Store(false)
		return err
	}
	if _, err := c.vault.Token(ctx, f.principal, f.upstream); err != nil {
		return fallback
	}
	if err := server.NotifyElicitationComplete(ctx, f.elicitation); err != nil {
		c.log.Debug("connect: notifications/elicitation/complete not sent", "upstream", f.upstream, "error", err)
	}
	return nil
}

// awaitPoll is how often a call waiting for its flow looks at the vault:
// the flow may complete on another replica, which tells this one nothing.
const awaitPoll = 500 * time.Millisecond

// await waits until f ends here, the vault holds the token of f's
// principal (the flow completed on any replica), or f expires; ctx's
// error when it ends first.
func (c *Connector) await(ctx context.Context, f *flow) error {
	wait := time.NewTimer(time.Until(f.expires))
	defer wait.Stop()
	poll := time.NewTicker(awaitPoll)
	defer poll.Stop()
	for {
		select {
		case <-f.done:
			return nil
		case <-wait.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			if _, err := c.vault.Token(ctx, f.principal, f.upstream); err == nil {
				return nil
			}
		}
	}
}

// elicitationMessage is what the user is told about f.
func elicitationMessage(f *flow) string {
	return "Authorize the gateway to use your account at " + f.upstream + ": open the link, sign in, and approve; then retry."
}

// urlElicitation is the -32042 URLElicitationRequiredError of f
// (MCP 2025-11-25).
func urlElicitation(f *flow, link string) error {
	data, _ := json.Marshal(map[string]any{"elicitations": []map[string]string{{
		"mode": "url", "elicitationId": f.elicitation, "url": link, "message": elicitationMessage(f),
	}}})
	return &server.Error{Code: protocol.CodeURLElicitationRequired, Message: "upstream " + f.upstream + " needs your authorization", Data: data}
}

// Credentials returns the gateway.Upstream.Credentials of upstream: a
// caller's request carries the caller's own token; what no caller sends
// carries own's.
func (c *Connector) Credentials(upstream string, own func(context.Context) (http.Header, error)) func(context.Context) (http.Header, error) {
	return func(ctx context.Context) (http.Header, error) {
		req, p := callerOf(ctx)
		if req == nil {
			return own(ctx)
		}
		if p == nil {
			return nil, errors.New("no verified caller")
		}
		tok, err := c.vault.Token(ctx, PrincipalKey(p), upstream)
		if err != nil {
			return nil, errors.New("the caller's token is not available")
		}
		return http.Header{"Authorization": {"Bearer " + tok}}, nil
	}
}

// TokenURL returns the token endpoint of upstream's authorization server.
func (c *Connector) TokenURL(upstream string) string { return c.ups[upstream].as.TokenEndpoint }

// Vault returns the vault of the user-mode upstreams.
func (c *Connector) Vault() *accounts.Vault { return c.vault }
