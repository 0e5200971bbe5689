package main

import (
	"maps"

	"github.com/vigil-mcp/vigil/cmd/internal/demotools"
	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
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
	return flagvalue.KnownTools("-auth-tool-scopes", srv.ToolNames(), maps.Keys(toolScopes))
}
