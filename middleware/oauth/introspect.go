package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vigil-mcp/vigil/internal/asmeta"
	"github.com/vigil-mcp/vigil/middleware/auth"
)

// defaultNegativeCacheTTL is how long an introspection verifier remembers
// a refused token unless told otherwise.
const defaultNegativeCacheTTL = 30 * time.Second

// introspectionVerifier is a [TokenVerifier] that asks the authorization
// server about each token (RFC 7662), remembering its answers by the
// token's SHA-256: an active token until min(exp, CacheTTL), a refused one
// for NegativeCacheTTL, each kind in its own bounded cache; TokenVerifier
// says the rest.
type introspectionVerifier struct {
	cfg      VerifierConfig
	client   *http.Client
	log      *slog.Logger
	now      func() time.Time
	leeway   time.Duration
	ttl      time.Duration
	negTTL   time.Duration
	cache    *verdictCache // active tokens
	refused  *verdictCache // refused tokens: apart, so that they never evict active ones
	flight   singleflight.Group
	misses   *missGuard // nil: unbounded
	mu       sync.Mutex
	endpoint string // guarded by mu; empty until discovered
}

// cached returns the verdict remembered for k, if any, and until when it
// holds.
func (v *introspectionVerifier) cached(k *tokenHash) (*auth.Principal, *Error, time.Time, bool) {
	now := v.now()
	if p, e, until, ok := v.cache.get(k, now, 0); ok {
		return p, e, until, true
	}
	return v.refused.get(k, now, 0)
}

// newIntrospectionVerifier is [NewVerifier] introspecting (cfg selects
// it).
func newIntrospectionVerifier(cfg VerifierConfig) (*introspectionVerifier, error) {
	if cfg.IntrospectionEndpoint == "" && cfg.Issuer == "" {
		return nil, errors.New("auth: VerifierConfig needs an IntrospectionEndpoint or an Issuer to discover it from")
	}
	if cfg.IntrospectionEndpoint != "" {
		if u, err := url.Parse(cfg.IntrospectionEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errors.New("auth: VerifierConfig.IntrospectionEndpoint is not an http(s) URL")
		}
		if err := checkTransport("VerifierConfig.IntrospectionEndpoint", cfg.IntrospectionEndpoint, cfg.AllowInsecureHTTP); err != nil {
			return nil, err
		}
	} else if err := checkTransport("VerifierConfig.Issuer", cfg.Issuer, cfg.AllowInsecureHTTP); err != nil {
		return nil, err // the endpoint is discovered from it
	}
	if len(cfg.Audiences) == 0 || slices.Contains(cfg.Audiences, "") {
		return nil, errors.New("auth: VerifierConfig.Audiences needs at least one non-empty resource URI")
	}
	v := &introspectionVerifier{cfg: cfg, endpoint: cfg.IntrospectionEndpoint}
	v.cfg.Audiences = slices.Clone(cfg.Audiences)
	v.cfg.Claims = slices.Clone(cfg.Claims)
	v.client = guardRedirects(cfg.HTTPClient, cfg.AllowInsecureHTTP)
	v.log = cfg.Logger
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	v.now = cfg.now
	if v.now == nil {
		v.now = time.Now
	}
	switch v.leeway = cfg.Leeway; {
	case v.leeway == 0:
		v.leeway = defaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	if v.ttl = cfg.CacheTTL; v.ttl == 0 {
		v.ttl = DefaultCacheTTL
	}
	if v.negTTL = cfg.NegativeCacheTTL; v.negTTL <= 0 {
		v.negTTL = defaultNegativeCacheTTL
	}
	size := cfg.CacheSize
	if size == 0 {
		size = defaultCacheSize
	}
	if v.ttl > 0 {
		v.cache = newVerdictCache(size)
	}
	v.refused = newVerdictCache(size)
	v.misses = newMissGuard(&v.cfg)
	return v, nil
}

// Verify is [TokenVerifier.Verify] introspecting: it asks the
// authorization server about token, or remembers its answer.
func (v *introspectionVerifier) Verify(ctx context.Context, token string) (*auth.Principal, error) {
	if err := checkTokenLength(token); err != nil {
		return nil, err
	}
	memo := connMemoFrom(ctx)
	if p, ok := memo.recall(v.cache, token, v.now(), 0); ok {
		return p, nil
	}
	k := hashToken(token)
	if p, e, until, ok := v.cached(&k); ok {
		if e != nil {
			return nil, e
		}
		memo.remember(v.cache, token, p, until, 0)
		return p, nil
	}
	if err := checkTokenSyntax(token); err != nil {
		return nil, err // never sent to the authorization server
	}
	source := memo.addr()
	ch := v.flight.DoChan(string(k[:]), func() (any, error) {
		// A flight that ended between our cache miss and this one left
		// its answer in the cache.
		if p, e, _, ok := v.cached(&k); ok {
			if e != nil {
				return nil, e
			}
			return p, nil
		}
		// Shared by every caller: not canceled by the first one's ctx.
		fctx := context.WithoutCancel(ctx)
		release, err := v.misses.acquire(fctx, source)
		if err != nil {
			return nil, err // not cached: the token is not at fault
		}
		defer release()
		cctx, cancel := context.WithTimeout(fctx, defaultHTTPTimeout)
		defer cancel()
		p, err := v.introspect(cctx, token)
		now := v.now()
		var e *Error
		switch {
		case err == nil:
			v.cache.put(&k, p, nil, now, minTime(p.Expiry, now.Add(v.ttl)), 0)
		case errors.As(err, &e) && e.Reason != ReasonVerifierError && e.Reason != ReasonVerifierBusy:
			v.refused.put(&k, nil, e, now, now.Add(v.negTTL), 0)
		}
		return p, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*auth.Principal), nil
	case <-ctx.Done():
		return nil, &Error{Reason: ReasonVerifierError, Description: "introspection canceled", Err: context.Cause(ctx)}
	}
}

// introspection is an RFC 7662 §2.2 answer.
type introspection struct {
	Active   bool            `json:"active"`
	Scope    string          `json:"scope"`
	ClientID string          `json:"client_id"`
	Username string          `json:"username"`
	Exp      *float64        `json:"exp"`
	Nbf      *float64        `json:"nbf"`
	Iat      any             `json:"iat"`
	Sub      string          `json:"sub"`
	Aud      json.RawMessage `json:"aud"`
	Iss      string          `json:"iss"`
	Act      any             `json:"act"` // RFC 8693 §4.1: the actor, with its own act when it acts for another
	Cnf      any             `json:"cnf"` // RFC 9449 §6.2: cnf.jkt of a DPoP-bound token
}

func (v *introspectionVerifier) introspect(ctx context.Context, token string) (*auth.Principal, error) {
	endpoint, err := v.endpointURL(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, v.unavailable(ctx, "building the request", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.cfg.ClientID != "" {
		// RFC 6749 §2.3.1: form-encode the credentials, then use them as
		// the basic authentication user and password.
		req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, v.unavailable(ctx, "calling the endpoint", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusBadRequest {
		return nil, v.badRequest(ctx, resp)
	}
	var body json.RawMessage
	if err := asmeta.DecodeResponse(resp, endpoint, &body); err != nil {
		return nil, v.unavailable(ctx, "reading the answer", err)
	}
	var in introspection
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, v.unavailable(ctx, "reading the answer", err)
	}
	var raw map[string]json.RawMessage
	if len(v.cfg.Claims) > 0 {
		_ = json.Unmarshal(body, &raw) // body is a JSON object: in decoded it
	}
	return v.principal(&in, raw)
}

// badRequest reads a 400 answer (RFC 6749 §5.2). unsupported_token_type
// (RFC 7009 §2.2.1, which oidc-provider answers for any JWT) says the
// authorization server will not introspect this token, which is then
// refused (and remembered) like an inactive one: the token is at fault,
// not the server. Any other 400 is a verifier error.
func (v *introspectionVerifier) badRequest(ctx context.Context, resp *http.Response) *Error {
	var answer struct {
		Error string `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(b, &answer) == nil && answer.Error == "unsupported_token_type" {
		return &Error{Reason: ReasonInvalidToken, Description: "the authorization server cannot introspect this token"}
	}
	return v.unavailable(ctx, "calling the endpoint", fmt.Errorf("status 400, error %q", sanitizeDescription(answer.Error)))
}

// principal checks an answer, in the order of the reasons.
func (v *introspectionVerifier) principal(in *introspection, raw map[string]json.RawMessage) (*auth.Principal, error) {
	if !in.Active {
		return nil, &Error{Reason: ReasonInvalidToken, Description: "the token is not active"}
	}
	now := v.now()
	var exp time.Time
	if in.Exp != nil {
		exp = unixFloat(*in.Exp)
		if !now.Before(exp.Add(v.leeway)) {
			return nil, &Error{Reason: ReasonExpired, Description: "the token has expired"}
		}
	}
	if in.Nbf != nil && now.Add(v.leeway).Before(unixFloat(*in.Nbf)) {
		return nil, &Error{Reason: ReasonExpired, Description: "the token is not valid yet"}
	}
	switch iat := in.Iat.(type) {
	case nil:
	case float64:
		if now.Add(v.leeway).Before(unixFloat(iat)) {
			return nil, &Error{Reason: ReasonInvalidToken, Description: "the token's iat is in the future"}
		}
	default:
		return nil, &Error{Reason: ReasonInvalidToken, Description: "the token's iat is not a number"}
	}
	var aud []string
	if len(in.Aud) > 0 && string(in.Aud) != "null" {
		var one string
		if err := json.Unmarshal(in.Aud, &one); err == nil {
			aud = []string{one}
		} else if err := json.Unmarshal(in.Aud, &aud); err != nil {
			return nil, &Error{Reason: ReasonWrongAudience, Description: "malformed aud"}
		}
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.cfg.Audiences, a) }) {
		return nil, &Error{Reason: ReasonWrongAudience, Description: "the token was not issued for this resource"}
	}
	if v.cfg.Issuer != "" && in.Iss != "" && in.Iss != v.cfg.Issuer {
		return nil, &Error{Reason: ReasonWrongIssuer, Description: "the token was issued by another authorization server"}
	}
	// A client-credentials token speaks for its client: RFC 7662 makes sub
	// optional, and providers leave it out of such answers (oidc-provider
	// does), so the client is the subject then.
	sub := in.Sub
	if sub == "" {
		sub = in.ClientID
	}
	if sub == "" {
		return nil, &Error{Reason: ReasonInvalidToken, Description: "the token has neither a subject nor a client id"}
	}
	actors, err := actorsOf(in.Act)
	if err != nil {
		return nil, err
	}
	jkt, err := confirmedKey(in.Cnf)
	if err != nil {
		return nil, err
	}
	p := &auth.Principal{Subject: sub, Issuer: in.Iss, ClientID: in.ClientID, Scopes: strings.Fields(in.Scope), Expiry: exp, Actors: actors, KeyThumbprint: jkt}
	if p.Issuer == "" {
		p.Issuer = v.cfg.Issuer
	}
	for _, name := range v.cfg.Claims {
		r, ok := raw[name]
		if !ok {
			continue
		}
		var val any
		if json.Unmarshal(r, &val) == nil {
			if p.Claims == nil {
				p.Claims = make(map[string]any, len(v.cfg.Claims))
			}
			p.Claims[name] = val
		}
	}
	p.Seal()
	return p, nil
}

// endpointURL returns the introspection endpoint, discovering it the
// first time when it was not configured.
func (v *introspectionVerifier) endpointURL(ctx context.Context) (string, error) {
	v.mu.Lock()
	ep := v.endpoint
	v.mu.Unlock()
	if ep != "" {
		return ep, nil
	}
	r, err, _ := v.flight.Do("\x00discover", func() (any, error) {
		md, err := discover(ctx, v.client, v.cfg.Issuer, v.cfg.AllowInsecureHTTP)
		if err != nil {
			return "", err
		}
		if md.IntrospectionEndpoint == "" {
			return "", fmt.Errorf("auth: the metadata of %q has no introspection_endpoint", v.cfg.Issuer)
		}
		if err := checkTransport("introspection_endpoint", md.IntrospectionEndpoint, v.cfg.AllowInsecureHTTP); err != nil {
			return "", err
		}
		v.mu.Lock()
		v.endpoint = md.IntrospectionEndpoint
		v.mu.Unlock()
		return md.IntrospectionEndpoint, nil
	})
	if err != nil {
		return "", v.unavailable(ctx, "discovering the endpoint", err)
	}
	return r.(string), nil
}

// unavailable logs err and returns the verifier_error it becomes. Neither
// carries the client secret: it is only ever in a request header.
func (v *introspectionVerifier) unavailable(ctx context.Context, doing string, err error) *Error {
	v.log.WarnContext(ctx, "auth: introspection failed", "doing", doing, "error", err)
	return &Error{Reason: ReasonVerifierError, Description: "the authorization server is unavailable", Err: err}
}

// Bounds of the NumericDates unixFloat converts: the years 1 and 9999.
const (
	minUnixSeconds = -62135596800 // 0001-01-01T00:00:00Z
	maxUnixSeconds = 253402300799 // 9999-12-31T23:59:59Z
)

// unixFloat converts a NumericDate (seconds since the epoch, possibly
// fractional) to a time, clamped to the years 1 to 9999: a far-future exp
// (year 9999 is a common "never expires") stays in the future instead of
// overflowing a time.Duration (which ends in 2262) into the past.
func unixFloat(f float64) time.Time {
	switch {
	case f >= maxUnixSeconds:
		return time.Unix(maxUnixSeconds, 0).UTC()
	case !(f > minUnixSeconds): // NaN included
		return time.Unix(minUnixSeconds, 0).UTC()
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*float64(time.Second))).UTC()
}
