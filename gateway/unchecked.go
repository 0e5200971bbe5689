package gateway

import (
	"github.com/vigil-mcp/vigil/server"
)

// addTool registers an upstream's tool on srv. A tool whose input schema
// the server cannot compile (a dialect or keyword its validator does not
// support, a cycle that validation would never leave) is registered all
// the same, its schema listed as the upstream wrote it and its arguments
// left for the upstream to validate ([server.Tool.UncheckedArguments]),
// or with Config.DropUncheckedTools left out; either way with a warning
// logged the first time for each tool of the upstream: one tool's schema
// never makes Mount fail. Called under g.mu.
func (cat *catalog) addTool(srv *server.Server, t server.Tool, h server.ToolHandler) error {
	err := srv.AddTool(t, h)
	if err == nil {
		return nil
	}
	t.UncheckedArguments = true
	if cat.m.dropUnchecked {
		if server.New().AddTool(t, h) == nil { // on a scratch server: the schema was the only reason
			cat.warnUnchecked(t.Name, "the input schema of an upstream's tool cannot be compiled; the tool is not served (-upstream-unchecked-tools drop)", err)
			return nil
		}
		return err
	}
	if srv.AddTool(t, h) != nil {
		return err // not the schema, or not only: the first reason
	}
	cat.warnUnchecked(t.Name, "the input schema of an upstream's tool cannot be compiled; its arguments are not validated by the gateway, only by the upstream", err)
	return nil
}

// warnUnchecked logs msg about the upstream's tool name, the first time.
func (cat *catalog) warnUnchecked(name, msg string, err error) {
	m := cat.m
	if m.unchecked == nil {
		m.unchecked = map[string]bool{}
	}
	if !m.unchecked[name] {
		m.unchecked[name] = true
		m.log.Warn("gateway: "+msg, "upstream", m.up.Name, "tool", name, "error", err)
	}
}
