package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// VerifierConfig configures [NewVerifier]. It verifies tokens one of two
// ways, its mode: when IntrospectionEndpoint or ClientID is set, it asks
// the authorization server about each token (RFC 7662 introspection, the
// endpoint discovered from Issuer when not given); otherwise tokens are
// JWT access tokens (RFC 9068) checked against the issuer's keys
// (JWKSURI, or discovered from Issuer). A field of the other mode that is
// set makes NewVerifier fail. Audiences is required, and so is Issuer for
// JWTs, or IntrospectionEndpoint when Issuer is empty.
type VerifierConfig struct {
	// Issuer is the authorization server. For JWTs, a token's iss must
	// equal it exactly, and unless JWKSURI is set the key set is found by
	// discover from it. When introspecting it is optional: an answer's
	// iss, when it has one, must equal it; without IntrospectionEndpoint
	// the endpoint is discovered from it at the first Verify.
	Issuer string
	// Audiences are the resource URIs this server answers to (RFC 8707),
	// at least one; a token's aud must contain one of them (an
	// introspection answer with no aud is refused as [ReasonWrongAudience]).
	Audiences []string
	// Claims names the claims (the members of an introspection answer)
	// copied into [auth.Principal.Claims].
	Claims []string
	// Leeway is the clock skew allowed on exp, nbf and iat; 0 means
	// defaultLeeway, a negative value none.
	Leeway time.Duration
	// CacheSize bounds the cache of verified tokens; 0 means 10,000, a
	// negative value disables the cache. One principal's tokens hold at
	// most an eighth of it, its own least recently used going first
	// beyond. Introspection remembers refused tokens apart, in a cache of
	// the same size, so that made-up tokens never evict an active one.
	CacheSize int
	// CacheTTL bounds how long a verified token is cached (never past its
	// exp), and so how long a revoked token keeps working when
	// introspecting; 0 means [DefaultCacheTTL]. A negative value caches no
	// active token when introspecting (every request is introspected,
	// within MissRate), and means [DefaultCacheTTL] for JWTs (whose cache
	// CacheSize -1 disables).
	CacheTTL time.Duration
	// HTTPClient fetches the metadata and the key set, or calls the
	// introspection endpoint; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// AllowInsecureHTTP accepts an issuer, jwks_uri, introspection endpoint
	// or redirect over plain http on any host. Otherwise they must be
	// https, except on loopback hosts (localhost, 127.0.0.0/8, ::1): on
	// plain http, anyone on the path could swap the key set and mint any
	// token, or read ClientSecret and forge the answers. For tests and labs.
	AllowInsecureHTTP bool
	// Logger receives key-set refresh failures, or the introspection
	// endpoint's; nil discards them.
	Logger *slog.Logger

	// Algorithms, JWTs only, are the accepted JWS algorithms; empty means
	// all the asymmetric ones: RS256, RS384, RS512, PS256, PS384, PS512,
	// ES256, ES384, ES512 and EdDSA. HMAC algorithms and "none" are refused.
	Algorithms []string
	// JWKSURI, JWTs only, is the key set's URL; empty means discover it
	// from Issuer.
	JWKSURI string
	// RefreshInterval, JWTs only, is how often the key set is refetched in
	// the background; 0 means defaultRefreshInterval.
	RefreshInterval time.Duration

	// IntrospectionEndpoint, when set, is the RFC 7662 endpoint asked about
	// each token, and selects introspection.
	IntrospectionEndpoint string
	// ClientID and ClientSecret, introspection only (a ClientID selects
	// it), authenticate this resource server to the endpoint
	// (client_secret_basic). The secret never appears in errors or logs.
	ClientID     string
	ClientSecret string
	// NegativeCacheTTL, introspection only, is how long a refused token is
	// remembered; 0 means defaultNegativeCacheTTL. A failure to reach the
	// endpoint is never cached.
	NegativeCacheTTL time.Duration
	// MissRate, introspection only, is how many calls per second are made
	// for tokens in neither cache, with bursts of MissBurst: a token bucket
	// shared by every caller, so that a flood of made-up tokens cannot turn
	// this server into an amplifier against the authorization server. 0
	// means 20, a negative value no limit. MissBurst 0 means 2 s of MissRate.
	MissRate  float64
	MissBurst int
	// MaxConcurrentMisses, introspection only, bounds the calls in progress
	// at once; 0 means 8, a negative value no bound. One client address
	// (known through streamable.ConnContext) may hold half of them, waiting
	// or in progress; its next new tokens are refused at once. Behind a
	// proxy all clients are one address.
	MaxConcurrentMisses int
	// MissWait, introspection only, is how long a new token waits, in
	// arrival order, for the bucket and a free call before it is refused as
	// [ReasonVerifierBusy] (503); 0 means 1 s, a negative value no wait.
	MissWait time.Duration

	// now is the clock; nil means time.Now. For the tests of this package.
	now func() time.Time
}

// introspects reports whether c selects introspection: an endpoint to ask,
// or this resource server's client id at the (discovered) endpoint.
func (c *VerifierConfig) introspects() bool {
	return c.IntrospectionEndpoint != "" || c.ClientID != ""
}

// checkMode returns an error naming the first field set that does not
// apply to c's mode, nil when there is none.
func (c *VerifierConfig) checkMode() error {
	if c.introspects() {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"Algorithms", len(c.Algorithms) > 0},
			{"JWKSURI", c.JWKSURI != ""},
			{"RefreshInterval", c.RefreshInterval != 0},
		} {
			if f.set {
				return fmt.Errorf("auth: VerifierConfig.%s applies to JWT access tokens only, "+
					"but IntrospectionEndpoint or ClientID is set, which selects introspection", f.name)
			}
		}
		return nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"ClientSecret", c.ClientSecret != ""},
		{"NegativeCacheTTL", c.NegativeCacheTTL != 0},
		{"MissRate", c.MissRate != 0},
		{"MissBurst", c.MissBurst != 0},
		{"MaxConcurrentMisses", c.MaxConcurrentMisses != 0},
		{"MissWait", c.MissWait != 0},
	} {
		if f.set {
			return fmt.Errorf("auth: VerifierConfig.%s applies to introspection only, "+
				"which needs IntrospectionEndpoint or ClientID (neither is set: tokens are taken for JWTs)", f.name)
		}
	}
	return nil
}

// TokenVerifier is the [Verifier] of [NewVerifier], in the mode its
// [VerifierConfig] selects. Either way it caches verified tokens by their
// SHA-256 (a steady client costs a hash and a map lookup), is safe for
// concurrent use, and its principals are shared and must not be modified.
//
// Verifying JWTs, it keeps the key set fresh in a background goroutine
// until [TokenVerifier.Close], refetches it (at most about once a second)
// when a token names an unknown key id, and refuses a token with a crit
// header or whose typ is not an access token's (at+jwt, or JWT; see
// checkHeader). Introspecting, concurrent calls for one token make one call
// to the endpoint, refused tokens are remembered for NegativeCacheTTL, the
// calls for tokens in neither cache are rate-limited and bounded (MissRate
// and after), and it holds no goroutine of its own.
type TokenVerifier struct {
	jwt *jwtVerifier           // nil when introspecting
	in  *introspectionVerifier // nil for JWTs
}

// NewVerifier returns the verifier of cfg, or an error saying which field
// is missing, malformed or of the other mode. For JWTs it discovers the
// JWKS URI (unless cfg.JWKSURI is set; bounded by ctx) and fetches the key
// set (bounded by 10 s and the HTTP client's timeout); a key set that
// cannot be fetched yet is not an error (tokens are answered
// [ReasonVerifierError] until it can be). The background refresh runs
// until Close, whatever becomes of ctx. Introspecting, it makes no call
// now: the endpoint, when not given, is discovered at the first Verify.
func NewVerifier(ctx context.Context, cfg VerifierConfig) (*TokenVerifier, error) {
	if err := cfg.checkMode(); err != nil {
		return nil, err
	}
	if cfg.introspects() {
		in, err := newIntrospectionVerifier(cfg)
		if err != nil {
			return nil, err
		}
		return &TokenVerifier{in: in}, nil
	}
	v, err := newJWTVerifier(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &TokenVerifier{jwt: v}, nil
}

// Verify checks token and returns its principal, or an [*Error] saying
// why the token is refused. A token verified before (and still cached)
// costs a SHA-256 and a map lookup. ctx bounds this caller's wait; an
// introspection call, shared by concurrent callers, is bounded by the
// HTTP client's timeout.
func (v *TokenVerifier) Verify(ctx context.Context, token string) (*auth.Principal, error) {
	if v.jwt != nil {
		return v.jwt.Verify(ctx, token)
	}
	return v.in.Verify(ctx, token)
}

// Close stops the background refresh of the key set (a JWT verifier's;
// an introspecting one has none). Verify keeps working on the keys it has.
// Close is idempotent.
func (v *TokenVerifier) Close() error {
	if v.jwt != nil {
		v.jwt.stop()
	}
	return nil
}
