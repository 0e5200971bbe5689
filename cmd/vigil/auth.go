package main

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// authHTTPTimeout bounds each call to the authorization server: discovery,
// the JWK Set, introspection.
const authHTTPTimeout = 10 * time.Second

// authorization is the OAuth resource server that guards /mcp when
// -auth-issuer is set.
type authorization struct {
	rs    *oauth.ResourceServer
	x     *oauth.Exchanger // -auth-exchange-*; nil without
	close func()           // releases the verifier (its background key refresh)
}

// newAuthorization builds the resource server of resource, the canonical
// URI of /mcp: a JWT verifier with discovery from -auth-issuer, or with
// VIGIL_AUTH_INTROSPECTION_CLIENT_ID and _SECRET an introspection
// verifier at the issuer's introspection endpoint. Tokens must name
// resource as their audience. The scopes every request needs are
// -auth-scopes; those of each tool, the tool's own (srv.ToolScopes). Its
// failures are counted in registry. A JWT verifier fetches the issuer's
// metadata and keys now: an issuer that cannot be reached fails the start.
func newAuthorization(ctx context.Context, cfg config, resource string, srv *server.Server, registry prometheus.Registerer, logger *slog.Logger) (*authorization, error) {
	client := &http.Client{Timeout: authHTTPTimeout}
	if cfg.authInsecureHTTP {
		logger.Warn("the authorization server may be reached over plain http (-auth-insecure-http): anyone on the path can swap its keys and mint any token", "issuer", cfg.authIssuer)
	}
	var verifier oauth.Verifier
	release := func() {}
	if cfg.introspectionClientID != "" {
		v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionConfig{
			Issuer:            cfg.authIssuer,
			ClientID:          cfg.introspectionClientID,
			ClientSecret:      cfg.introspectionSecret,
			Audiences:         []string{resource},
			HTTPClient:        client,
			Logger:            logger,
			CacheTTL:          introspectionCacheTTL(cfg.authCacheTTL),
			AllowInsecureHTTP: cfg.authInsecureHTTP,
			MissRate:          cfg.authIntrospectRate,
		})
		if err != nil {
			return nil, fmt.Errorf("-auth-issuer %s: introspection: %w", cfg.authIssuer, err)
		}
		verifier = v
	} else {
		dctx, cancel := context.WithTimeout(ctx, authHTTPTimeout)
		defer cancel()
		v, err := oauth.NewJWTVerifier(dctx, oauth.JWTConfig{
			Issuer:            cfg.authIssuer,
			Audiences:         []string{resource},
			HTTPClient:        client,
			Logger:            logger,
			AllowInsecureHTTP: cfg.authInsecureHTTP,
		})
		if err != nil {
			return nil, fmt.Errorf("-auth-issuer %s: %w", cfg.authIssuer, err)
		}
		verifier, release = v, func() { _ = v.Close() }
	}
	dpop, err := dpopConfig(cfg)
	if err != nil {
		release()
		return nil, err
	}
	rs, err := oauth.New(oauth.Config{
		Resource:             resource,
		AuthorizationServers: []string{cfg.authIssuer},
		Verifier:             verifier,
		Scopes:               cfg.authScopes,
		ToolScopes:           srv.ToolScopes,
		AllToolScopes:        srv.AllToolScopes,
		HideTools:            cfg.authHideTools,
		DPoP:                 dpop,
		ResourceName:         "Vigil",
		MaxBodyBytes:         cfg.maxBody,
		Registerer:           registry,
		Logger:               logger,
	})
	if err != nil {
		release()
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

// introspectionCacheTTL is the IntrospectionConfig.CacheTTL of
// -auth-cache-ttl d, where 0 means no cache.
func introspectionCacheTTL(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// public returns the paths the resource server serves next to /mcp: its
// protected resource metadata.
func (a *authorization) public() map[string]http.Handler {
	m := make(map[string]http.Handler)
	for _, p := range a.rs.MetadataPaths() {
		m[p] = a.rs.MetadataHandler()
	}
	return m
}
