package redisshare

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// rateKeyPrefix starts the rate limiter's keys (after redis_rate's own
// "rate:"), which end with the pseudonym of the bucket's key (a principal
// or an address) under the cluster key.
const rateKeyPrefix = "vigil:"

// Allow takes a token of the rate-limit bucket key, shared by every
// replica on Redis (GCRA, one round trip), which refills at perSecond
// with room for burst, or says how long until one is there: s is a
// middleware.SharedRateLimiter, for middleware.WithSharedRateLimits. An
// error means Redis did not decide (counted in
// mcp_server_ratelimit_fallbacks_total unless ctx was canceled).
func (s *Shared) Allow(ctx context.Context, key string, perSecond float64, burst int) (bool, time.Duration, error) {
	res, err := s.rate.Allow(ctx, s.store.Pseudonym(rateKeyPrefix, key), redisLimit(perSecond, burst))
	if err != nil {
		// Not when the request went away: the limiter does not fall back.
		if !errors.Is(ctx.Err(), context.Canceled) && s.metrics != nil {
			s.metrics.fallback.Inc()
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
