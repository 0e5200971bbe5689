package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// catalog is what one upstream offers, as it will be registered: names
// already prefixed.
type catalog struct {
	m         *mount
	tools     []server.Tool
	toolNames []string              // the upstream's own name of each tool
	curations []*toolCuration       // how the operator's catalog serves each tool; nil: as listed (curation.go)
	defs      map[string]lockedTool // the definitions of a pinned upstream's tools, by served name (pinning.go)
	changed   []string              // the served names of those the lock did not approve, sorted (pinning.go)
	prompts   []server.Prompt
	promptOf  []string // the upstream's own name of each prompt
	resources []server.Resource
	templates []server.ResourceTemplate
	hidden    []string          // the upstream's tools its filter leaves out (filter.go)
	skills    []server.Skill    // skills.go
	printed   map[string]string // what register registered, by key (catalog_diff.go)
}

// list lists what the upstream offers on session s, by the capabilities
// it declared.
func (m *mount) list(ctx context.Context, s *upstream.Session) (*catalog, error) {
	var caps struct {
		Tools       json.RawMessage `json:"tools"`
		Prompts     json.RawMessage `json:"prompts"`
		Resources   json.RawMessage `json:"resources"`
		Completions json.RawMessage `json:"completions"`
	}
	_ = json.Unmarshal(s.Initialized().Capabilities, &caps)
	m.readable.Store(caps.Resources != nil)
	cat := &catalog{m: m}
	cur := m.curation()                                                                     // curation.go
	budget := m.maxCatalog() - int64(len(m.keptInstructions(s.Initialized().Instructions))) // the bytes the items of the four lists may hold, besides its instructions (instructions.go)
	if caps.Tools != nil {
		if err := m.listInto(ctx, s, "tools/list", "tools", &budget, func(raw json.RawMessage) error {
			var t server.Tool
			if err := json.Unmarshal(raw, &t); err != nil {
				return err
			}
			tc := cur.tool(t.Name)
			if !m.tools.admits(t.Name) || tc != nil && tc.hide {
				cat.hidden = append(cat.hidden, t.Name)
				return nil
			}
			own := t.Name
			if err := tc.shape(&t, m.prefix); err != nil {
				m.withhold(own, err) // curation.go: logged and counted once
				cat.hidden = append(cat.hidden, own)
				return nil
			}
			if !m.pin(cat, cur, &t, own) { // pinning.go
				cat.hidden = append(cat.hidden, own)
				return nil
			}
			cat.toolNames = append(cat.toolNames, own)
			cat.curations = append(cat.curations, tc)
			t.UI, t.Meta = toolView(t.Meta) // apps.go
			cat.tools = append(cat.tools, t)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if caps.Prompts != nil {
		if err := m.listInto(ctx, s, "prompts/list", "prompts", &budget, func(raw json.RawMessage) error {
			var p server.Prompt
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			cat.promptOf = append(cat.promptOf, p.Name)
			cur.prompt(p.Name).shapePrompt(&p, m.prefix) // curation.go
			cat.prompts = append(cat.prompts, p)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if caps.Resources != nil {
		if err := m.listInto(ctx, s, "resources/list", "resources", &budget, func(raw json.RawMessage) error {
			var r server.Resource
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			cat.resources = append(cat.resources, r)
			return nil
		}); err != nil {
			return nil, err
		}
		if err := m.listInto(ctx, s, "resources/templates/list", "resourceTemplates", &budget, func(raw json.RawMessage) error {
			var t server.ResourceTemplate
			if err := json.Unmarshal(raw, &t); err != nil {
				return err
			}
			t.Name = m.prefix + t.Name
			cat.templates = append(cat.templates, t)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if caps.Completions != nil {
		cat.addCompleters()
	}
	if err := m.listSkills(ctx, s, cat); err != nil {
		return nil, err
	}
	return cat, nil
}

// listInto calls a list method page after page and hands each item to
// add; the items' bytes are taken from budget (see maxCatalog).
func (m *mount) listInto(ctx context.Context, s *upstream.Session, method, field string, budget *int64, add func(json.RawMessage) error) error {
	items, err := s.ListWithin(ctx, method, field, maxListed, budget)
	if errors.Is(err, upstream.ErrListTooLarge) {
		return fmt.Errorf("gateway: upstream %s: %s: its tools, prompts, resources and templates hold more than %d bytes, "+
			"the gateway's bound on an upstream's catalog (Upstream.MaxCatalogBytes; vigil -upstream-max-catalog)", m.up.Name, method, m.maxCatalog())
	}
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	for _, it := range items {
		if err := add(it); err != nil {
			return fmt.Errorf("gateway: upstream %s: %s: %w", m.up.Name, method, err)
		}
	}
	return nil
}

// claim records in owners the names and URIs the catalog will register.
// One that another owner holds fails the claim; or, when lenient (a
// catalog listed again after list_changed), is dropped from the catalog
// and logged.
func (cat *catalog) claim(owners map[string]string, lenient bool) error {
	me := "upstream " + cat.m.up.Name
	var err error
	take := func(key string) bool {
		other, ok := owners[key]
		switch {
		case !ok || other == me:
			owners[key] = me
			return true
		case lenient:
			cat.m.log.Warn("gateway: listed again, "+key+" collides with one of "+other+"; not served", "upstream", cat.m.up.Name)
		case err == nil:
			err = fmt.Errorf("gateway: %s of %s collides with one of %s", key, me, other)
		}
		return false
	}
	var tools []server.Tool
	var toolNames []string
	var curations []*toolCuration
	for i, t := range cat.tools {
		if take("tool " + strconv.Quote(t.Name)) {
			tools, toolNames, curations = append(tools, t), append(toolNames, cat.toolNames[i]), append(curations, cat.curations[i])
		}
	}
	var prompts []server.Prompt
	var promptOf []string
	for i, p := range cat.prompts {
		if take("prompt " + strconv.Quote(p.Name)) {
			prompts, promptOf = append(prompts, p), append(promptOf, cat.promptOf[i])
		}
	}
	var resources []server.Resource
	for _, r := range cat.resources {
		if take("resource " + strconv.Quote(r.URI)) {
			resources = append(resources, r)
		}
	}
	var templates []server.ResourceTemplate
	for _, t := range cat.templates {
		if take("resource template " + strconv.Quote(t.URITemplate)) {
			templates = append(templates, t)
		}
	}
	var skills []server.Skill
	for _, sk := range cat.skills {
		if take("skill " + strconv.Quote(sk.Path)) {
			skills = append(skills, sk)
		}
	}
	cat.curations = curations
	cat.tools, cat.toolNames, cat.prompts, cat.promptOf, cat.resources, cat.templates = tools, toolNames, prompts, promptOf, resources, templates
	cat.skills = skills
	return err
}

// release forgets in owners what the catalog claimed.
func (cat *catalog) release(owners map[string]string) {
	for _, t := range cat.tools {
		delete(owners, "tool "+strconv.Quote(t.Name))
	}
	for _, p := range cat.prompts {
		delete(owners, "prompt "+strconv.Quote(p.Name))
	}
	for _, r := range cat.resources {
		delete(owners, "resource "+strconv.Quote(r.URI))
	}
	for _, t := range cat.templates {
		delete(owners, "resource template "+strconv.Quote(t.URITemplate))
	}
	for _, sk := range cat.skills {
		delete(owners, "skill "+strconv.Quote(sk.Path))
	}
}

// unregister removes from srv what the catalog registered and next does
// not hold (next may be nil).
func (cat *catalog) unregister(srv *server.Server, next *catalog) {
	if next == nil {
		next = &catalog{}
	}
	gone := func(names, kept []string) []string {
		keep := make(map[string]bool, len(kept))
		for _, n := range kept {
			keep[n] = true
		}
		var out []string
		for _, n := range names {
			if !keep[n] {
				out = append(out, n)
			}
		}
		return out
	}
	was, now := cat.names(), next.names()
	srv.RemoveTools(gone(was.tools, now.tools)...)
	srv.RemovePrompts(gone(was.prompts, now.prompts)...)
	srv.RemoveResources(gone(was.resources, now.resources)...)
	srv.RemoveResourceTemplates(gone(was.templates, now.templates)...)
	srv.RemoveSkills(gone(was.skills, now.skills)...)
}

// catalogNames are the names and URIs a catalog registers, by kind.
type catalogNames struct{ tools, prompts, resources, templates, skills []string }

// names returns the names and URIs the catalog registers.
func (cat *catalog) names() catalogNames {
	var n catalogNames
	for _, t := range cat.tools {
		n.tools = append(n.tools, t.Name)
	}
	for _, p := range cat.prompts {
		n.prompts = append(n.prompts, p.Name)
	}
	for _, r := range cat.resources {
		n.resources = append(n.resources, r.URI)
	}
	for _, t := range cat.templates {
		n.templates = append(n.templates, t.URITemplate)
	}
	for _, sk := range cat.skills {
		n.skills = append(n.skills, sk.Path)
	}
	return n
}

// register registers the catalog on srv, with handlers that forward to
// its upstream (the resources first: a tool's view must be served before
// the tool), but for what prev (the catalog registered before it, or
// nil) registered unchanged, which stays as it is (catalog_diff.go); on
// failure it removes all it holds.
func (cat *catalog) register(srv *server.Server, prev *catalog) (err error) {
	cat.m.g.obs.Tools(cat.m.up.Name, cat.toolNames) // the hop's series of each tool, at zero
	var tools, prompts, uris, templates, skills []string
	cat.printed = cat.prints()
	defer func() {
		if err != nil {
			srv.RemoveTools(tools...)
			srv.RemovePrompts(prompts...)
			srv.RemoveResources(uris...)
			srv.RemoveResourceTemplates(templates...)
			srv.RemoveSkills(skills...)
			err = fmt.Errorf("gateway: upstream %s: %w", cat.m.up.Name, err)
		}
	}()
	for _, r := range cat.resources {
		if cat.unchanged(prev, "resource "+strconv.Quote(r.URI)) {
			uris = append(uris, r.URI)
			continue
		}
		if err := srv.AddResource(r, cat.m.readResource); err != nil {
			return err
		}
		uris = append(uris, r.URI)
	}
	for i, t := range cat.tools {
		if cat.unchanged(prev, "tool "+strconv.Quote(t.Name)) {
			tools = append(tools, t.Name)
			continue
		}
		t.Scopes = cat.m.g.scopes[t.Name]
		if t.UI != nil && !cat.servesView(t.UI.ResourceURI) {
			cat.m.log.Warn("gateway: an upstream tool's view is not served: the tool is served without it", "upstream", cat.m.up.Name, "tool", t.Name, "view", t.UI.ResourceURI)
			t.UI = nil
		}
		if ex := t.Execution; ex != nil && ex.TaskSupport != "" && ex.TaskSupport != server.TaskSupportForbidden {
			// A 2026-07-28 upstream decides, round by round, when the call
			// becomes a task; for the others the handler makes it one at
			// once (tasks.go).
			deferred := *ex
			deferred.Deferred = true
			t.Execution = &deferred
		}
		// The downstream request's telemetry names the upstream.
		t.Upstream = cat.m.up.Name
		h := cat.m.toolHandler(cat.toolNames[i], t.Execution, toolRetrySafe(&t), paramheader.Mirrors(t.InputSchema)) // tasks.go
		if err := cat.addTool(srv, t, cat.curations[i].curated(h)); err != nil {                                     // curation.go: fixed and defaulted arguments
			return err
		}
		tools = append(tools, t.Name)
	}
	for i, p := range cat.prompts {
		if cat.unchanged(prev, "prompt "+strconv.Quote(p.Name)) {
			prompts = append(prompts, p.Name)
			continue
		}
		if err := srv.AddPrompt(p, cat.m.getPrompt(cat.promptOf[i])); err != nil {
			return err
		}
		prompts = append(prompts, p.Name)
	}
	for _, t := range cat.templates {
		if cat.unchanged(prev, "resource template "+strconv.Quote(t.URITemplate)) {
			templates = append(templates, t.URITemplate)
			continue
		}
		if err := srv.AddResourceTemplate(t, cat.m.readResource); err != nil {
			return err
		}
		templates = append(templates, t.URITemplate)
	}
	for _, sk := range cat.skills {
		if err := srv.AddSkill(sk); err != nil { // one skill does not make Mount fail
			cat.m.log.Warn("gateway: an upstream's skill is not served", "upstream", cat.m.up.Name, "skill", sk.Path, "error", err)
			continue
		}
		skills = append(skills, sk.Path)
	}
	return nil
}

// forward calls method upstream with params under the caller's ctx,
// again on a new session after it expired when method is retrySafe.
func (m *mount) forward(ctx context.Context, method string, params any, notes *upstream.Notes) (json.RawMessage, error) {
	return m.forwardRetry(ctx, method, params, notes, retrySafe(method))
}

// forwardRetry is forward, which retry allows to retry or not.
func (m *mount) forwardRetry(ctx context.Context, method string, params any, notes *upstream.Notes, retry bool) (res json.RawMessage, err error) {
	ctx, end := m.startHop(ctx, method, params)
	defer func() {
		if _, asks := errors.AsType[*server.InputRequired](err); asks {
			end(nil, false) // the upstream answered: with questions
			return
		}
		end(err, err == nil && method == "tools/call" && toolFailed(res))
	}()
	if m.up.Authorize != nil && server.RequestFromContext(ctx) != nil {
		if err := m.up.Authorize(ctx); err != nil {
			return nil, err
		}
	}
	raw, err := encodeParams(params)
	if err != nil {
		return nil, err
	}
	if trace := traceMembers(ctx); trace != nil {
		if notes == nil {
			notes = &upstream.Notes{}
		}
		notes.Meta = trace
	}
	if req := server.RequestFromContext(ctx); req != nil {
		if owner := m.g.srv.CallerKey(req); owner != "" {
			if notes == nil {
				notes = &upstream.Notes{}
			}
			notes.Owner = owner // a shared upstream session serves one caller at a time
		}
	}
	if m.relays(ctx, method) {
		return m.relayRound(ctx, method, raw, notes) // era2026.go
	}
	l, err := m.linkOf(ctx)
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	defer m.release(l)
	ctx, asked := watchUntranslated(ctx, m.up.Name) // eras.go
	if asked != nil && roundMethods[method] {
		s, err := l.session(ctx)
		if err != nil {
			return nil, m.callError(ctx, err)
		}
		return m.callAcrossRounds(ctx, s, method, raw, notes) // rounds.go
	}
	res, err = m.call(ctx, l, method, raw, notes, retry)
	if err := asked.failure(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	return res, nil
}

// encodeParams returns the JSON of params: a tool call's written by hand
// (every forwarded call's; its arguments as the caller sent them, valid
// JSON already), any other by encoding/json.
func encodeParams(params any) (json.RawMessage, error) {
	call, ok := params.(toolCall)
	if !ok {
		return json.Marshal(params)
	}
	b := make([]byte, 0, len(`{"name":,"arguments":}`)+len(call.Name)+2+len(call.Arguments))
	b = jsonscan.AppendString(append(b, `{"name":`...), call.Name)
	if len(call.Arguments) > 0 {
		b = append(append(b, `,"arguments":`...), call.Arguments...)
	}
	return append(b, '}'), nil
}

// traceMembers returns the W3C trace context of ctx's span as members of
// params._meta (traceparent, tracestate), as MCP carries it, so that the
// upstream's span is a child of the caller's; nil when ctx has no span.
func traceMembers(ctx context.Context) []byte {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	// Written as propagation.TraceContext writes its headers, without the
	// map it writes them into.
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 96)
	b = append(b, `"traceparent":"00-`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	b = append(b, '"')
	if ts := sc.TraceState().String(); ts != "" {
		b = strconv.AppendQuote(append(b, `,"tracestate":`...), ts)
	}
	return b
}

// getPrompt returns the handler of the upstream's prompt name.
func (m *mount) getPrompt(name string) server.PromptHandler {
	return func(ctx context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
		raw, err := m.forward(ctx, "prompts/get", map[string]any{"name": name, "arguments": req.Arguments}, nil)
		if err != nil {
			return nil, err
		}
		var w struct {
			Description string `json:"description"`
			Messages    []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Meta server.Meta `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, badResult(err)
		}
		res := &server.GetPromptResult{Description: w.Description, Meta: w.Meta, Messages: make([]*server.PromptMessage, 0, len(w.Messages))}
		for _, msg := range w.Messages {
			c, err := server.UnmarshalContent(msg.Content)
			if err != nil {
				return nil, badResult(err)
			}
			res.Messages = append(res.Messages, &server.PromptMessage{Role: msg.Role, Content: c})
		}
		return res, nil
	}
}

// readResource forwards resources/read of the URI asked for.
func (m *mount) readResource(ctx context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
	raw, err := m.forward(ctx, "resources/read", map[string]string{"uri": req.URI}, nil)
	if err != nil {
		return nil, err
	}
	var res server.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, badResult(err)
	}
	return &res, nil
}

// badResult is the error of an upstream's result that does not decode.
func badResult(err error) error {
	return server.NewError(protocol.CodeInternal, fmt.Errorf("the upstream's result: %w", err))
}
