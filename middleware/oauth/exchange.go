package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
)

// RFC 8693 §2.1 and §3: the grant, and the type of the subject token.
const (
	grantTokenExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
)

// Bounds of an [Exchanger].
const (
	// exchangeCacheSize bounds the exchanged tokens kept, the least
	// recently used dropped first.
	exchangeCacheSize = 10000
	// exchangeMargin is how long before its expiry an exchanged token is
	// no longer handed out: the handler must have time to use it.
	exchangeMargin = 30 * time.Second
	// maxAudienceBytes bounds the audience asked for, maxExchangeScopes
	// the scopes: a handler may pass on what a client chose.
	maxAudienceBytes  = 2048
	maxExchangeScopes = 64
	// maxExchangeBody bounds the token endpoint's answer, and
	// maxExchangedToken the token in it.
	maxExchangeBody   = 64 << 10
	maxExchangedToken = 16 << 10
)

// The outcomes an Exchanger counts, the outcome label of
// mcp_server_auth_exchanges_total.
const (
	exchangeExchanged = "exchanged"        // the authorization server issued a token
	exchangeCached    = "cached"           // a token exchanged before, still good
	exchangeRefused   = "refused"          // the authorization server refused (an OAuth error answer)
	exchangeError     = "error"            // the authorization server could not be asked (or not with this audience and scopes), or answered nonsense
	exchangeNoSubject = "no_subject_token" // called outside a request verified by the ResourceServer
)

var exchangeOutcomes = []string{exchangeExchanged, exchangeCached, exchangeRefused, exchangeError, exchangeNoSubject}

// errNoSubjectToken is the error of an Exchange called without the token
// of a request the ResourceServer verified.
var errNoSubjectToken = errors.New("auth: token exchange: no subject token: call Exchange with a handler's context, " +
	"of a request that carried a bearer token to this ResourceServer (not one another replica forwarded)")

// ExchangeConfig configures [ResourceServer.Exchanger]. Endpoint and
// ClientID are required.
type ExchangeConfig struct {
	// Endpoint is the authorization server's token endpoint, which must
	// support the token exchange grant (RFC 8693); https, or http on a
	// loopback host. The subject token is sent there and nowhere else:
	// redirects are not followed.
	Endpoint string
	// ClientID and ClientSecret authenticate this server to Endpoint
	// (client_secret_basic). The secret never appears in errors or logs.
	ClientID     string
	ClientSecret string
	// HTTPClient calls Endpoint (its CheckRedirect and Jar are not used);
	// nil means a client with a 10 s timeout.
	HTTPClient *http.Client
}

// Exchanger gets handlers tokens for other services on behalf of the
// caller, by token exchange (RFC 8693) at the authorization server: the
// MCP authorization spec forbids passing the client's token on, and the
// handler never sees it. It is safe for concurrent use.
type Exchanger struct {
	rs       *ResourceServer
	endpoint string
	clientID string
	secret   string
	client   *http.Client
	cache    *exchangeCache
	flight   singleflight.Group
	counts   *prometheus.CounterVec // nil: no metric
	now      func() time.Time
}

// Exchanger returns the token exchanger of cfg for the requests rs
// verifies, and from then on keeps each verified request's token in its
// context, out of handlers' reach, for [Exchanger.Exchange]. It registers
// mcp_server_auth_exchanges_total with rs's Config.Registerer, every
// outcome at zero: call it once, before serving.
func (rs *ResourceServer) Exchanger(cfg ExchangeConfig) (*Exchanger, error) {
	u, err := url.Parse(cfg.Endpoint)
	switch {
	case cfg.Endpoint == "":
		return nil, errors.New("auth: ExchangeConfig.Endpoint is required")
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "":
		return nil, errors.New("auth: ExchangeConfig.Endpoint is not an http(s) URL")
	case cfg.ClientID == "":
		return nil, errors.New("auth: ExchangeConfig.ClientID is required")
	}
	if err := checkTransport("ExchangeConfig.Endpoint", cfg.Endpoint, false); err != nil {
		return nil, err
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	x := &Exchanger{
		rs:       rs,
		endpoint: cfg.Endpoint,
		clientID: cfg.ClientID,
		secret:   cfg.ClientSecret,
		// No redirect is followed (a 307 would send the subject token on
		// to wherever it points), and no cookie kept.
		client: &http.Client{
			Transport:     client.Transport,
			Timeout:       client.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		cache: newExchangeCache(exchangeCacheSize),
		now:   time.Now,
	}
	if rs.cfg.Registerer != nil {
		x.counts = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricAuthExchanges,
			Help: "Token exchanges (RFC 8693) handlers asked for, by outcome: exchanged (the authorization server issued a token), " +
				"cached (one exchanged before), refused (the authorization server refused), error (it could not be asked, or answered nonsense), " +
				"no_subject_token (asked outside a request verified with a bearer token).",
		}, []string{"outcome"})
		for _, o := range exchangeOutcomes {
			x.counts.WithLabelValues(o)
		}
		if err := rs.cfg.Registerer.Register(x.counts); err != nil {
			return nil, fmt.Errorf("auth: register %s: %w", mcpconv.MetricAuthExchanges, err)
		}
	}
	rs.exchanging.Store(true)
	return x, nil
}

// Exchange returns an access token for audience, with scopes (none: the
// authorization server's default), on behalf of the principal of the
// request ctx belongs to: a handler's context (or the context of a request
// rs's Handler let through). The token the caller presented is the subject
// token, sent only to the token endpoint. A token is exchanged once per
// subject token (never handed out for another, even of the same
// principal), audience and scopes, and handed out again for it until 30 s
// before its expiry or the caller's token's, whichever is first; an
// answer without expires_in is not kept. Each call is spanned (a child of
// ctx's span) and counted. The error of a refusal names the authorization
// server's error code; it never holds a token.
func (x *Exchanger) Exchange(ctx context.Context, audience string, scopes ...string) (string, error) {
	_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName).Start(ctx, "token exchange",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("vigil.oauth.exchange.audience", cut(audience, 256))))
	defer span.End()
	tok, outcome, err := x.exchange(ctx, audience, scopes)
	x.count(outcome)
	span.SetAttributes(attribute.String("vigil.oauth.exchange.outcome", outcome))
	if err != nil {
		span.SetStatus(codes.Error, outcome)
		level := slog.LevelDebug
		if outcome == exchangeError {
			level = slog.LevelInfo // the authorization server's trouble, not the caller's
		}
		x.rs.logger.LogAttrs(ctx, level, "auth: token exchange failed", slog.String("outcome", outcome),
			slog.String("audience", cut(audience, 256)), slog.String("error", err.Error()))
		return "", err
	}
	return tok, nil
}

// tracerName names the tracer of the exchange spans.
const tracerName = "github.com/vigil-mcp/vigil/middleware/oauth"

// exchange is Exchange without its span, count and log.
func (x *Exchanger) exchange(ctx context.Context, audience string, scopes []string) (string, string, error) {
	held := heldTokenOf(ctx)
	if held == nil || held.rs != x.rs {
		return "", exchangeNoSubject, errNoSubjectToken
	}
	switch {
	case audience == "" || len(audience) > maxAudienceBytes:
		return "", exchangeError, fmt.Errorf("auth: token exchange: the audience must have 1 to %d bytes", maxAudienceBytes)
	case len(scopes) > maxExchangeScopes:
		return "", exchangeError, fmt.Errorf("auth: token exchange: more than %d scopes", maxExchangeScopes)
	}
	for _, s := range scopes {
		if !validScope(s) {
			return "", exchangeError, fmt.Errorf("auth: token exchange: invalid scope %q", cut(s, 64))
		}
	}
	key := exchangeKey(held.p, held.token, audience, scopes)
	if tok, ok := x.cache.get(key, x.now()); ok {
		return tok, exchangeCached, nil
	}
	ch := x.flight.DoChan(string(key[:]), func() (any, error) {
		if tok, ok := x.cache.get(key, x.now()); ok {
			return exchanged{tok, exchangeCached}, nil
		}
		// Shared by every caller: not canceled by the first one's ctx.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultHTTPTimeout)
		defer cancel()
		tok, expiresIn, outcome, err := x.call(cctx, held.token, audience, scopes)
		if err != nil {
			return exchanged{outcome: outcome}, err
		}
		now := x.now()
		if expiresIn > 0 {
			until := now.Add(time.Duration(expiresIn) * time.Second).Add(-exchangeMargin)
			if !held.p.Expiry.IsZero() {
				until = minTime(until, held.p.Expiry)
			}
			x.cache.put(key, held.p, tok, until, now)
		}
		return exchanged{tok, exchangeExchanged}, nil
	})
	select {
	case r := <-ch:
		e, _ := r.Val.(exchanged)
		if r.Err != nil {
			return "", e.outcome, r.Err
		}
		return e.token, e.outcome, nil
	case <-ctx.Done():
		return "", exchangeError, fmt.Errorf("auth: token exchange: %w", context.Cause(ctx))
	}
}

// exchanged is the result of one flight.
type exchanged struct{ token, outcome string }

// tokenAnswer is a token endpoint's answer (RFC 8693 §2.2.1).
type tokenAnswer struct {
	AccessToken     string          `json:"access_token"`
	IssuedTokenType string          `json:"issued_token_type"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	Error           string          `json:"error"`
}

// call asks the token endpoint for a token for audience and scopes in
// exchange for subject, and returns it with its lifetime in seconds (0:
// unknown).
func (x *Exchanger) call(ctx context.Context, subject, audience string, scopes []string) (string, int64, string, error) {
	form := url.Values{
		"grant_type":         {grantTokenExchange},
		"subject_token":      {subject},
		"subject_token_type": {tokenTypeAccessToken},
		"audience":           {audience},
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: form-encode the credentials, then use them as the
	// basic authentication user and password.
	req.SetBasicAuth(url.QueryEscape(x.clientID), url.QueryEscape(x.secret))
	resp, err := x.client.Do(req)
	if err != nil {
		// The url.Error names the endpoint, never the body.
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBody+1))
	switch {
	case err != nil:
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: reading the answer: %w", err)
	case len(body) > maxExchangeBody:
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: answer over %d bytes", maxExchangeBody)
	}
	var a tokenAnswer
	jsonErr := json.Unmarshal(body, &a)
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		jsonErr = errors.New("not JSON")
	}
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized {
		if jsonErr == nil && a.Error != "" {
			// RFC 6749 §5.2: the token was not issued (invalid_grant,
			// invalid_target, invalid_scope, ...).
			return "", 0, exchangeRefused, fmt.Errorf("auth: token exchange refused: %s", cut(sanitizeDescription(a.Error), 64))
		}
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: status %d", resp.StatusCode)
	case jsonErr != nil:
		return "", 0, exchangeError, errors.New("auth: token exchange: the answer is not a JSON object")
	case a.AccessToken == "" || len(a.AccessToken) > maxExchangedToken || !isB64Token(a.AccessToken):
		return "", 0, exchangeError, errors.New("auth: token exchange: the answer has no usable access_token")
	case !strings.EqualFold(a.TokenType, "Bearer"):
		// N_A (not an access token), or a token bound to a key this
		// server does not hold (DPoP).
		return "", 0, exchangeError, fmt.Errorf("auth: token exchange: token_type %q, not Bearer", cut(sanitizeDescription(a.TokenType), 32))
	}
	var expiresIn float64
	if len(a.ExpiresIn) > 0 && string(a.ExpiresIn) != "null" {
		if json.Unmarshal(a.ExpiresIn, &expiresIn) != nil || expiresIn < 0 {
			return "", 0, exchangeError, errors.New("auth: token exchange: malformed expires_in")
		}
	}
	return a.AccessToken, int64(min(expiresIn, 1<<31)), exchangeExchanged, nil
}

// count counts one Exchange under outcome.
func (x *Exchanger) count(outcome string) {
	if x.counts != nil {
		x.counts.WithLabelValues(outcome).Inc()
	}
}

// heldToken is the verified token of a request, with its principal, which
// rs's Handler keeps in the request's context once rs has an Exchanger:
// only the Exchanger reads it (its key is unexported, and printing the
// context shows its type, not the token).
type heldToken struct {
	rs    *ResourceServer
	p     *auth.Principal
	token string
}

type heldTokenKey struct{}

// heldTokenOf returns the token held for the request of ctx: in a
// handler's context, the one of its request's arrival context only (a
// 2025 session's handler context derives from the context of the request
// that opened the session, whose token may have been replaced since); in
// the context of a request rs's Handler let through, its own. Nil
// without one.
func heldTokenOf(ctx context.Context) *heldToken {
	if req := server.RequestFromContext(ctx); req != nil {
		ctx = req.ArrivalContext()
	}
	h, _ := ctx.Value(heldTokenKey{}).(*heldToken)
	return h
}

// exchangeKey is the cache key of an exchange: the subject token's
// SHA-256 (another token of the same principal may differ in a claim the
// authorization server decides on, a tenant, acr or consent, and must not
// reuse what this one obtained), the principal's key, act chain and
// scopes, the audience and the scopes asked for, length-prefixed and
// hashed. The key tells nothing of the token.
func exchangeKey(p *auth.Principal, subject, audience string, scopes []string) tokenHash {
	h := sha256.New()
	sum := hashToken(subject)
	_, _ = h.Write(sum[:])
	put := func(s string) {
		_ = binary.Write(h, binary.BigEndian, uint32(len(s)))
		_, _ = io.WriteString(h, s)
	}
	list := func(l []string) {
		_ = binary.Write(h, binary.BigEndian, uint32(len(l)))
		for _, s := range l {
			put(s)
		}
	}
	put(p.Key())
	list(p.Actors)
	list(sortedCopy(p.Scopes))
	put(audience)
	list(sortedCopy(scopes))
	var k tokenHash
	h.Sum(k[:0])
	return k
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// cut returns s cut to at most n bytes, for a log or span attribute.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
