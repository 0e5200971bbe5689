package main

import (
	"fmt"
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
	var unknown []string
	for tool := range toolScopes {
		if _, found := slices.BinarySearch(names, tool); !found {
			unknown = append(unknown, tool)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("-auth-tool-scopes names unknown tools %q; the tools are %q", unknown, names)
}
