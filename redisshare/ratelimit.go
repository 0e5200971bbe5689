package redisshare

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/vigil-mcp/vigil/middleware"
)

// rateKeyPrefix starts the rate limiter's keys (after redis_rate's own
// "rate:").
const rateKeyPrefix = "vigil:"

// RateLimiter returns the token buckets the replicas share on Redis (GCRA,
// one round trip per request under its limit), for
// middleware.WithSharedRateLimits. Each decision Redis cannot take is
// counted in mcp_server_ratelimit_fallbacks_total.
func (s *Shared) RateLimiter() middleware.SharedRateLimiter {
	return &rateLimiter{limiter: redis_rate.NewLimiter(s.client), shared: s}
}

// rateLimiter is a Shared's middleware.SharedRateLimiter.
type rateLimiter struct {
	limiter *redis_rate.Limiter
	shared  *Shared
}

// Allow takes a token of key's bucket in Redis.
func (l *rateLimiter) Allow(ctx context.Context, key string, perSecond float64, burst int) (bool, time.Duration, error) {
	res, err := l.limiter.Allow(ctx, rateKeyPrefix+key, redisLimit(perSecond, burst))
	if err != nil {
		// Not when the request went away: the limiter does not fall back.
		if !errors.Is(ctx.Err(), context.Canceled) && l.shared.metrics != nil {
			l.shared.metrics.fallback.Inc()
		}
		return false, 0, err
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

// redisLimit is a bucket as redis_rate counts it: whole events per period.
func redisLimit(perSecond float64, burst int) redis_rate.Limit {
	if perSecond >= 1 && perSecond == math.Trunc(perSecond) && perSecond <= math.MaxInt32 {
		return redis_rate.Limit{Rate: int(perSecond), Burst: burst, Period: time.Second}
	}
	return redis_rate.Limit{Rate: max(1, int(math.Min(math.Round(perSecond*3600), math.MaxInt32))), Burst: burst, Period: time.Hour}
}
