package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// Defaults of [VerifierConfig].
const (
	defaultLeeway          = 30 * time.Second
	defaultRefreshInterval = time.Hour
	defaultCacheSize       = 10000
	DefaultCacheTTL        = 5 * time.Minute
)

// defaultAlgorithms are the JWS algorithms a [TokenVerifier] accepts unless
// told otherwise: the asymmetric ones. HMAC and "none" are never accepted.
var defaultAlgorithms = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
}

// unknownKIDRate and unknownKIDBurst bound the JWKS refetches caused by
// tokens whose kid is not in the key set: a rotated key is picked up at
// once, a flood of random kids costs the provider one fetch a second.
const (
	unknownKIDRate  = rate.Limit(1)
	unknownKIDBurst = 2
)

// jwtVerifier is a [TokenVerifier] of JWT access tokens (RFC 9068)
// signed with a key of the issuer's JWK Set; TokenVerifier says what it
// does.
type jwtVerifier struct {
	issuer    string
	audiences []string
	claims    []string
	cacheTTL  time.Duration
	now       func() time.Time
	log       *slog.Logger
	parser    *jwt.Parser
	keys      *keyStore
	// keyfunc returns the jwt.Keyfunc of one verification; a field so
	// that tests can count signature work.
	keyfunc func(ctx context.Context) jwt.Keyfunc
	cache   *verdictCache
	stop    context.CancelFunc
}

// newJWTVerifier is [NewVerifier] for JWTs (cfg selects them).
func newJWTVerifier(ctx context.Context, cfg VerifierConfig) (*jwtVerifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("auth: VerifierConfig.Issuer is required for JWT access tokens (set IntrospectionEndpoint to introspect tokens instead)")
	}
	if len(cfg.Audiences) == 0 || slices.Contains(cfg.Audiences, "") {
		return nil, errors.New("auth: VerifierConfig.Audiences needs at least one non-empty resource URI")
	}
	algs, err := allowedAlgorithms(cfg.Algorithms, "algorithm")
	if err != nil {
		return nil, err
	}
	leeway := cfg.Leeway
	switch {
	case leeway == 0:
		leeway = defaultLeeway
	case leeway < 0:
		leeway = 0
	}
	refresh := cfg.RefreshInterval
	if refresh <= 0 {
		refresh = defaultRefreshInterval
	}
	size := cfg.CacheSize
	if size == 0 {
		size = defaultCacheSize
	}
	ttl := cfg.CacheTTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client := guardRedirects(cfg.HTTPClient, cfg.AllowInsecureHTTP)
	jwksURI := cfg.JWKSURI
	if jwksURI == "" {
		md, err := discover(ctx, client, cfg.Issuer, cfg.AllowInsecureHTTP)
		if err != nil {
			return nil, err
		}
		if md.JWKSURI == "" {
			return nil, fmt.Errorf("auth: the metadata of %q has no jwks_uri", cfg.Issuer)
		}
		jwksURI = md.JWKSURI
	}
	if err := checkTransport("jwks_uri", jwksURI, cfg.AllowInsecureHTTP); err != nil {
		return nil, err
	}

	// The background refresh outlives ctx (a startup timeout) and ends at
	// Close.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	v := &jwtVerifier{
		issuer:    cfg.Issuer,
		audiences: slices.Clone(cfg.Audiences),
		claims:    slices.Clone(cfg.Claims),
		cacheTTL:  ttl,
		now:       now,
		log:       logger,
		parser: jwt.NewParser(
			jwt.WithValidMethods(algs),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(leeway),
			jwt.WithTimeFunc(now),
		),
		keys:  &keyStore{MemoryJWKSet: jwkset.NewMemoryStorage()},
		cache: newVerdictCache(size),
		stop:  stop,
	}
	limited := &http.Client{
		Transport:     limitBody{next: transportOf(client), max: maxMetadataBody},
		CheckRedirect: client.CheckRedirect,
		Jar:           client.Jar,
		Timeout:       client.Timeout,
	}
	remote, err := jwkset.NewStorageFromHTTP(jwksURI, jwkset.HTTPClientStorageOptions{
		Client:                    limited,
		Ctx:                       bg,
		HTTPTimeout:               defaultHTTPTimeout,
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			logger.WarnContext(ctx, "auth: JWKS refresh failed", "url", jwksURI, "error", err)
		},
		RefreshInterval: refresh,
		Storage:         v.keys,
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("auth: JWKS: %w", err)
	}
	// Refetching on an unknown kid is gated by kidStore's limiter; the
	// client's own limiter lets every gated refetch through at once.
	inner, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{jwksURI: remote},
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("auth: JWKS: %w", err)
	}
	ks := &kidStore{
		Storage: inner,
		keys:    v.keys,
		bg:      bg,
		limit:   rate.NewLimiter(unknownKIDRate, unknownKIDBurst),
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: bg, Storage: ks})
	if err != nil {
		stop()
		return nil, fmt.Errorf("auth: JWKS: %w", err)
	}
	v.keyfunc = kf.KeyfuncCtx
	return v, nil
}

// Verify is [TokenVerifier.Verify] for JWTs. A token verified before,
// under the same key set, costs a SHA-256 and a map lookup.
func (v *jwtVerifier) Verify(ctx context.Context, token string) (*auth.Principal, error) {
	if err := checkTokenLength(token); err != nil {
		return nil, err
	}
	now := v.now()
	gen := v.keys.gen.Load()
	memo := connMemoFrom(ctx)
	if p, ok := memo.recall(v.cache, token, now, gen); ok {
		return p, nil
	}
	k := hashToken(token)
	if p, _, until, ok := v.cache.get(&k, now, gen); ok {
		memo.remember(v.cache, token, p, until, gen)
		return p, nil
	}
	if err := checkTokenSyntax(token); err != nil {
		return nil, err
	}
	p, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	until := minTime(p.Expiry, now.Add(v.cacheTTL))
	v.cache.put(&k, p, nil, now, until, gen)
	if until.After(now) {
		memo.remember(v.cache, token, p, until, gen)
	}
	return p, nil
}

func (v *jwtVerifier) verify(ctx context.Context, token string) (*auth.Principal, error) {
	var keyErr error
	var headerErr *Error
	keyCalled, emptySet := false, false
	kf := v.keyfunc(ctx)
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		// The header is checked before any key work, and before the
		// claims (the parser calls this first).
		if headerErr = checkHeader(t.Header); headerErr != nil {
			return nil, headerErr
		}
		keyCalled = true
		key, err := kf(t)
		keyErr = err
		if set, ok := key.(jwt.VerificationKeySet); ok && len(set.Keys) == 0 {
			emptySet = true
		}
		return key, err
	})
	if headerErr != nil {
		return nil, headerErr
	}
	if err != nil {
		return nil, v.classify(err, keyCalled, keyErr, emptySet)
	}
	iss, _ := claims["iss"].(string)
	if iss != v.issuer {
		return nil, &Error{Reason: ReasonWrongIssuer, Description: "the token was issued by another authorization server"}
	}
	aud, err := claims.GetAudience()
	if err != nil {
		return nil, &Error{Reason: ReasonInvalidToken, Description: "malformed aud claim", Err: err}
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.audiences, a) }) {
		return nil, &Error{Reason: ReasonWrongAudience, Description: "the token was not issued for this resource"}
	}
	return principalFromClaims(claims, v.issuer, v.claims)
}

// checkHeader refuses, as invalid_token, a JOSE header this verifier must
// not accept:
//
//   - any crit: it lists extensions the recipient must understand, and
//     this verifier implements none (RFC 7515 section 4.1.11: unknown
//     critical extensions make the token invalid);
//   - a typ other than an access token's: "at+jwt" or "application/at+jwt"
//     (RFC 9068), or "JWT", which many authorization servers (Auth0,
//     Keycloak, Entra ID among them) still put on their access tokens.
//     Other types, such as "dpop+jwt" (a DPoP proof) or an ID token's, are
//     tokens of another kind that happen to be signed by the same keys; a
//     missing typ is accepted, as most providers omit it. Media types are
//     compared case-insensitively.
func checkHeader(h map[string]any) *Error {
	if _, ok := h["crit"]; ok {
		return &Error{Reason: ReasonInvalidToken, Description: "the token has critical header extensions (crit), none of which are supported"}
	}
	typ, ok := h["typ"]
	if !ok {
		return nil
	}
	if s, isString := typ.(string); isString {
		switch strings.ToLower(s) {
		case "jwt", "at+jwt", "application/at+jwt":
			return nil
		}
	}
	return &Error{Reason: ReasonInvalidToken, Description: "the token's type (typ) is not an access token's"}
}

// classify maps a jwt parse error to its reason. The checks run in the
// parser's order: shape, algorithm, key, signature, then exp, nbf and iat.
func (v *jwtVerifier) classify(err error, keyCalled bool, keyErr error, emptySet bool) *Error {
	switch {
	case keyCalled && (keyErr != nil || emptySet):
		if v.keys.n.Load() == 0 {
			return &Error{Reason: ReasonVerifierError, Description: "the authorization server's keys are unavailable", Err: err}
		}
		if errors.Is(keyErr, jwkset.ErrKeyNotFound) {
			return &Error{Reason: ReasonUnknownKey, Description: "the token's signing key is unknown", Err: err}
		}
		return &Error{Reason: ReasonInvalidToken, Description: "the token's key does not fit", Err: err}
	case errors.Is(err, jwt.ErrTokenMalformed), errors.Is(err, jwt.ErrTokenSignatureInvalid),
		errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return &Error{Reason: ReasonInvalidToken, Description: "invalid token", Err: err}
	case errors.Is(err, jwt.ErrTokenExpired):
		return &Error{Reason: ReasonExpired, Description: "the token has expired", Err: err}
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return &Error{Reason: ReasonExpired, Description: "the token is not valid yet", Err: err}
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return &Error{Reason: ReasonInvalidToken, Description: "the token's iat is in the future", Err: err}
	case errors.Is(err, jwt.ErrInvalidType):
		return &Error{Reason: ReasonInvalidToken, Description: "a time claim (exp, nbf or iat) is not a number", Err: err}
	default:
		return &Error{Reason: ReasonInvalidToken, Description: "invalid token", Err: err}
	}
}

// principalFromClaims builds the principal of verified claims: sub is
// required; keep names the claims copied into auth.Principal.Claims.
func principalFromClaims(c map[string]any, defaultIssuer string, keep []string) (*auth.Principal, error) {
	sub, _ := c["sub"].(string)
	if sub == "" {
		return nil, &Error{Reason: ReasonInvalidToken, Description: "the token has no subject"}
	}
	p := &auth.Principal{Subject: sub, Issuer: defaultIssuer}
	if iss, ok := c["iss"].(string); ok && iss != "" {
		p.Issuer = iss
	}
	if id, ok := c["client_id"].(string); ok && id != "" {
		p.ClientID = id
	} else if azp, ok := c["azp"].(string); ok {
		p.ClientID = azp
	}
	switch s := c["scope"].(type) {
	case string:
		p.Scopes = strings.Fields(s)
	default:
		switch s := c["scp"].(type) {
		case string:
			p.Scopes = strings.Fields(s)
		case []any:
			for _, e := range s {
				if str, ok := e.(string); ok && str != "" {
					p.Scopes = append(p.Scopes, str)
				}
			}
		}
	}
	actors, err := actorsOf(c["act"])
	if err != nil {
		return nil, err
	}
	p.Actors = actors
	jkt, err := confirmedKey(c["cnf"])
	if err != nil {
		return nil, err
	}
	p.KeyThumbprint = jkt
	switch exp := c["exp"].(type) {
	case float64:
		p.Expiry = unixFloat(exp)
	case json.Number:
		if f, err := exp.Float64(); err == nil {
			p.Expiry = unixFloat(f)
		}
	}
	for _, name := range keep {
		if val, ok := c[name]; ok {
			if p.Claims == nil {
				p.Claims = make(map[string]any, len(keep))
			}
			p.Claims[name] = val
		}
	}
	p.Seal()
	return p, nil
}

// confirmedKey returns the key thumbprint a token's cnf claim (RFC 7800)
// binds it to, cnf.jkt (RFC 9449 §6); "" for a token without cnf or without
// jkt in it. A cnf that is not an object, or a jkt that is not a non-empty
// string, is invalid_token: the token claims a binding this server cannot
// read, and is not taken for an unbound one.
func confirmedKey(cnf any) (string, error) {
	if cnf == nil {
		return "", nil
	}
	m, ok := cnf.(map[string]any)
	if !ok {
		return "", &Error{Reason: ReasonInvalidToken, Description: "malformed cnf claim"}
	}
	v, ok := m["jkt"]
	if !ok {
		return "", nil
	}
	if jkt, ok := v.(string); ok && jkt != "" && len(jkt) <= maxThumbprintBytes {
		return jkt, nil
	}
	return "", &Error{Reason: ReasonInvalidToken, Description: "malformed cnf.jkt claim"}
}

// keyStore holds the fetched key set. It counts the keys, and moves to a
// new generation (which empties the verdict cache) when a refresh drops or
// changes a key, so that a revoked key's tokens are verified again.
type keyStore struct {
	*jwkset.MemoryJWKSet
	gen atomic.Uint64
	n   atomic.Int64
}

// KeyReplaceAll installs a refreshed key set.
func (s *keyStore) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	old, err := s.KeyReadAll(ctx)
	if err != nil {
		return err
	}
	if err := s.MemoryJWKSet.KeyReplaceAll(ctx, given); err != nil {
		return err
	}
	s.n.Store(int64(len(given)))
	if keysDropped(old, given) {
		s.gen.Add(1)
	}
	return nil
}

// keysDropped reports whether a key of old is missing from or different
// in updated.
func keysDropped(old, updated []jwkset.JWK) bool {
	for _, o := range old {
		om := o.Marshal()
		i := slices.IndexFunc(updated, func(u jwkset.JWK) bool { return u.Marshal().KID == om.KID })
		if i < 0 {
			return true
		}
		a, errA := json.Marshal(om)
		b, errB := json.Marshal(updated[i].Marshal())
		if errA != nil || errB != nil || string(a) != string(b) {
			return true
		}
	}
	return false
}

// errRefetchLimited is why an unknown kid was not refetched.
var errRefetchLimited = errors.New("auth: JWKS refetch rate-limited")

// kidStore reads keys by id from the fetched set and, for an unknown id,
// refetches the set: at most unknownKIDRate times a second, one refetch at
// a time (concurrent readers wait for the one under way).
type kidStore struct {
	jwkset.Storage // the HTTP client storage, refetching on a miss
	keys           *keyStore
	bg             context.Context
	limit          *rate.Limiter
	flight         singleflight.Group
}

// KeyRead returns the key kid, refetching the key set if it is unknown.
func (s *kidStore) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.keys.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) {
		return jwk, err
	}
	ch := s.flight.DoChan("refetch", func() (any, error) {
		if !s.limit.Allow() {
			return nil, errRefetchLimited
		}
		rctx, cancel := context.WithTimeout(s.bg, defaultHTTPTimeout)
		defer cancel()
		// The inner client rereads its stores, refetches (the kid is
		// still unknown), and reads again.
		_, err := s.Storage.KeyRead(rctx, kid)
		return nil, err
	})
	select {
	case <-ch:
	case <-ctx.Done():
		return jwkset.JWK{}, fmt.Errorf("%w %q: %w", jwkset.ErrKeyNotFound, kid, ctx.Err())
	}
	jwk, err = s.keys.KeyRead(ctx, kid)
	if err != nil {
		return jwkset.JWK{}, fmt.Errorf("%w %q", jwkset.ErrKeyNotFound, kid)
	}
	return jwk, nil
}

// limitBody is an http.RoundTripper refusing answers over max bytes.
type limitBody struct {
	next http.RoundTripper
	max  int64
}

func (l limitBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: l.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than allowed tells a body at the limit from a
		// longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, errors.New("auth: answer too large")
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// allowedAlgorithms returns algs, or defaultAlgorithms when empty, and an
// error naming what (the algorithm's role) when one of them is not an
// asymmetric JWS algorithm of defaultAlgorithms.
func allowedAlgorithms(algs []string, what string) ([]string, error) {
	if len(algs) == 0 {
		return defaultAlgorithms, nil
	}
	for _, a := range algs {
		if !slices.Contains(defaultAlgorithms, a) {
			return nil, fmt.Errorf("auth: %s %q is not allowed (only asymmetric JWS algorithms: %s)",
				what, a, strings.Join(defaultAlgorithms, ", "))
		}
	}
	return algs, nil
}
