package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

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
	if cfg.toolRateLimits, err = parseToolRates(g.toolRates); err != nil {
		return err
	}
	if !(cfg.rateLimit >= 0 && cfg.rateLimit <= maxRate) || cfg.rateBurst < 0 {
		return fmt.Errorf("-rate-limit must be from 0 to %g, and -rate-burst not negative", float64(maxRate))
	}
	return checkHiddenRates(*cfg)
}

// checkHiddenRates refuses, with -auth-hide-tools, a -tool-rate-limits
// entry for a tool that needs scopes: the limit runs before the tool
// access check, so a caller that may not call the tool would learn that
// it exists once its own bucket ran out.
func checkHiddenRates(cfg config) error {
	if !cfg.authHideTools {
		return nil
	}
	var both []string
	for tool := range cfg.toolRateLimits {
		if len(cfg.authToolScopes[tool]) > 0 {
			both = append(both, tool)
		}
	}
	if len(both) == 0 {
		return nil
	}
	slices.Sort(both)
	return fmt.Errorf("-auth-hide-tools: -tool-rate-limits on %q, which need -auth-tool-scopes, would tell a caller that may not call them that they exist (its own bucket runs out): drop one", both)
}

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
