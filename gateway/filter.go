package gateway

import (
	"fmt"
	"path"
	"strings"
)

// toolFilter is an upstream's Tools patterns: the tools served are those
// an allow pattern matches (every tool when there is none) and no deny
// pattern ("!pattern") matches.
type toolFilter struct{ allow, deny []string }

// parseToolFilter parses Upstream.Tools, refusing a malformed pattern.
func parseToolFilter(patterns []string) (toolFilter, error) {
	var f toolFilter
	for _, p := range patterns {
		deny := strings.HasPrefix(p, "!")
		glob := strings.TrimPrefix(p, "!")
		if _, err := path.Match(glob, ""); err != nil || glob == "" {
			return toolFilter{}, fmt.Errorf("tool pattern %q: want a glob of path.Match, or !glob to leave tools out", p)
		}
		if deny {
			f.deny = append(f.deny, glob)
		} else {
			f.allow = append(f.allow, glob)
		}
	}
	return f, nil
}

// admits reports whether the upstream's tool name is served.
func (f toolFilter) admits(name string) bool {
	return (len(f.allow) == 0 || matchesAny(f.allow, name)) && !matchesAny(f.deny, name)
}

// matchesAny reports whether one of globs matches name.
func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// unmatched returns an error naming each pattern that matches none of
// the upstream's tools, names: a pattern that filters nothing is most
// likely a typo, refused at start as -tool-rate-limits refuses an unknown
// tool.
func (f toolFilter) unmatched(names []string) error {
	var bad []string
	check := func(globs []string, prefix string) {
		for _, g := range globs {
			if !anyMatch(g, names) {
				bad = append(bad, prefix+g)
			}
		}
	}
	check(f.allow, "")
	check(f.deny, "!")
	if len(bad) > 0 {
		return fmt.Errorf("tool patterns %s match none of the upstream's tools", strings.Join(bad, ", "))
	}
	return nil
}

// anyMatch reports whether glob matches one of names.
func anyMatch(glob string, names []string) bool {
	for _, n := range names {
		if ok, _ := path.Match(glob, n); ok {
			return true
		}
	}
	return false
}

// filtersSomething fails when a pattern of the upstream's Tools matches
// none of the tools it listed in cat.
func (m *mount) filtersSomething(cat *catalog) error {
	if err := m.tools.unmatched(append(append([]string(nil), cat.toolNames...), cat.hidden...)); err != nil {
		return fmt.Errorf("gateway: upstream %s: %w", m.up.Name, err)
	}
	return nil
}
