package main

import (
	"github.com/vigil-mcp/vigil/middleware"
)

// rateLimitOptions returns the instrumentation options of the rate
// limits of cfg: none without limits; shared on Redis with -redis.
func rateLimitOptions(cfg config) []middleware.InstrumentationOption {
	if cfg.rateLimit <= 0 && len(cfg.toolRateLimits) == 0 {
		return nil
	}
	opts := []middleware.InstrumentationOption{middleware.WithRateLimit(cfg.rateLimit, cfg.rateBurst)}
	for tool, r := range cfg.toolRateLimits {
		opts = append(opts, middleware.WithToolRateLimit(tool, r.Rate, r.Burst))
	}
	if cfg.shared != nil {
		opts = append(opts, middleware.WithSharedRateLimits(cfg.shared))
	}
	return opts
}
