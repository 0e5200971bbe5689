package main

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/cmd/internal/resourceserver"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// authorization is the OAuth resource server that guards /mcp when
// -auth-issuer is set.
type authorization struct {
	rs    *oauth.ResourceServer
	x     *oauth.Exchanger // -auth-exchange-*; nil without
	close func()           // releases the verifier (its background key refresh)
}

// newAuthorization builds the resource server of resource, the canonical
// URI of /mcp, as the -auth-* flags say (package resourceserver), with
// srv's tool scopes and the scopes requestScopes (nil: none) says a
// request needs (endpointScopes, all of them, advertised in its metadata), its failures counted in registry; with -auth-exchange-*,
// its Exchanger and downstream_whoami.
func newAuthorization(
	ctx context.Context, cfg config, resource string, srv *server.Server, requestScopes func(*http.Request) []string, endpointScopes []string,
	registry prometheus.Registerer, logger *slog.Logger,
) (*authorization, error) {
	if cfg.authInsecureHTTP {
		logger.Warn("the authorization server may be reached over plain http (-auth-insecure-http): anyone on the path can swap its keys and mint any token", "issuer", cfg.authIssuer)
	}
	dpop, err := dpopConfig(cfg)
	if err != nil {
		return nil, err
	}
	rs, client, release, err := resourceserver.New(ctx, resourceserver.Config{
		Issuer: cfg.authIssuer, Resource: resource, ClientID: cfg.introspectionClientID, ClientSecret: cfg.introspectionSecret,
		CacheTTL: cfg.authCacheTTL, MissRate: cfg.authIntrospectRate, InsecureHTTP: cfg.authInsecureHTTP, Scopes: cfg.authScopes,
		HideTools: cfg.authHideTools, RequestScopes: requestScopes, EndpointScopes: endpointScopes, DPoP: dpop, MaxBodyBytes: cfg.maxBody, Server: srv, Registerer: registry, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	var x *oauth.Exchanger
	if cfg.exchangeEndpoint != "" {
		if x, err = addExchange(rs, cfg, client, srv); err != nil {
			release()
			return nil, err
		}
	}
	mode := "jwt"
	if cfg.introspectionClientID != "" {
		mode = "introspection"
	}
	logger.Info("authorization", "issuer", cfg.authIssuer, "resource", resource, "verifier", mode,
		"scopes", cfg.authScopes, "metadata", rs.MetadataURL(), "hide_tools", cfg.authHideTools, "exchange_endpoint", cfg.exchangeEndpoint,
		"require_dpop", cfg.authRequireDPoP, "dpop_nonces", cfg.authDPoPNonces)
	return &authorization{rs: rs, x: x, close: release}, nil
}

// dpopNonceInfo names the key DPoP nonces are made with, derived from the
// cluster key.
const dpopNonceInfo = "vigil DPoP nonce key"

// dpopConfig is the DPoP acceptance of cfg: always on beside Bearer, or
// alone with -auth-require-dpop; proofs remembered on Redis with -redis
// (so that one replayed on another replica is refused), else in memory;
// with -auth-dpop-nonces, nonces keyed by a key derived from the cluster
// key with -redis (every replica takes the others'), else by a random one.
func dpopConfig(cfg config) (*oauth.DPoPConfig, error) {
	d := &oauth.DPoPConfig{Required: cfg.authRequireDPoP}
	if cfg.shared != nil {
		d.Replay = cfg.shared.UseDPoPProof
	}
	if !cfg.authDPoPNonces {
		return d, nil
	}
	if cfg.clusterKey != nil {
		key, err := hkdf.Key(sha256.New, cfg.clusterKey, nil, dpopNonceInfo, 32)
		if err != nil {
			return nil, fmt.Errorf("-auth-dpop-nonces: %w", err)
		}
		d.NonceKey = key
		return d, nil
	}
	d.NonceKey = make([]byte, 32)
	_, _ = rand.Read(d.NonceKey) // crypto/rand.Read never fails
	return d, nil
}

// public returns the paths the resource server serves next to /mcp: its
// protected resource metadata.
func (a *authorization) public() map[string]http.Handler { return resourceserver.Public(a.rs) }

// authFlags are the OAuth resource server's (-auth-*): the issuer and
// how its tokens are verified (a JWT, or introspected with
// VIGIL_AUTH_INTROSPECTION_*), the resource, the scopes of every request
// and of each tool, the tool policies, DPoP, hiding tools, and token
// exchange (-auth-exchange-*, VIGIL_AUTH_EXCHANGE_CLIENT_SECRET).
type authFlags struct {
	scopes     string // -auth-scopes, comma-separated
	toolScopes string // -auth-tool-scopes
}

func (g *authFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.authIssuer, "auth-issuer", "", "authorization server `URL`: /mcp needs a bearer token from this issuer, a JWT verified with its keys (found by discovery), or introspected (VIGIL_AUTH_INTROSPECTION_*)")
	fs.StringVar(&cfg.authResource, "auth-resource", "", "canonical resource `URI` tokens must name (audience); default http://HOST:PORT/mcp of the listener, which must then not be a wildcard address")
	fs.StringVar(&g.scopes, "auth-scopes", "", "comma-separated `scopes` every request to /mcp needs")
	fs.StringVar(&g.toolScopes, "auth-tool-scopes", "", "per-tool scopes, besides -auth-scopes, as `tool=scope+scope,tool2=scope`; every tool named must exist")
	fs.StringVar(&cfg.authPolicyFile, "auth-policy", "", "YAML `file` of per-tool CEL policies over principal, tool, arguments and request (default: EXPR, tools: {NAME: EXPR}), checked after a call's arguments and before its tool runs; a denied call gets a JSON-RPC error naming the policy, a tool whose policy reads no arguments is hidden from a caller it denies; a bad expression fails the start; needs -auth-issuer (see docs/security.md)")
	fs.DurationVar(&cfg.authCacheTTL, "auth-cache-ttl", oauth.DefaultCacheTTL, "how long an introspected active token is trusted before the authorization server is asked again: how long a revoked token keeps working (0: ask for every request); needs VIGIL_AUTH_INTROSPECTION_*")
	fs.Float64Var(&cfg.authIntrospectRate, "auth-introspection-rate", 20, "calls per second to the introspection endpoint for tokens not cached, with bursts of 2 s of it and 8 at once (half of them for one client address); over it a new token is answered 503 verifier_busy, never sent")
	fs.BoolVar(&cfg.authInsecureHTTP, "auth-insecure-http", false, "accept the authorization server (-auth-issuer, its jwks_uri and introspection_endpoint) over plain http on a non-loopback host, where anyone on the path can swap its keys and mint any token: for tests and labs only")
	fs.StringVar(&cfg.exchangeEndpoint, "auth-exchange-endpoint", "", "token endpoint `URL` of the authorization server for token exchange (RFC 8693): with it, tools get tokens for other audiences on behalf of the caller, whose own token is sent there and nowhere else (the demo tool downstream_whoami shows who such a token names); https, or http on loopback; needs -auth-exchange-client-id and VIGIL_AUTH_EXCHANGE_CLIENT_SECRET")
	fs.StringVar(&cfg.exchangeClientID, "auth-exchange-client-id", "", "client `id` vigil authenticates with at -auth-exchange-endpoint (client_secret_basic; the secret from VIGIL_AUTH_EXCHANGE_CLIENT_SECRET)")
	fs.BoolVar(&cfg.authHideTools, "auth-hide-tools", false, "answer a call of a tool whose -auth-tool-scopes the caller lacks exactly as a call of an unknown tool, for tool names that are secret; by default it gets 403 insufficient_scope naming the scopes, the step-up clients follow, and tools/list filtering hides nothing from a caller that guesses a name")
	fs.BoolVar(&cfg.authRequireDPoP, "auth-require-dpop", false, "refuse every token presented as Bearer: each request needs a DPoP-bound token (RFC 9449) under the DPoP scheme with its proof. Without it both are accepted, and a DPoP-bound token presented as Bearer is refused")
	fs.BoolVar(&cfg.authDPoPNonces, "auth-dpop-nonces", false, "DPoP proofs must carry a nonce of the server's (RFC 9449 §9), handed out in DPoP-Nonce with a 401 use_dpop_nonce, valid 5 to 10 minutes; with -redis, every replica takes the others' (keyed by VIGIL_CLUSTER_KEY)")
}

func (g *authFlags) resolve(cfg *config, src flagSource) error {
	if err := readAuthSecrets(cfg, src); err != nil {
		return err
	}
	cfg.authScopes = flagvalue.SplitList(g.scopes)
	var err error
	if cfg.authToolScopes, err = flagvalue.ToolScopes("-auth-tool-scopes", g.toolScopes); err != nil {
		return err
	}
	if cfg.authPolicy, err = readPolicy(*cfg); err != nil {
		return err
	}
	for _, u := range []struct{ flag, v string }{{"-auth-issuer", cfg.authIssuer}, {"-auth-resource", cfg.authResource}} {
		if u.v == "" {
			continue
		}
		if err := flagvalue.CheckURL(u.v); err != nil {
			return fmt.Errorf("%s %q: %w", u.flag, u.v, err)
		}
	}
	if err := checkIssuerTransport(cfg.authIssuer, cfg.authInsecureHTTP); err != nil {
		return err
	}
	return checkNeedIssuer(*cfg)
}

// readAuthSecrets reads the client secrets of introspection and token
// exchange from the environment (src.getenv), and refuses what they need
// and lack, and the introspection flags without introspection.
func readAuthSecrets(cfg *config, src flagSource) error {
	cfg.introspectionClientID = src.getenv(envPrefix + "AUTH_INTROSPECTION_CLIENT_ID")
	cfg.introspectionSecret = src.getenv(envPrefix + "AUTH_INTROSPECTION_CLIENT_SECRET")
	if (cfg.introspectionClientID == "") != (cfg.introspectionSecret == "") {
		return fmt.Errorf("%sAUTH_INTROSPECTION_CLIENT_ID and %sAUTH_INTROSPECTION_CLIENT_SECRET must be set together", envPrefix, envPrefix)
	}
	if cfg.introspectionClientID != "" && cfg.authIssuer == "" {
		return fmt.Errorf("token introspection (%sAUTH_INTROSPECTION_CLIENT_ID) needs -auth-issuer, whose metadata names the introspection endpoint", envPrefix)
	}
	cfg.exchangeSecret = src.getenv(envPrefix + "AUTH_EXCHANGE_CLIENT_SECRET")
	if err := checkExchange(*cfg); err != nil {
		return err
	}
	switch {
	case (src.given["auth-cache-ttl"] || src.given["auth-introspection-rate"]) && cfg.introspectionClientID == "":
		return fmt.Errorf("-auth-cache-ttl and -auth-introspection-rate apply to introspected tokens (%sAUTH_INTROSPECTION_*): a JWT holds until its exp", envPrefix)
	case cfg.authCacheTTL < 0:
		return errors.New("-auth-cache-ttl must not be negative")
	case !(cfg.authIntrospectRate > 0) || math.IsInf(cfg.authIntrospectRate, 0):
		return errors.New("-auth-introspection-rate must be a positive number")
	}
	return nil
}

// checkNeedIssuer refuses the -auth-* flags that mean nothing without
// -auth-issuer.
func checkNeedIssuer(cfg config) error {
	if cfg.authEnabled() {
		return nil
	}
	switch {
	case cfg.authRequireDPoP || cfg.authDPoPNonces:
		return errors.New("-auth-require-dpop and -auth-dpop-nonces need -auth-issuer")
	case cfg.authInsecureHTTP:
		return errors.New("-auth-insecure-http needs -auth-issuer")
	case cfg.authHideTools:
		return errors.New("-auth-hide-tools needs -auth-issuer")
	case cfg.authResource != "" || len(cfg.authScopes) > 0 || len(cfg.authToolScopes) > 0:
		return errors.New("-auth-resource, -auth-scopes and -auth-tool-scopes need -auth-issuer")
	}
	return nil
}

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

// checkIssuerTransport refuses an -auth-issuer over plain http on a
// non-loopback host unless insecure (-auth-insecure-http); middleware/auth
// checks the same of the jwks_uri and introspection_endpoint it discovers.
func checkIssuerTransport(issuer string, insecure bool) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "http" || insecure || loopback.ListenAddr(u.Hostname()) {
		return nil // "" or https; flagvalue.CheckURL has refused the rest
	}
	return fmt.Errorf("-auth-issuer %q is plain http on a non-loopback host: anyone on the path could swap its keys and mint any token, or read the introspection client secret; use https, or -auth-insecure-http for a test or lab", issuer)
}
