package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/quota"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Tuning of the rate limiter.
const (
	// maxRateBuckets bounds the token buckets kept in memory. Beyond it,
	// full buckets (idle callers, indistinguishable from new ones) go
	// first, then arbitrary ones: an evicted caller gets one burst anew.
	maxRateBuckets = 1 << 16
	// sharedTimeout bounds a shared decision's wait for the shared
	// limiter; past it the bucket in memory decides.
	sharedTimeout = 500 * time.Millisecond
	// sharedRetry is how long the limiter decides in memory alone after
	// the shared limiter failed, before it asks it again.
	sharedRetry = time.Second
	// fallbackLogEvery spaces the warnings of a shared limiter's outage.
	fallbackLogEvery = 30 * time.Second
	// maxKey is the longest principal key a bucket is named by as is; a
	// longer one is hashed.
	maxKey = 128
)

// rateSpec is a token bucket's refill rate (per second) and size.
type rateSpec struct {
	limit rate.Limit
	burst int
}

// newRateSpec returns the bucket of rate per second (<= 0: none) and burst
// (<= 0: the rate rounded up, at least 1).
func newRateSpec(perSecond float64, burst int) rateSpec {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return rateSpec{}
	}
	if burst <= 0 {
		burst = int(math.Min(math.Ceil(perSecond), math.MaxInt32))
	}
	return rateSpec{limit: rate.Limit(perSecond), burst: max(burst, 1)}
}

func (s rateSpec) on() bool { return s.limit > 0 }

// rateLimitConfig is what the rate-limit options set.
type rateLimitConfig struct {
	principal rateSpec
	tools     map[string]rateSpec
	shared    SharedRateLimiter // nil: in memory only
}

// rateLimitOption returns an option that edits the rate-limit config,
// making it first.
func rateLimitOption(f func(*rateLimitConfig)) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) {
		if c.rateLimit == nil {
			c.rateLimit = &rateLimitConfig{}
		}
		f(c.rateLimit)
	})
}

// WithRateLimit limits each principal's requests to perSecond with bursts
// of burst (<= 0: perSecond rounded up), as a token bucket: a POST to the
// MCP endpoint over it is answered 429 by [Instrumentation.RateLimitHandler]. The
// principal is the user of the authenticated one (package auth: its issuer
// and subject, so that one user's clients share its rate), else the
// client's IP address, an IPv6 address by its /64 network. perSecond <= 0 means no limit, the default. [NewInstrumentation]
// reads it and then rate-limits ([Instrumentation.RateLimitHandler]).
func WithRateLimit(perSecond float64, burst int) InstrumentationOption {
	return rateLimitOption(func(c *rateLimitConfig) { c.principal = newRateSpec(perSecond, burst) })
}

// WithToolRateLimit limits each principal's calls of tool to perSecond
// with bursts of burst (<= 0: perSecond rounded up); a tools/call over it
// is answered -32000 with data {"quota":"tool_rate","retryAfterSeconds":N}.
// Each call adds a tool (a later one replaces an earlier one of the same
// tool); perSecond <= 0 removes the tool's limit.
func WithToolRateLimit(tool string, perSecond float64, burst int) InstrumentationOption {
	return rateLimitOption(func(c *rateLimitConfig) {
		if c.tools == nil {
			c.tools = make(map[string]rateSpec)
		}
		if s := newRateSpec(perSecond, burst); s.on() {
			c.tools[tool] = s
		} else {
			delete(c.tools, tool)
		}
	})
}

// SharedRateLimiter is a token bucket store the replicas of a service
// share, such as a redisshare.Shared: Allow takes a token of the bucket
// named key, which refills at perSecond with room for burst, or says how
// long until one is there. An error (it could not decide) lets the
// limiter decide alone, in memory, for a second. It must be safe for
// concurrent use and honor ctx's deadline.
type SharedRateLimiter interface {
	Allow(ctx context.Context, key string, perSecond float64, burst int) (ok bool, retryAfter time.Duration, err error)
}

// WithSharedRateLimits shares the rate limits of [WithRateLimit] and
// [WithToolRateLimit] with every replica through l, so that N replicas do
// not give a principal N times its rate; each replica's own bucket still
// decides first. When l fails or takes over half a second, each replica
// decides alone from its own buckets (at worst N times the rate, never
// unlimited) for a second, and logs a warning at most every 30 seconds.
func WithSharedRateLimits(l SharedRateLimiter) InstrumentationOption {
	return rateLimitOption(func(c *rateLimitConfig) { c.shared = l })
}

// rateLimiter applies the rate limits of [WithRateLimit] and
// [WithToolRateLimit]: its handler the principal's rate per HTTP request, the middleware [NewInstrumentation] puts in its chain the tool
// rates per tools/call. Its memory is bounded (a fixed number of buckets,
// keyed by principal and by tools named in the options), and it is safe
// for concurrent use.
type rateLimiter struct {
	principal rateSpec
	tools     map[string]rateSpec // read-only
	local     bucketTable
	shared    SharedRateLimiter // nil: in memory only
	metrics   *metrics.Metrics
	logger    *slog.Logger
	now       func() time.Time

	sharedDownUntil atomic.Int64 // unix nanoseconds: decide in memory until then
	nextLog         atomic.Int64 // unix nanoseconds: the next outage warning not before
}

// newRateLimiter returns the limiter of c, nil when it limits nothing.
func newRateLimiter(c instrumentationConfig, m *metrics.Metrics) *rateLimiter {
	rc := c.rateLimit
	if rc == nil || (!rc.principal.on() && len(rc.tools) == 0) {
		return nil
	}
	l := &rateLimiter{principal: rc.principal, tools: rc.tools, shared: rc.shared, metrics: m, logger: c.logger, now: time.Now}
	l.local.max = maxRateBuckets
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	return l
}

// clientAddrKey is the context key of the client address that Handler
// gives an unauthenticated request, for the tool rates.
type clientAddrKey struct{}

// handler returns next behind the principal rate ([WithRateLimit]): every
// POST takes a token of its principal's bucket, and one over the rate is
// answered 429 with Retry-After, RateLimit and RateLimit-Policy headers and
// a JSON-RPC error (-32000, data {"quota":"rate","retryAfterSeconds":N}),
// counted as a quota refusal. Put it inside the authorization guard, which
// names the principal; without one, the principal is the client's IP
// address (an IPv6 address by its /64 network), which Handler also hands
// to the tool rates. GET and DELETE pass.
func (l *rateLimiter) handler(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	needAddr := len(l.tools) > 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		key := quota.User(auth.SessionPrincipal(r))
		if key == "" {
			key = quota.CallerAddr(r.Context(), r.RemoteAddr)
			if needAddr {
				r = r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, key))
			}
		}
		if l.principal.on() {
			if ok, retry := l.allow(r.Context(), bucketKey{principal: boundKey(key)}, l.principal); !ok {
				l.metrics.QuotaRefused(protocol.QuotaRate.String())
				refuseRate(w, l.principal, retry)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// middleware returns the tool rates' middleware; nil when there are none.
func (l *rateLimiter) middleware() server.Middleware {
	if l == nil || len(l.tools) == 0 {
		return nil
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method != "tools/call" || req.IsNotification() {
				return next(ctx, req)
			}
			spec, ok := l.tools[req.Name] // only the names configured become keys
			if !ok {
				return next(ctx, req)
			}
			if ok, retry := l.allow(ctx, bucketKey{principal: boundKey(rateKeyOf(req)), tool: req.Name}, spec); !ok {
				l.metrics.QuotaRefused(protocol.QuotaToolRate.String())
				secs := retrySeconds(retry)
				data, _ := json.Marshal(quotaData{Quota: protocol.QuotaToolRate, RetryAfterSeconds: secs})
				return nil, &server.Error{
					Code:    protocol.CodeServerBusy,
					Message: fmt.Sprintf("rate limit: too many calls of tool %q; retry in %d s", req.Name, secs),
					Data:    data,
				}
			}
			return next(ctx, req)
		}
	}
}

// quotaData is the data of a quota refusal's JSON-RPC error.
type quotaData struct {
	Quota             protocol.Quota `json:"quota"`
	RetryAfterSeconds int64          `json:"retryAfterSeconds"`
}

// rateKeyOf returns the key of req's caller: the user of the
// authenticated principal (its issuer and subject, whatever its client),
// else the client address Handler noted, else "" (stdio, forwarded).
func rateKeyOf(req *server.Request) string {
	if p, ok := auth.PrincipalFromContext(req.ArrivalContext()); ok {
		return quota.User(p.Key())
	}
	if a, ok := req.ArrivalContext().Value(clientAddrKey{}).(string); ok {
		return a
	}
	return ""
}

// retrySeconds rounds d up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// refuseRate answers a request over the principal rate.
func refuseRate(w http.ResponseWriter, s rateSpec, retry time.Duration) {
	secs := retrySeconds(retry)
	window := max(1, int64(math.Ceil(float64(s.burst)/float64(s.limit))))
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("RateLimit-Policy", fmt.Sprintf(`"principal";q=%d;w=%d`, s.burst, window))
	h.Set("RateLimit", fmt.Sprintf(`"principal";r=0;t=%d`, secs))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"rate limit: too many requests; retry in %d s","data":{"quota":%q,"retryAfterSeconds":%d}}}`,
		protocol.CodeServerBusy, secs, protocol.QuotaRate.String(), secs)
}

// allow takes a token of key's bucket, or says how long until one is
// there. The bucket in memory decides first: over it, a replica's own
// requests alone exceed the rate. Under it, the shared bucket decides,
// unless it failed less than sharedRetry ago.
func (l *rateLimiter) allow(ctx context.Context, key bucketKey, s rateSpec) (bool, time.Duration) {
	now := l.now()
	b := l.local.get(key, s, now)
	if !b.AllowN(now, 1) {
		return false, time.Duration((1 - b.TokensAt(now)) / float64(s.limit) * float64(time.Second))
	}
	if l.shared == nil || now.UnixNano() < l.sharedDownUntil.Load() {
		return true, 0
	}
	rctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	ok, retry, err := l.shared.Allow(rctx, sharedKey(key), float64(s.limit), s.burst)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			l.fallback(now, err)
		}
		return true, 0 // the bucket in memory allowed it
	}
	return ok, retry
}

// fallback notes that the shared limiter failed at now: the next
// sharedRetry decide in memory; it warns at most every fallbackLogEvery.
func (l *rateLimiter) fallback(now time.Time, err error) {
	l.sharedDownUntil.Store(now.Add(sharedRetry).UnixNano())
	next := l.nextLog.Load()
	if now.UnixNano() >= next && l.nextLog.CompareAndSwap(next, now.Add(fallbackLogEvery).UnixNano()) {
		l.logger.Warn("rate limits: the shared limiter does not answer; each replica limits alone (up to one rate per replica) until it does", "error", err)
	}
}

// boundKey returns principal as a bucket's key: as is up to maxKey
// bytes, else its hash, so that no key in memory or shared is longer.
func boundKey(principal string) string {
	if len(principal) <= maxKey {
		return principal
	}
	sum := sha256.Sum256([]byte(principal))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sharedKey is key's name in the shared limiter.
func sharedKey(k bucketKey) string {
	if k.tool == "" {
		return "p:" + k.principal
	}
	return "t:" + k.tool + "\x00" + k.principal
}

// bucketKey names a bucket: a principal's, or a principal's for one tool.
type bucketKey struct{ principal, tool string }

// bucketTable holds the buckets in memory, at most max of them.
type bucketTable struct {
	max int
	mu  sync.RWMutex
	m   map[bucketKey]*rate.Limiter
}

// get returns key's bucket, making it (full) if there is none.
func (t *bucketTable) get(key bucketKey, s rateSpec, now time.Time) *rate.Limiter {
	t.mu.RLock()
	b := t.m[key]
	t.mu.RUnlock()
	if b != nil {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b = t.m[key]; b != nil {
		return b
	}
	if t.m == nil {
		t.m = make(map[bucketKey]*rate.Limiter)
	}
	if len(t.m) >= t.max {
		t.evict(now)
	}
	b = rate.NewLimiter(s.limit, s.burst)
	t.m[key] = b
	return b
}

// evict makes room: it drops every full bucket (a new one would be the
// same), then, if fewer than a quarter went, arbitrary ones down to three
// quarters of max. Called with mu held.
func (t *bucketTable) evict(now time.Time) {
	for k, b := range t.m {
		if b.TokensAt(now) >= float64(b.Burst()) {
			delete(t.m, k)
		}
	}
	for k := range t.m { // map order: arbitrary
		if len(t.m) <= t.max*3/4 {
			break
		}
		delete(t.m, k)
	}
}

// len returns the number of buckets held.
func (t *bucketTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}
