package main

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/vigil-mcp/vigil/cmd/internal/demotools"
	"github.com/vigil-mcp/vigil/server"
)

// addDemoTools registers the demo tools with srv, each with the scopes
// toolScopes (-auth-tool-scopes) gives it, then checks that every tool of
// toolScopes is one of srv's tools: a scope requirement on a misspelled
// tool would protect nothing.
func addDemoTools(srv *server.Server, toolScopes map[string][]string) error {
	if err := demotools.Register(srv, toolScopes); err != nil {
		return err
	}
	return checkToolScopes(srv.ToolNames(), toolScopes)
}

// checkToolScopes returns an error naming the tools of toolScopes that are
// not in names (sorted, as srv.ToolNames returns them).
func checkToolScopes(names []string, toolScopes map[string][]string) error {
	return checkKnownTools("-auth-tool-scopes", names, maps.Keys(toolScopes))
}

// checkKnownTools returns an error naming the tools that flag names and
// names (sorted) lacks: a setting of a misspelled tool would do nothing.
func checkKnownTools(flag string, names []string, tools iter.Seq[string]) error {
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
