package mcptest

import (
	"encoding/json"
	"strings"
)

// Implementation names a client or server (clientInfo, serverInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

// Content is one content item of a tool result or prompt message: text,
// image, audio, resource_link or resource. Only the fields of its Type are
// set.
type Content struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Data     string          `json:"data,omitempty"`     // base64, image and audio
	MIMEType string          `json:"mimeType,omitempty"` // image, audio, resource_link
	URI      string          `json:"uri,omitempty"`      // resource_link
	Name     string          `json:"name,omitempty"`     // resource_link
	Resource json.RawMessage `json:"resource,omitempty"` // an embedded resource
}

// ToolResult is the result of tools/call.
type ToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Text returns the text of the result's text items, joined with newlines.
func (r *ToolResult) Text() string { return joinText(r.Content) }

func joinText(cs []Content) string {
	var parts []string
	for _, c := range cs {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Tool is one entry of tools/list.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Resource is one entry of resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// ResourceContents is one item of a resources/read result: Text or Blob
// (base64) is set.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// Prompt is one entry of prompts/list.
type Prompt struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
}

// PromptMessage is one message of a prompts/get result.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// PromptResult is the result of prompts/get.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// Initialize performs the handshake: an initialize request asking for
// version (the [WithProtocolVersion] one when empty) and declaring caps
// (the [WithCapabilities] ones, or {}, when nil), whose answer must be the
// next message and a success, then notifications/initialized. Its id is the
// next one [Client.Call] would use: 1 for a new client.
func (c *Client) Initialize(version string, caps any) *InitializeResult {
	c.t.Helper()
	if version == "" {
		version = c.cfg.version
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

// Ping sends ping and waits for its (empty) answer.
func (c *Client) Ping() {
	c.t.Helper()
	var out struct{}
	c.must("ping", nil, &out)
}

// CallTool calls tool name with args (encoded as params are by
// [Client.Request]; nil sends {}) and returns its result. A tool that fails
// answers with IsError set, which is not a test failure; a JSON-RPC error
// (an unknown tool, invalid arguments) is. Use [Client.Call] to test those.
func (c *Client) CallTool(name string, args any) *ToolResult {
	c.t.Helper()
	if args == nil {
		args = json.RawMessage("{}")
	}
	var res ToolResult
	c.must("tools/call", map[string]any{"name": name, "arguments": c.encode(args)}, &res)
	return &res
}

// ListTools returns every tool, following nextCursor across pages.
func (c *Client) ListTools() []Tool {
	c.t.Helper()
	return list[Tool](c, "tools/list", "tools")
}

// ListResources returns every resource, following nextCursor across pages.
func (c *Client) ListResources() []Resource {
	c.t.Helper()
	return list[Resource](c, "resources/list", "resources")
}

// ListPrompts returns every prompt, following nextCursor across pages.
func (c *Client) ListPrompts() []Prompt {
	c.t.Helper()
	return list[Prompt](c, "prompts/list", "prompts")
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
func (c *Client) ReadResource(uri string) []ResourceContents {
	c.t.Helper()
	var res struct {
		Contents []ResourceContents `json:"contents"`
	}
	c.must("resources/read", map[string]any{"uri": uri}, &res)
	return res.Contents
}

// GetPrompt gets prompt name with args (nil sends none).
func (c *Client) GetPrompt(name string, args map[string]string) *PromptResult {
	c.t.Helper()
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	var res PromptResult
	c.must("prompts/get", params, &res)
	return &res
}
