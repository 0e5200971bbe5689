package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The search mode (SetToolSearch): instead of every tool, tools/list shows
// two, search_tools and call_tool. A client finds tools with the first and
// calls one with the second; the server runs that call as a tools/call of
// the tool itself, rewritten so from its arrival on.

const (
	// searchToolName and callToolName name the two tools of the mode.
	searchToolName = "search_tools"
	callToolName   = "call_tool"
	// maxSearchQuery bounds search_tools' query, in characters (the input
	// schema's maxLength; a longer one is invalid arguments).
	maxSearchQuery = 1024
	// maxSearchResults bounds search_tools' limit; defaultSearchResults is
	// its value when absent.
	maxSearchResults     = 10
	defaultSearchResults = 5
	// maxCallName bounds the raw JSON of call_tool's name before it is
	// decoded: a name of maxToolName characters, each written as \uXXXX.
	maxCallName = 2 + 6*maxToolName
)

// toolSearch is the server's search mode: its ranking, nil when off.
type toolSearch struct {
	mu   sync.Mutex // serializes SetToolSearch
	rank atomic.Pointer[func(req *Request, tools []Tool, query string, limit int) []int]
}

// searching reports whether the search mode is on.
func (s *Server) searching() bool { return s.search.rank.Load() != nil }

// SetToolSearch makes tools/list list two tools when rank is not nil,
// which it registers (failing when either name is taken): search_tools
// (a query of 1 to 1,024 characters, a limit of 1 to 10) answers the
// name, title, description and input schema of the tools rank picks, as
// structured content {"tools": [...]} and as its JSON text; call_tool (a
// name and an arguments object) is read, as it arrives, before any
// middleware, as a tools/call of the tool named in every respect
// (malformed: -32602), but for its Mcp-Param-* headers. rank gets the
// tools tools/list would show req without search (WithToolAccess and
// SetToolView applied, the two left out), in order, and returns the
// indexes of at most limit of them, best first (others are ignored).
// Every tool stays callable by its name. A request not shown the two
// lists its tools, as without search. nil turns the mode off. rank
// must be safe for concurrent use; so is SetToolSearch. docs/gateway.md,
// "Search instead of the full list", has the whole story.
func (s *Server) SetToolSearch(rank func(req *Request, tools []Tool, query string, limit int) []int) error {
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	if rank == nil {
		if s.search.rank.Swap(nil) != nil {
			s.RemoveTools(searchToolName, callToolName)
		}
		return nil
	}
	if s.search.rank.Load() == nil {
		for _, name := range []string{searchToolName, callToolName} {
			if s.tools.lookup(name) != nil {
				return fmt.Errorf("mcp: tool search: a tool named %q is registered already", name)
			}
		}
		if err := s.AddTool(searchTool(), s.searchTools); err != nil {
			return err
		}
		if err := s.AddTool(callTool(), callToolUnwrapped); err != nil {
			s.RemoveTools(searchToolName)
			return err
		}
	}
	s.search.rank.Store(&rank)
	return nil
}

// searchTool is search_tools' definition.
func searchTool() Tool {
	return Tool{
		Name: searchToolName,
		Description: "Search the tools this server offers and get the definitions of the best matches (name, description, input schema). " +
			"Describe what you need in words; then call the tool you chose with call_tool.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","minLength":1,"maxLength":%d,"description":"What the tool should do, in words."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"How many tools to return, best first (%d when absent)."}},`+
			`"required":["query"],"additionalProperties":false}`, maxSearchQuery, maxSearchResults, defaultSearchResults)),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object"}}},"required":["tools"]}`),
		Annotations:  &ToolAnnotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)},
	}
}

// callTool is call_tool's definition.
func callTool() Tool {
	return Tool{
		Name:        callToolName,
		Description: "Call a tool that search_tools found, by its name, with arguments that match its input schema.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name, as search_tools gave it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments."}},"required":["name"]}`),
	}
}

// searchedTool is a tool as search_tools answers it.
type searchedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// searchTools is search_tools' handler: its arguments are valid against
// its input schema.
func (s *Server) searchTools(_ context.Context, call *CallToolRequest) (*CallToolResult, error) {
	rank := s.search.rank.Load()
	if rank == nil || call.Request == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "unknown tool: %q", searchToolName) // the mode was turned off meanwhile
	}
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(call.Arguments, &in); err != nil {
		return nil, Errorf(protocol.CodeInvalidParams, "search_tools: %v", err)
	}
	if in.Limit < 1 || in.Limit > maxSearchResults {
		in.Limit = defaultSearchResults
	}
	tools := s.searchable(call.Request)
	picked := (*rank)(call.Request, tools, in.Query, in.Limit)
	out := struct {
		Tools []searchedTool `json:"tools"`
	}{Tools: make([]searchedTool, 0, min(len(picked), in.Limit))}
	seen := make(map[int]bool, len(picked))
	for _, i := range picked {
		if i < 0 || i >= len(tools) || seen[i] || len(out.Tools) == in.Limit {
			continue
		}
		seen[i] = true
		t := &tools[i]
		out.Tools = append(out.Tools, searchedTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	res := Text(string(b))
	res.StructuredContent = json.RawMessage(b)
	return res, nil
}

// callToolUnwrapped is call_tool's handler, which no call reaches: each
// is read as a call of the tool it names (unwrapCall).
func callToolUnwrapped(context.Context, *CallToolRequest) (*CallToolResult, error) {
	return nil, Errorf(protocol.CodeInvalidParams, "call_tool: the call was not read as a call of the tool it names")
}

// searchable returns the tools search_tools searches for req: those
// tools/list would show it without search, but the mode's two.
func (s *Server) searchable(req *Request) []Tool {
	visible := s.visibleTools(req)
	out := make([]Tool, 0, len(visible))
	for _, t := range visible {
		if t.Name != searchToolName && t.Name != callToolName {
			out = append(out, t)
		}
	}
	return out
}

// searchListed returns, of the tools visible to a request, those
// tools/list shows in the search mode: its two.
func searchListed(visible []Tool) []Tool {
	out := make([]Tool, 0, 2)
	for _, t := range visible {
		if t.Name == searchToolName || t.Name == callToolName {
			out = append(out, t)
		}
	}
	return out
}

// unwrapCall reads a tools/call of call_tool, whose params p holds, as a
// call of the tool it names: p's name and arguments, and req's Params,
// become that call's; nil, or the -32602 that refuses it.
//
//go:noinline
func unwrapCall(req *Request, p *requestParams) *Error {
	var v [2][]byte
	if len(p.Arguments) == 0 || p.Arguments[0] != '{' || !jsonscan.SplitObjectInto(v[:], p.Arguments, "name", "arguments") {
		return Errorf(protocol.CodeInvalidParams, "call_tool: arguments must be an object with the tool's name and its arguments")
	}
	rawName, args := v[0], v[1]
	if len(rawName) > maxCallName {
		return Errorf(protocol.CodeInvalidParams, "call_tool: tool name over %d bytes", maxToolName)
	}
	name, ok := "", rawName != nil
	if ok {
		name, ok = jsonscan.DecodeString(rawName)
	}
	switch {
	case !ok || name == "":
		return Errorf(protocol.CodeInvalidParams, "call_tool: name must be the tool's name, a string")
	case len(name) > maxToolName:
		return Errorf(protocol.CodeInvalidParams, "call_tool: tool name over %d bytes", maxToolName)
	case name == callToolName:
		return Errorf(protocol.CodeInvalidParams, "call_tool: name must be another tool's")
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return Errorf(protocol.CodeInvalidParams, "call_tool: arguments must be an object")
	}
	// The params of a direct call: its name and arguments, then the
	// members of call_tool's own params but those two (_meta, task, a
	// retried round's inputResponses and requestState).
	b := make([]byte, 0, len(req.Params)+len(name))
	b = jsonscan.AppendString(append(b, `{"name":`...), name)
	b = append(append(b, `,"arguments":`...), args...)
	jsonscan.EachMember(req.Params, func(key, val []byte) {
		if k := string(key); k != "name" && k != "arguments" {
			b = append(jsonscan.AppendString(append(b, ','), k), ':')
			b = append(b, val...)
		}
	})
	b = append(b, '}')
	req.Params = b
	p.Name, p.Arguments = name, args
	req.viaCallTool = true
	return nil
}
