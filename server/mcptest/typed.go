package mcptest

import (
	"encoding/json"

	"github.com/vigil-mcp/vigil/server"
)

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string                `json:"protocolVersion"`
	Capabilities    json.RawMessage       `json:"capabilities"`
	ServerInfo      server.Implementation `json:"serverInfo"`
	Instructions    string                `json:"instructions,omitempty"`
}

// Initialize performs the handshake: an initialize request asking for
// version (2025-11-25 when empty) and declaring caps
// (the [WithCapabilities] ones, or {}, when nil), whose answer must be the
// next message and a success, then notifications/initialized. Its id is the
// next one [Client.Call] would use: 1 for a new client.
func (c *Client) Initialize(version string, caps any) *InitializeResult {
	c.t.Helper()
	if version == "" {
		version = defaultProtocolVersion
	}
	if caps == nil {
		caps = c.cfg.caps
	}
	if caps == nil {
		caps = map[string]any{}
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.Request(id, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": c.cfg.name, "version": c.cfg.ver},
	})
	var res InitializeResult
	c.decode("initialize", c.RecvResult(id), &res)
	c.Notify("notifications/initialized", nil)
	return &res
}

// must is [Client.Call] that fails the test on a JSON-RPC error and
// decodes the result into out.
func (c *Client) must(method string, params any, out any) {
	c.t.Helper()
	raw, rpcErr := c.Call(method, params)
	if rpcErr != nil {
		c.fatalf("mcptest: %s: error %d: %s", method, rpcErr.Code, rpcErr.Message)
	}
	c.decode(method, raw, out)
}

func (c *Client) decode(method string, raw json.RawMessage, out any) {
	c.t.Helper()
	if err := json.Unmarshal(raw, out); err != nil {
		c.fatalf("mcptest: %s: decode result %s: %v", method, raw, err)
	}
}

// CallTool calls tool name with args (encoded as params are by
// [Client.Request]; nil sends {}) and returns its result, each content
// item decoded by [server.UnmarshalContent] and its structuredContent kept
// as a [json.RawMessage]. A tool that fails answers with IsError set,
// which is not a test failure; a JSON-RPC error (an unknown tool, invalid
// arguments) or content MCP does not define is. Use [Client.Call] to test
// those.
func (c *Client) CallTool(name string, args any) *server.CallToolResult {
	c.t.Helper()
	if args == nil {
		args = json.RawMessage("{}")
	}
	var wire struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              server.Meta       `json:"_meta"`
	}
	c.must("tools/call", map[string]any{"name": name, "arguments": c.encode(args)}, &wire)
	res := &server.CallToolResult{IsError: wire.IsError, Meta: wire.Meta, Content: make([]server.Content, 0, len(wire.Content))}
	if wire.StructuredContent != nil {
		res.StructuredContent = wire.StructuredContent
	}
	for i, raw := range wire.Content {
		item, err := server.UnmarshalContent(raw)
		if err != nil {
			c.fatalf("mcptest: tools/call %s: content item %d: %v", name, i, err)
		}
		res.Content = append(res.Content, item)
	}
	return res
}

// ListTools returns every tool, following nextCursor across pages.
func (c *Client) ListTools() []server.Tool {
	c.t.Helper()
	return list[server.Tool](c, "tools/list", "tools")
}

// ListResources returns every resource, following nextCursor across pages.
func (c *Client) ListResources() []server.Resource {
	c.t.Helper()
	return list[server.Resource](c, "resources/list", "resources")
}

// ListPrompts returns every prompt, following nextCursor across pages.
func (c *Client) ListPrompts() []server.Prompt {
	c.t.Helper()
	return list[server.Prompt](c, "prompts/list", "prompts")
}

func list[T any](c *Client, method, field string) []T {
	c.t.Helper()
	var all []T
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		var page map[string]json.RawMessage
		c.must(method, params, &page)
		var items []T
		if raw, ok := page[field]; ok {
			c.decode(method, raw, &items)
		}
		all = append(all, items...)
		cursor = ""
		if raw, ok := page["nextCursor"]; ok {
			c.decode(method, raw, &cursor)
		}
		if cursor == "" {
			return all
		}
	}
}

// ReadResource reads the resource at uri and returns its contents.
func (c *Client) ReadResource(uri string) []*server.ResourceContents {
	c.t.Helper()
	var res struct {
		Contents []*server.ResourceContents `json:"contents"`
	}
	c.must("resources/read", map[string]any{"uri": uri}, &res)
	return res.Contents
}

// GetPrompt gets prompt name with args (nil sends none).
func (c *Client) GetPrompt(name string, args map[string]string) *server.GetPromptResult {
	c.t.Helper()
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	var res server.GetPromptResult
	c.must("prompts/get", params, &res)
	return &res
}
