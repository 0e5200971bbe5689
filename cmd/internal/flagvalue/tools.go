package flagvalue

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
)

// MaxRate is the highest rate [ToolRates] accepts, per second: far above
// what one replica serves, and finite.
const MaxRate = 1e9

// ToolScopes parses the value of flag, tool=scope+scope,tool2=scope,
// strictly: every item names a tool once and at least one scope, and
// neither holds spaces (scope tokens have none, RFC 6749 §3.3); "" is
// none (nil). Whether the tools exist is for the caller to check.
func ToolScopes(flag, s string) (map[string][]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := make(map[string][]string)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		tool, scopes, ok := strings.Cut(item, "=")
		if !ok || tool == "" || scopes == "" {
			return nil, fmt.Errorf("%s: %q: want tool=scope+scope", flag, item)
		}
		if strings.ContainsAny(tool, " \t") {
			return nil, fmt.Errorf("%s: tool name %q has a space", flag, tool)
		}
		if _, dup := m[tool]; dup {
			return nil, fmt.Errorf("%s: tool %q given twice", flag, tool)
		}
		var list []string
		for sc := range strings.SplitSeq(scopes, "+") {
			if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				return nil, fmt.Errorf("%s: %q: bad scope %q", flag, item, sc)
			}
			list = append(list, sc)
		}
		m[tool] = list
	}
	return m, nil
}

// ToolRate is one tool's entry of [ToolRates].
type ToolRate struct {
	Rate  float64 // calls per second
	Burst int     // 0: Rate rounded up
}

// ToolRates parses the value of flag, tool=rate/burst,tool2=rate,
// strictly: every item names a tool once, a rate above 0 and at most
// [MaxRate], and optionally a burst above 0; "" is none (nil). Whether the
// tools exist is for the caller to check.
func ToolRates(flag, s string) (map[string]ToolRate, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := make(map[string]ToolRate)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		tool, spec, ok := strings.Cut(item, "=")
		if !ok || tool == "" || spec == "" {
			return nil, fmt.Errorf("%s: %q: want tool=rate/burst", flag, item)
		}
		if _, dup := m[tool]; dup {
			return nil, fmt.Errorf("%s: tool %q given twice", flag, tool)
		}
		rs, bs, hasBurst := strings.Cut(spec, "/")
		r, err := strconv.ParseFloat(rs, 64)
		if err != nil || !(r > 0 && r <= MaxRate) {
			return nil, fmt.Errorf("%s: %q: the rate must be a number above 0 and at most %g", flag, item, float64(MaxRate))
		}
		tr := ToolRate{Rate: r}
		if hasBurst {
			if tr.Burst, err = strconv.Atoi(bs); err != nil || tr.Burst <= 0 {
				return nil, fmt.Errorf("%s: %q: the burst must be a whole number above 0", flag, item)
			}
		}
		m[tool] = tr
	}
	return m, nil
}

// HiddenRates refuses, for a server that hides the tools a caller may
// not call (vigil -auth-hide-tools), a rate limit on a tool that needs
// scopes (toolScopes): the limit runs before the tool access check, so a
// caller that may not call the tool would learn that it exists once its
// own bucket ran out.
func HiddenRates(rates map[string]ToolRate, toolScopes map[string][]string) error {
	var both []string
	for tool := range rates {
		if len(toolScopes[tool]) > 0 {
			both = append(both, tool)
		}
	}
	if len(both) == 0 {
		return nil
	}
	slices.Sort(both)
	return fmt.Errorf("-auth-hide-tools: -tool-rate-limits on %q, which need -auth-tool-scopes, would tell a caller that may not call them that they exist (its own bucket runs out): drop one", both)
}

// KnownTools returns an error naming the tools of tools that names
// (sorted, as server.Server.ToolNames returns them) lacks, which flag
// names: a setting of a misspelled tool would do nothing.
func KnownTools(flag string, names []string, tools iter.Seq[string]) error {
	var unknown []string
	for tool := range tools {
		if _, found := slices.BinarySearch(names, tool); !found {
			unknown = append(unknown, tool)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("%s names unknown tools %q; the tools are %q", flag, unknown, names)
}
