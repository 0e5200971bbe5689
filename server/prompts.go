package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Prompt describes a prompt template, as prompts/list shows it.
type Prompt struct {
	// Name identifies the prompt; required.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
	// Arguments are the arguments the prompt takes; names are unique.
	Arguments []PromptArgument `json:"arguments,omitempty"`
	Meta      Meta             `json:"_meta,omitempty"`
}

// PromptArgument is one argument of a [Prompt].
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Complete, if set, completes the argument's value for
	// completion/complete. It is not sent to clients.
	Complete CompleteFunc `json:"-"`

	saysOptional bool // decoded from "required": false, encoded so again (prompt_argument_json.go)
}

// PromptHandler builds a prompt's messages. The arguments it receives were
// checked against the prompt's declaration: every required one is present
// and none is unknown. A returned [*Error] is answered as it is; any other
// error is answered as [protocol.CodeInternal]. Handlers run concurrently, one
// goroutine per request.
type PromptHandler func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)

// GetPromptRequest is what a [PromptHandler] receives.
type GetPromptRequest struct {
	Request   *Request          // the underlying request (session, id, ...)
	Name      string            // the prompt's name
	Arguments map[string]string // the arguments given; never nil
}

// GetPromptResult is the result of prompts/get.
type GetPromptResult struct {
	Description string           `json:"description,omitempty"`
	Messages    []*PromptMessage `json:"messages"`
	Meta        Meta             `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt. Role is "user" or
// "assistant"; Content must not be nil.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// UnmarshalJSON decodes a message of a prompts/get result, its content by
// its "type" ([UnmarshalContent]).
func (m *PromptMessage) UnmarshalJSON(data []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	c, err := UnmarshalContent(w.Content)
	if err != nil {
		return err
	}
	m.Role, m.Content = w.Role, c
	return nil
}

type registeredPrompt struct {
	prompt  Prompt
	handler PromptHandler
	order   uint64 // its place in prompts/list: the order of first registration
}

type promptRegistry struct {
	mu     sync.RWMutex
	byName map[string]*registeredPrompt
	listed ordered[Prompt] // in the order first registered; replaced, never modified, on change
	added  uint64          // prompts registered, the order of the last new one
}

// AddPrompt registers a prompt, replacing any prompt of the same name
// (which keeps its place: prompts/list lists prompts in the order first
// registered), and tells initialized clients that the prompt list changed. It fails for an
// empty prompt or argument name, a repeated argument name, or a nil
// handler. It is safe for concurrent use.
func (s *Server) AddPrompt(p Prompt, h PromptHandler) error {
	if p.Name == "" {
		return errors.New("mcp: prompt: empty name")
	}
	if h == nil {
		return fmt.Errorf("mcp: prompt %q: nil handler", p.Name)
	}
	seen := make(map[string]bool, len(p.Arguments))
	for _, a := range p.Arguments {
		if a.Name == "" {
			return fmt.Errorf("mcp: prompt %q: argument with an empty name", p.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("mcp: prompt %q: argument %q declared twice", p.Name, a.Name)
		}
		seen[a.Name] = true
	}
	p.Arguments = slices.Clone(p.Arguments)
	r := &s.prompts
	r.mu.Lock()
	if r.byName == nil {
		r.byName = make(map[string]*registeredPrompt)
	}
	rp := &registeredPrompt{prompt: p, handler: h}
	if prev := r.byName[p.Name]; prev != nil { // replaced: it keeps its place
		rp.order = prev.order
	} else {
		r.added++
		rp.order = r.added
	}
	r.byName[p.Name] = rp
	r.relistLocked()
	r.mu.Unlock()
	s.listChanged("prompts")
	return nil
}

// RemovePrompts unregisters the named prompts and tells initialized clients
// that the prompt list changed. It reports how many it removed.
func (s *Server) RemovePrompts(names ...string) int {
	r := &s.prompts
	r.mu.Lock()
	n := 0
	for _, name := range names {
		if _, ok := r.byName[name]; ok {
			delete(r.byName, name)
			n++
		}
	}
	if n > 0 {
		r.relistLocked()
	}
	r.mu.Unlock()
	if n > 0 {
		s.listChanged("prompts")
	}
	return n
}

// relistLocked rebuilds the listed prompts; r.mu is held for writing.
func (r *promptRegistry) relistLocked() {
	all := slices.SortedFunc(maps.Values(r.byName), func(a, b *registeredPrompt) int { return cmp.Compare(a.order, b.order) })
	r.listed = ordered[Prompt]{items: make([]Prompt, 0, len(all)), keys: make([]string, 0, len(all))}
	for _, p := range all {
		r.listed.add(p.prompt, p.order)
	}
}

func (r *promptRegistry) lookup(name string) *registeredPrompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// HasPrompt reports whether a prompt of that name is registered now. It is
// safe for concurrent use with AddPrompt and RemovePrompts; like
// [Server.Tool], it tells a registered prompt from a name a client made
// up.
func (s *Server) HasPrompt(name string) bool { return s.prompts.lookup(name) != nil }

func (r *promptRegistry) hasAny() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byName) > 0
}

// hasCompleters reports whether any prompt argument has a completer.
func (r *promptRegistry) hasCompleters() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.byName {
		if slices.ContainsFunc(p.prompt.Arguments, func(a PromptArgument) bool { return a.Complete != nil }) {
			return true
		}
	}
	return false
}

// registerPrompts registers the prompts/* methods.
func (s *Server) registerPrompts() {
	s.handle("prompts/list", s.listPrompts)
	s.handle("prompts/get", s.getPrompt)
}

func (s *Server) listPrompts(_ context.Context, req *Request) (any, error) {
	page, next, err := listPage(s, req, &s.prompts.mu, &s.prompts.listed, itemFilter(s, req, ItemPrompt, func(p Prompt) string { return p.Name }))
	if err != nil {
		return nil, err
	}
	return struct {
		Prompts    []Prompt `json:"prompts"`
		NextCursor string   `json:"nextCursor,omitempty"`
	}{page, next}, nil
}

// stringArguments decodes an arguments object whose values are strings
// (prompts/get, completion/complete's context). Absent or null is empty.
func stringArguments(method string, raw json.RawMessage) (map[string]string, error) {
	args := map[string]string{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	var ptrs map[string]*string // to tell null from a string
	if err := json.Unmarshal(raw, &ptrs); err != nil || ptrs == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "%s: arguments must be an object of strings", method)
	}
	for k, v := range ptrs {
		if v == nil {
			return nil, Errorf(protocol.CodeInvalidParams, "%s: arguments must be an object of strings", method)
		}
		args[k] = *v
	}
	return args, nil
}

func (s *Server) getPrompt(ctx context.Context, req *Request) (any, error) {
	req.maxResult = resultBound(s.cfg.maxResultBytes)
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Name == nil || *p.Name == "" {
		return nil, Errorf(protocol.CodeInvalidParams, "prompts/get: params must be an object with a name string")
	}
	args, err := stringArguments(req.Method, p.Arguments)
	if err != nil {
		return nil, err
	}
	rp := s.prompts.lookup(*p.Name)
	if rp == nil || !s.itemShown(req, ItemPrompt, *p.Name) {
		return nil, Errorf(protocol.CodeInvalidParams, "unknown prompt: %q", *p.Name)
	}
	if err := checkPromptArguments(&rp.prompt, args); err != nil {
		return nil, err
	}
	res, err := rp.handler(ctx, &GetPromptRequest{Request: req, Name: *p.Name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &GetPromptResult{}
	}
	if res.Messages == nil {
		res.Messages = []*PromptMessage{}
	}
	for i, m := range res.Messages {
		if m == nil || (m.Role != "user" && m.Role != "assistant") || m.Content == nil {
			err := fmt.Errorf("mcp: prompt %q: messages[%d] needs a role of user or assistant and content", *p.Name, i)
			req.Session.logger().ErrorContext(ctx, "invalid prompts/get result", "prompt", *p.Name, "error", err)
			return nil, err
		}
	}
	return res, nil
}

// checkPromptArguments rejects a missing required argument or an unknown
// one, naming it.
func checkPromptArguments(p *Prompt, args map[string]string) error {
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return Errorf(protocol.CodeInvalidParams, "prompt %q: missing required argument %q", p.Name, a.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if !slices.ContainsFunc(p.Arguments, func(a PromptArgument) bool { return a.Name == name }) {
			return Errorf(protocol.CodeInvalidParams, "prompt %q: unknown argument %q", p.Name, name)
		}
	}
	return nil
}
