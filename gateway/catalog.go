package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/server"
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
