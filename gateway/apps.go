package gateway

import (
	"encoding/json"
	"maps"

	"github.com/vigil-mcp/vigil/server"
)

// MCP Apps across the hop. The sessions that list declare the extension,
// so the upstream names each tool's view in its _meta.ui; the gateway
// takes that link out of _meta into the tool's [server.ToolUI], and the
// gateway's server shows it, or the plain tool, by what each client
// declared, as for a view of its own. The view itself is the upstream's
// ui:// resource, served with its MIME type.

// viewCapability is the extension a session of the gateway's declares to
// learn the upstream's views.
const viewCapability = `{"mimeTypes":["` + server.ViewMIMEType + `"]}`

// toolView returns the view an upstream tool's _meta names (ui.resourceUri,
// or the deprecated flat ui/resourceUri), or nil, and the _meta without
// that link.
func toolView(meta server.Meta) (*server.ToolUI, server.Meta) {
	if meta == nil {
		return nil, meta
	}
	var ui struct {
		ResourceURI string   `json:"resourceUri"`
		Visibility  []string `json:"visibility"`
	}
	if raw, err := json.Marshal(meta["ui"]); err == nil {
		_ = json.Unmarshal(raw, &ui)
	}
	if ui.ResourceURI == "" {
		flat, _ := meta["ui/resourceUri"].(string)
		ui.ResourceURI = flat
	}
	if ui.ResourceURI == "" {
		return nil, meta
	}
	rest := maps.Clone(meta)
	delete(rest, "ui")
	delete(rest, "ui/resourceUri")
	if len(rest) == 0 {
		rest = nil
	}
	return &server.ToolUI{ResourceURI: ui.ResourceURI, Visibility: ui.Visibility}, rest
}

// servesView reports whether the catalog serves uri as a view: an
// upstream resource of the view MIME type.
func (cat *catalog) servesView(uri string) bool {
	for _, r := range cat.resources {
		if r.URI == uri && r.MIMEType == server.ViewMIMEType {
			return true
		}
	}
	return false
}
