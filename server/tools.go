package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	// Name identifies the tool: 1 to 128 characters from A-Z, a-z, 0-9,
	// '_', '-' and '.'.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
	// InputSchema is the JSON Schema of the arguments, an object schema,
	// against which each call's arguments are validated before the handler
	// runs. Empty means {"type":"object"}.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when set, is the JSON Schema of StructuredContent.
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Execution    *ToolExecution   `json:"execution,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`
	// Scopes are the OAuth scopes a caller needs to call the tool (see
	// package middleware/auth and [WithToolAccess]). They are not sent.
	Scopes []string `json:"-"`
	// MaxResultBytes, when positive, bounds the encoded result of a call
	// instead of the server's [WithMaxResultBytes]; negative sets no
	// bound. It is not sent.
	MaxResultBytes int `json:"-"`
	// UncheckedArguments, when set, registers the tool without compiling
	// its input schema, which is listed as it is: each call's arguments
	// (a JSON object) reach the handler unvalidated. It is for a schema
	// the server cannot compile that something else validates, such as
	// the tool of an upstream server that package gateway fronts. It is
	// not sent.
	UncheckedArguments bool `json:"-"`
	// UI, when set, links the tool to an MCP Apps view: clients that
	// declared [ExtensionUI] see it as _meta.ui; others see a plain tool,
	// or none (see [ToolUI]).
	UI *ToolUI `json:"-"`

	// Upstream names the upstream MCP server whose tool this is, when a
	// gateway (package gateway) forwards its calls there; empty for a
	// tool served here. Telemetry labels the tool's requests with it:
	// its values are the gateway's configured upstreams. It is not sent.
	Upstream string `json:"-"`

	order uint64 // its place in tools/list: the order of first registration (toolRegistry.set)
}

// ToolAnnotations are hints about a tool's behavior. Clients must treat
// them as untrusted.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ToolExecution says how a tool may be run. TaskSupport is "forbidden" (the
// default), "optional" or "required" (see the tasks extension).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
	// Deferred, for a tool with task support, makes the handler start the
	// task itself, with [RunAsTask], instead of the core starting it before
	// the handler runs: the handler may first ask the client for input
	// synchronously (2026-07-28 input_required rounds). It is not sent.
	Deferred bool `json:"-"`
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
	invalidArgs       bool      // refuses the arguments (see Outcome.InvalidArguments)
	Meta              Meta      `json:"_meta,omitempty"`
	raw               []byte    // the result's JSON as another server sent it (RawToolResult); nil: encode the fields
}

// Text returns a result holding one text item.
func Text(s string) *CallToolResult {
	// The result, its content slice and the item in one allocation, not
	// three: most tool calls end here. Appending to Content copies it
	// out, as for any full slice.
	one := &struct {
		result CallToolResult
		items  [1]Content
		text   TextContent
	}{text: TextContent{Text: s}}
	one.items[0] = &one.text
	one.result.Content = one.items[:]
	return &one.result
}

// Text returns the text of r's text items, joined with newlines: what a
// client that reads text alone shows of it.
func (r *CallToolResult) Text() string {
	var b strings.Builder
	n := 0
	for _, c := range r.Content {
		if t, ok := c.(*TextContent); ok {
			if n++; n > 1 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

type registeredTool struct {
	tool    Tool
	handler ToolHandler
	mirrors []paramheader.Mirror // the arguments Mcp-Param-* headers mirror, from the input schema
}

// toolRegistry holds the tools. A change builds a new map and publishes
// it, never modifying one it published, so that lookup, on every
// tools/call (and in the metrics and stats of each), reads it without
// locking, which on a busy server would bounce the lock's word between
// the cores. mu serializes changes and guards listed and scopes.
type toolRegistry struct {
	mu     sync.RWMutex
	byName atomic.Pointer[map[string]*registeredTool] // read-only once stored
	listed []Tool                                     // in the order first registered; rebuilt on change
	added  uint64                                     // tools registered, the order of the last new one
	// plain is listed as clients without ExtensionUI see it: the same
	// slice while no tool has a view (see Tool.UI); rebuilt on change.
	plain  []Tool
	scopes []string // every scope some tool needs, sorted, unique; rebuilt on change
}

// all returns the tools by name, which the caller must not modify.
func (r *toolRegistry) all() map[string]*registeredTool {
	if m := r.byName.Load(); m != nil {
		return *m
	}
	return nil
}

// AddTool registers a tool whose arguments the handler decodes itself,
// replacing any tool of the same name, and tells initialized clients that
// the tool list changed. Each call's arguments are validated against the
// input schema before the handler runs; arguments that do not match are
// answered with a result with IsError set that names the problem, and the
// handler is not called. The schema is compiled once, here: AddTool fails
// for an input schema that cannot be (not a JSON object, not "type":
// "object", an unsupported $schema, an unresolvable $ref), for an invalid
// name or for a nil handler. For tools with typed input and output, see
// [AddTypedTool].
func (s *Server) AddTool(t Tool, h ToolHandler) error {
	return s.addTool(t, h, nil)
}

// addTool registers t with its input schema in compiled, or compiles
// t.InputSchema when in is nil.
func (s *Server) addTool(t Tool, h ToolHandler, in *objectSchema) error {
	if !vocab.ValidToolName(t.Name) {
		return toolNameError(t.Name)
	}
	if h == nil {
		return fmt.Errorf("mcp: tool %q: nil handler", t.Name)
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if !isJSONObject(t.InputSchema) {
		return fmt.Errorf("mcp: tool %q: input schema must be a JSON object", t.Name)
	}
	if in == nil && t.UncheckedArguments {
		in = &objectSchema{plan: &argsPlan{}} // trivial: validatingArguments adds nothing
	}
	if in == nil {
		var err error
		if in, err = parseObjectSchema(t.InputSchema); err != nil {
			return fmt.Errorf("mcp: tool %q: input schema: %w", t.Name, err)
		}
	}
	if len(t.OutputSchema) > 0 && !isJSONObject(t.OutputSchema) {
		return fmt.Errorf("mcp: tool %q: output schema must be a JSON object", t.Name)
	}
	if t.UI != nil {
		if _, ok := t.Meta["ui"]; ok {
			return fmt.Errorf("mcp: tool %q: set UI, not _meta.ui", t.Name)
		}
		if _, ok := t.Meta[flatResourceURI]; ok {
			return fmt.Errorf("mcp: tool %q: set UI, not _meta[%q]", t.Name, flatResourceURI)
		}
		ui := *t.UI
		ui.Visibility = slices.Clone(ui.Visibility)
		if err := ui.validate(s); err != nil {
			return fmt.Errorf("mcp: tool %q: %w", t.Name, err)
		}
		t.UI = &ui
		h = withTextFallback(h) // apps.go; also for calls run as tasks
	}
	rt := &registeredTool{tool: t, mirrors: paramheader.Mirrors(t.InputSchema)}
	h = s.policed(&rt.tool, h)     // tool_policy.go; after the arguments are valid
	h = validatingArguments(in, h) // tool_validate.go; outermost, so before anything else
	rt.handler = h
	s.tools.set(t.Name, rt)
	s.listChanged("tools")
	return nil
}

// RemoveTools unregisters the named tools and tells initialized clients that
// the tool list changed. It reports how many it removed.
func (s *Server) RemoveTools(names ...string) int {
	n := 0
	for _, name := range names {
		if s.tools.set(name, nil) {
			n++
		}
	}
	if n > 0 {
		s.listChanged("tools")
	}
	return n
}

func toolNameError(name string) error {
	return fmt.Errorf("mcp: invalid tool name %q: use 1-128 characters from [A-Za-z0-9_.-]", name)
}

func isJSONObject(raw json.RawMessage) bool {
	var v map[string]any
	return json.Unmarshal(raw, &v) == nil && v != nil
}

// set adds, replaces or (with rt nil) removes a tool; it reports whether a
// tool of that name existed.
func (r *toolRegistry) set(name string, rt *registeredTool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.all()
	_, existed := old[name]
	byName := maps.Clone(old)
	if byName == nil {
		byName = make(map[string]*registeredTool)
	}
	switch prev := old[name]; {
	case rt == nil:
		delete(byName, name)
	case prev != nil: // replaced: it keeps its place
		rt.tool.order = prev.tool.order
		byName[name] = rt
	default:
		r.added++
		rt.tool.order = r.added
		byName[name] = rt
	}
	r.byName.Store(&byName)
	r.listed = make([]Tool, 0, len(byName))
	views := false
	for _, rt := range byName {
		if rt.tool.UI != nil {
			r.listed, views = append(r.listed, withUIMeta(rt.tool)), true
		} else {
			r.listed = append(r.listed, rt.tool)
		}
	}
	slices.SortFunc(r.listed, func(a, b Tool) int { return cmp.Compare(a.order, b.order) })
	r.plain = r.listed
	if views {
		r.plain = make([]Tool, 0, len(r.listed))
		for _, t := range r.listed {
			if !t.UI.hiddenWithoutUI() {
				r.plain = append(r.plain, byName[t.Name].tool) // without _meta.ui
			}
		}
	}
	var scopes []string
	for _, rt := range byName {
		scopes = append(scopes, rt.tool.Scopes...)
	}
	slices.Sort(scopes)
	r.scopes = slices.Compact(scopes)
	return existed
}

func (r *toolRegistry) lookup(name string) *registeredTool {
	return r.all()[name]
}

// Tool returns the named tool as registered now, and whether there is
// one: middleware use it to tell a registered tool from a name a client
// made up (the metrics label only registered tools with their names), to
// read the scopes a call needs ([Tool.Scopes]) and the upstream that
// serves it ([Tool.Upstream]). It is safe for concurrent use with AddTool
// and RemoveTools; the tool's slices and pointers are the registered
// tool's, and must not be modified.
func (s *Server) Tool(name string) (Tool, bool) {
	rt := s.tools.lookup(name)
	if rt == nil {
		return Tool{}, false
	}
	return rt.tool, true
}

// AllToolScopes returns every scope some registered tool needs, sorted and
// without duplicates (nil when no tool needs one): a caller holding them
// all may call any tool. The result must not be modified.
func (s *Server) AllToolScopes() []string {
	s.tools.mu.RLock()
	defer s.tools.mu.RUnlock()
	return s.tools.scopes
}

// lookupFor finds the named tool for req: nil when it is unknown, or when
// the server's tool access check (WithToolAccess) refuses it to req.
func (s *Server) lookupFor(req *Request, name string) *registeredTool {
	rt := s.tools.lookup(name)
	if rt != nil && rt.tool.UI.hiddenWithoutUI() && !req.ClientCapabilities.SupportsUI() {
		return nil
	}
	if rt == nil || s.toolAllowed(req, &rt.tool) {
		return rt
	}
	return nil
}

// toolAllowed reports whether req may see and call t: WithToolAccess's
// check and the view SetToolView set, when set, both allow it.
func (s *Server) toolAllowed(req *Request, t *Tool) bool {
	if s.cfg.toolAccess != nil && !s.cfg.toolAccess(req, t) {
		return false
	}
	view := s.toolView.Load()
	return view == nil || (*view)(req, t)
}

// SetToolView hides, besides [WithToolAccess], the tools for which view
// returns false from req: tools/list does not show them and a call is
// answered as a call of an unknown tool, as for WithToolAccess; nil shows
// them all again. A gateway sets one so that each caller sees the tools
// the server it fronts shows a client with the caller's capabilities.
// view must be safe for concurrent use and must not modify the tool. It
// is safe for concurrent use.
func (s *Server) SetToolView(view func(req *Request, t *Tool) bool) {
	if view == nil {
		s.toolView.Store(nil)
		return
	}
	s.toolView.Store(&view)
}

// ToolNames returns the names of the registered tools, sorted.
func (s *Server) ToolNames() []string {
	s.tools.mu.RLock()
	names := make([]string, len(s.tools.listed))
	for i, t := range s.tools.listed {
		names[i] = t.Name
	}
	s.tools.mu.RUnlock()
	slices.Sort(names)
	return names
}

func (r *toolRegistry) hasTools() bool {
	return len(r.all()) > 0
}

func (s *Server) registerTools() {
	s.handle("tools/list", s.listTools)
	s.handle("tools/call", s.callTool)
}

func (s *Server) listTools(_ context.Context, req *Request) (any, error) {
	p, err := decodeListParams(req)
	if err != nil {
		return nil, err
	}
	items := s.visibleTools(req)
	if s.searching() {
		if searched := searchListed(items); len(searched) > 0 { // tool_search.go
			items = searched
		} // else the view hides the two from req: it lists the tools
	}
	page, next, err := paginate(items, func(i int) string { return orderKey(items[i].order) }, p.Cursor, s.cfg.pageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Tools      []Tool `json:"tools"`
		NextCursor string `json:"nextCursor,omitempty"`
	}{page, next}, nil
}

// visibleTools returns the tools tools/list shows req, in their order,
// filtered by WithToolAccess and SetToolView before paginating, so that
// pages stay full and a cursor (the key of the last tool of its page)
// stays valid. The result must not be modified.
func (s *Server) visibleTools(req *Request) []Tool {
	listed := &s.tools.listed
	if !req.ClientCapabilities.SupportsUI() {
		listed = &s.tools.plain
	}
	s.tools.mu.RLock()
	all := *listed
	s.tools.mu.RUnlock()
	if s.cfg.toolAccess == nil && s.toolView.Load() == nil {
		return all
	}
	visible := make([]Tool, 0, len(all))
	for i := range all {
		if s.toolAllowed(req, &all[i]) {
			visible = append(visible, all[i])
		}
	}
	return visible
}

func (s *Server) callTool(ctx context.Context, req *Request) (any, error) {
	if !req.parsed {
		// The params were not readable when the request arrived, so the
		// middleware, the audit log, per-tool limits, metrics and spans saw
		// no tool name: refuse rather than run a tool they did not see.
		return nil, Errorf(protocol.CodeInvalidParams,
			"invalid tools/call params: params must be an object in which name and uri, when present, are strings and _meta is an object")
	}
	name, args := req.Name, req.args // decoded once, when the request arrived
	if name == "" {
		return nil, Errorf(protocol.CodeInvalidParams, "tools/call: missing tool name")
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return nil, Errorf(protocol.CodeInvalidParams, "tools/call: arguments must be an object")
	}
	rt := s.lookupFor(req, name)
	if rt == nil {
		var err error
		if rt, err = s.awaitTool(ctx, req, name); err != nil { // tool_wait.go
			return nil, err
		}
	}
	if rt == nil { // unknown, or refused by WithToolAccess: answered alike
		return nil, Errorf(protocol.CodeInvalidParams, "unknown tool: %q", name)
	}
	req.maxResult = resultBound(rt.maxResult(s.cfg.maxResultBytes))
	var call *CallToolRequest
	if !req.callHeld {
		req.callHeld = true
		call = &req.call
		*call = CallToolRequest{Request: req, Name: name, Arguments: args}
	} else {
		call = &CallToolRequest{Request: req, Name: name, Arguments: args}
	}
	if handled, res, err := req.era.toolTask(ctx, rt, call); handled { // era_*.go
		return res, err
	}
	res, err := rt.handler(ctx, call)
	if res, err = toolOutcome(ctx, res, err); err != nil {
		return nil, err
	}
	return res, nil
}

// toolOutcome makes the answer to a tools/call of what its handler
// returned: an error becomes a result with IsError set, unless it must
// travel as it is (see keepsError) or the request was cancelled.
func toolOutcome(ctx context.Context, res *CallToolResult, err error) (*CallToolResult, error) {
	if err != nil {
		if keepsError(err) || ctx.Err() != nil {
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

// keepsError reports whether a tool's error must travel as it is rather
// than become an isError result: protocol errors, and the errors by which
// the core interrupts a handler (see inputRequired).
func keepsError(err error) bool {
	if _, ok := errors.AsType[*Error](err); ok {
		return true
	}
	if _, ok := errors.AsType[*InputRequired](err); ok {
		return true // a relaying handler's questions (input_relay.go)
	}
	return errors.Is(err, errInterrupt)
}

// errInterrupt is wrapped by the errors the core uses to stop a handler
// early with a result of its own (an input-required result, say).
var errInterrupt = errors.New("mcp: handler interrupted")
