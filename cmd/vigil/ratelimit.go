package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-mcp/vigil/middleware"
)

// maxRate is the highest rate -rate-limit and -tool-rate-limits accept,
// per second: far above what one replica serves, and finite.
const maxRate = 1e9

// toolRate is one tool's entry of -tool-rate-limits.
type toolRate struct {
	rate  float64 // calls per second
	burst int     // 0: rate rounded up
}

// parseToolRates parses -tool-rate-limits, tool=rate/burst,tool2=rate,
// strictly: every item names a tool once, a positive rate, and optionally
// a positive burst. Whether the tools exist is checked once they are
// registered (checkToolRates).
func parseToolRates(s string) (map[string]toolRate, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := make(map[string]toolRate)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		tool, spec, ok := strings.Cut(item, "=")
		if !ok || tool == "" || spec == "" {
			return nil, fmt.Errorf("-tool-rate-limits: %q: want tool=rate/burst", item)
		}
		if _, dup := m[tool]; dup {
			return nil, fmt.Errorf("-tool-rate-limits: tool %q given twice", tool)
		}
		rs, bs, hasBurst := strings.Cut(spec, "/")
		r, err := strconv.ParseFloat(rs, 64)
		if err != nil || !(r > 0 && r <= maxRate) {
			return nil, fmt.Errorf("-tool-rate-limits: %q: the rate must be a number above 0 and at most %g", item, float64(maxRate))
		}
		tr := toolRate{rate: r}
		if hasBurst {
			if tr.burst, err = strconv.Atoi(bs); err != nil || tr.burst <= 0 {
				return nil, fmt.Errorf("-tool-rate-limits: %q: the burst must be a whole number above 0", item)
			}
		}
		m[tool] = tr
	}
	return m, nil
}

// checkToolRates returns an error naming the tools of rates that are not
// in names (sorted, as srv.ToolNames returns them).
func checkToolRates(names []string, rates map[string]toolRate) error {
	var unknown []string
	for tool := range rates {
		if _, found := slices.BinarySearch(names, tool); !found {
			unknown = append(unknown, tool)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("-tool-rate-limits names unknown tools %q; the tools are %q", unknown, names)
}

// rateLimitOptions returns the instrumentation options of the rate
// limits of cfg: none without limits; shared on Redis with -redis.
func rateLimitOptions(cfg config) []middleware.InstrumentationOption {
	if cfg.rateLimit <= 0 && len(cfg.toolRateLimits) == 0 {
		return nil
	}
	opts := []middleware.InstrumentationOption{middleware.WithRateLimit(cfg.rateLimit, cfg.rateBurst)}
	for tool, r := range cfg.toolRateLimits {
		opts = append(opts, middleware.WithToolRateLimit(tool, r.rate, r.burst))
	}
	if cfg.shared != nil {
		opts = append(opts, middleware.WithSharedRateLimits(cfg.shared))
	}
	return opts
}
