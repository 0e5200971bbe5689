package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	// Name identifies the tool: 1 to 128 characters from A-Z, a-z, 0-9,
	// '_', '-' and '.'.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments, an object schema.
	// Empty means {"type":"object"}.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when set, is the JSON Schema of StructuredContent.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ToolHandler runs a tool. A returned [*Error] is answered as a protocol
// error; any other error becomes a result with IsError set and the error's
// text, as MCP asks for tool failures, so that the model can see it.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// CallToolRequest is what a [ToolHandler] receives.
type CallToolRequest struct {
	Request   *Request        // the underlying request (session, id, ...)
	Name      string          // the tool's name
	Arguments json.RawMessage // the arguments object; "{}" when absent
}

// CallToolResult is a tool's result.
type CallToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// Content is one item of a tool result's content.
type Content interface {
	json.Marshaler
	contentType() string
}

// TextContent is text content.
type TextContent struct {
	Text string
}

func (*TextContent) contentType() string { return "text" }

// MarshalJSON encodes c with its "type" field.
func (c *TextContent) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", c.Text})
}

// Text returns a result holding one text item.
func Text(s string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: s}}}
}

type registeredTool struct {
	tool    Tool
	handler ToolHandler
}

type toolRegistry struct {
	mu     sync.RWMutex
	byName map[string]*registeredTool
	listed []Tool // sorted by name; rebuilt on change
}

// ValidToolName reports whether name follows MCP's tool-name rules.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)
		if !ok {
			return false
		}
	}
	return true
}

// AddTool registers a tool, replacing any tool of the same name. It fails
// for an invalid name, a nil handler, or an input schema that is not a JSON
// object.
func (s *Server) AddTool(t Tool, h ToolHandler) error {
	if !ValidToolName(t.Name) {
		return fmt.Errorf("mcp: invalid tool name %q: use 1-128 characters from [A-Za-z0-9_.-]", t.Name)
	}
	if h == nil {
		return fmt.Errorf("mcp: tool %q: nil handler", t.Name)
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var schema map[string]any
	if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
		return fmt.Errorf("mcp: tool %q: input schema must be a JSON object", t.Name)
	}
	r := &s.tools
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]*registeredTool)
	}
	r.byName[t.Name] = &registeredTool{tool: t, handler: h}
	r.listed = r.listed[:0:0]
	for _, rt := range r.byName {
		r.listed = append(r.listed, rt.tool)
	}
	slices.SortFunc(r.listed, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// ToolNames returns the names of the registered tools, sorted.
func (s *Server) ToolNames() []string {
	s.tools.mu.RLock()
	defer s.tools.mu.RUnlock()
	names := make([]string, len(s.tools.listed))
	for i, t := range s.tools.listed {
		names[i] = t.Name
	}
	return names
}

func (r *toolRegistry) hasTools() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byName) > 0
}

func (r *toolRegistry) list() any {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return struct {
		Tools []Tool `json:"tools"`
	}{slices.Clip(r.listed)}
}

func (r *toolRegistry) call(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, Errorf(CodeInvalidParams, "invalid tools/call params: %v", err)
	}
	if p.Name == "" {
		return nil, Errorf(CodeInvalidParams, "tools/call: missing tool name")
	}
	if len(p.Arguments) == 0 || string(p.Arguments) == "null" {
		p.Arguments = json.RawMessage("{}")
	} else if p.Arguments[0] != '{' {
		return nil, Errorf(CodeInvalidParams, "tools/call: arguments must be an object")
	}
	r.mu.RLock()
	rt := r.byName[p.Name]
	r.mu.RUnlock()
	if rt == nil {
		return nil, Errorf(CodeInvalidParams, "unknown tool: %q", p.Name)
	}
	res, err := rt.handler(ctx, &CallToolRequest{Request: req, Name: p.Name, Arguments: p.Arguments})
	if err != nil {
		if _, ok := errors.AsType[*Error](err); ok || ctx.Err() != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: err.Error()}}, IsError: true}, nil
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res, nil
}

func (s *Server) capabilities() Capabilities {
	var caps Capabilities
	if s.tools.hasTools() {
		caps.Tools = &ListChangedCapability{}
	}
	return caps
}
