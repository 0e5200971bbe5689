package main

import (
	"flag"
	"fmt"
	"maps"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
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

// rateFlags are the rate limits (token buckets; shared on Redis with
// -redis): each principal's requests, and its calls of some tools.
type rateFlags struct {
	toolRates string // -tool-rate-limits
}

func (g *rateFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.Float64Var(&cfg.rateLimit, "rate-limit", 0, "most requests (HTTP POSTs) per second of each caller (the authenticated user, whatever its client, else the client's IP address, an IPv6 one by its -quota-ipv6-prefix network), as a token bucket; more get 429 with Retry-After; with -redis, over all replicas (0: no limit)")
	fs.IntVar(&cfg.rateBurst, "rate-burst", 0, "requests a principal may send at once beyond -rate-limit's pace, the token bucket's size (0: -rate-limit rounded up)")
	fs.StringVar(&g.toolRates, "tool-rate-limits", "", "per-tool rates of each principal's calls, as `tool=rate/burst,tool2=rate` (calls per second; burst optional); a call over it is answered -32000 with data {quota: tool_rate}; every tool named must exist")
}

func (g *rateFlags) resolve(cfg *config, _ flagSource) error {
	var err error
	if cfg.toolRateLimits, err = flagvalue.ToolRates("-tool-rate-limits", g.toolRates); err != nil {
		return err
	}
	if !(cfg.rateLimit >= 0 && cfg.rateLimit <= flagvalue.MaxRate) || cfg.rateBurst < 0 {
		return fmt.Errorf("-rate-limit must be from 0 to %g, and -rate-burst not negative", float64(flagvalue.MaxRate))
	}
	if cfg.authHideTools {
		return flagvalue.HiddenRates(cfg.toolRateLimits, cfg.authToolScopes)
	}
	return nil
}

// checkToolRates returns an error naming the tools of rates that are not
// in names (sorted, as srv.ToolNames returns them).
func checkToolRates(names []string, rates map[string]flagvalue.ToolRate) error {
	return flagvalue.KnownTools("-tool-rate-limits", names, maps.Keys(rates))
}
