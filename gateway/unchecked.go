package gateway

import (
	"github.com/vigil-mcp/vigil/server"
)

// addTool registers an upstream's tool on srv. A tool whose input schema
// the server cannot compile (a dialect or keyword its validator does not
// support) is registered all the same, its schema listed as the upstream
// wrote it and its arguments left for the upstream to validate
// ([server.Tool.UncheckedArguments]), with a warning logged the first
// time for each tool of the upstream: one tool's schema never makes
// Mount fail. Called under g.mu.
func (cat *catalog) addTool(srv *server.Server, t server.Tool, h server.ToolHandler) error {
	err := srv.AddTool(t, h)
	if err == nil {
		return nil
	}
	t.UncheckedArguments = true
	if srv.AddTool(t, h) != nil {
		return err // not the schema, or not only: the first reason
	}
	m := cat.m
	if m.unchecked == nil {
		m.unchecked = map[string]bool{}
	}
	if !m.unchecked[t.Name] {
		m.unchecked[t.Name] = true
		m.log.Warn("gateway: the input schema of an upstream's tool cannot be compiled; its arguments are not validated by the gateway, only by the upstream",
			"upstream", m.up.Name, "tool", t.Name, "error", err)
	}
	return nil
}
