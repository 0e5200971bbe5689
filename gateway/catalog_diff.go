package gateway

import (
	"encoding/json"
	"strconv"

	"github.com/vigil-mcp/vigil/server"
)

// prints returns, by the key claim gives each (`tool "name"`...), the
// JSON of what the catalog registers for each tool, prompt, resource and
// template: an item whose print a listing again finds unchanged is left
// registered as it was, and so no list_changed is said for it (see
// refresh). A skill has no print: it is registered again each time.
func (cat *catalog) prints() map[string]string {
	out := make(map[string]string, len(cat.tools)+len(cat.prompts)+len(cat.resources)+len(cat.templates))
	add := func(key string, v any) {
		if b, err := json.Marshal(v); err == nil {
			out[key] = string(b)
		} // else no print: registered again each time
	}
	for i, t := range cat.tools {
		view := t.UI != nil && cat.servesView(t.UI.ResourceURI)
		var fixed, defaults map[string]json.RawMessage // the values the handler sets, not in the Tool's JSON (curation.go)
		if tc := cat.curations[i]; tc != nil {
			fixed, defaults = tc.fixed, tc.defaults
		}
		add("tool "+strconv.Quote(t.Name), struct {
			Tool            server.Tool
			UI              *server.ToolUI // not in the Tool's JSON
			Own             string
			View            bool
			Fixed, Defaults map[string]json.RawMessage
		}{t, t.UI, cat.toolNames[i], view, fixed, defaults})
	}
	for i, p := range cat.prompts {
		add("prompt "+strconv.Quote(p.Name), struct {
			Prompt server.Prompt
			Own    string
		}{p, cat.promptOf[i]})
	}
	for _, r := range cat.resources {
		add("resource "+strconv.Quote(r.URI), r)
	}
	for _, t := range cat.templates {
		add("resource template "+strconv.Quote(t.URITemplate), t)
	}
	return out
}

// unchanged returns whether what key names registers as prev registered
// it (prev nil: never).
func (cat *catalog) unchanged(prev *catalog, key string) bool {
	if prev == nil {
		return false
	}
	was, ok := prev.printed[key]
	return ok && was == cat.printed[key]
}
