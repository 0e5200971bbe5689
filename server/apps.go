package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ExtensionUI is the identifier of the MCP Apps extension (SEP-1865), in
// the extensions of the client's and the server's capabilities.
const ExtensionUI = "io.modelcontextprotocol/ui"

// ViewMIMEType is the MIME type of an MCP Apps view: an HTML document the
// client renders in a sandboxed iframe.
const ViewMIMEType = "text/html;profile=mcp-app"

// View is an MCP Apps view, registered with [Server.AddView]: an HTML page
// served as a resource under a ui:// URI, which tools name in [ToolUI].
type View struct {
	// URI identifies the view: ui://host/path, without query or fragment.
	URI string
	// Name is the resource's programmatic name; required.
	Name        string
	Title       string
	Description string
	// HTML is the page, required: a file embedded with //go:embed into a
	// []byte, say.
	HTML []byte
	// UI is the view's _meta.ui: what the client's sandbox should allow.
	UI ViewUI
}

// ViewUI is the _meta.ui of a view, on its resources/list entry and its
// resources/read contents. The zero value asks for the most restrictive
// sandbox; [Server.AddView] rejects an unknown permission or a domain that
// is not an origin.
type ViewUI struct {
	CSP *ViewCSP
	// Permissions are the browser features the view asks for: "camera",
	// "microphone", "geolocation" and "clipboardWrite". The wire form is
	// an object with an empty object for each.
	Permissions []string
	// Domain is a dedicated sandbox origin (a host name), in the format of
	// the client's documentation; empty leaves the choice to the client.
	Domain string
	// PrefersBorder asks for (true) or against (false) a visible border;
	// nil leaves the choice to the client.
	PrefersBorder *bool
}

// ViewCSP are the origins a view may reach beyond its own, each a scheme
// (http, https, ws or wss), a host whose first label may be "*" (any
// subdomain), and an optional port, such as "https://*.example.com". The
// client builds the view's Content-Security-Policy from them.
type ViewCSP struct {
	ConnectDomains  []string `json:"connectDomains,omitempty"`  // fetch, XHR, WebSocket (connect-src)
	ResourceDomains []string `json:"resourceDomains,omitempty"` // scripts, styles, images, fonts, media
	FrameDomains    []string `json:"frameDomains,omitempty"`    // nested iframes (frame-src)
	BaseURIDomains  []string `json:"baseUriDomains,omitempty"`  // base-uri
}

// ToolUI links a tool to a view (see [Tool.UI] and the package
// documentation's "MCP Apps" section for the fallback rules).
type ToolUI struct {
	// ResourceURI is the URI of a view registered with [Server.AddView].
	ResourceURI string
	// Visibility says who may use the tool: "model" (the agent) and "app"
	// (the view). Empty means both.
	Visibility []string
	// RequireUI hides the tool from clients that did not declare
	// [ExtensionUI]: tools/list leaves it out and tools/call answers as for
	// an unknown tool. Without it, those clients see a plain tool.
	RequireUI bool
}

// flatResourceURI is the deprecated _meta key of a tool's view (SEP-1865
// before _meta.ui.resourceUri).
const flatResourceURI = "ui/resourceUri"

// viewPermissions are the permission names SEP-1865 defines.
const viewPermissions = "camera, microphone, geolocation, clipboardWrite"

// knownPermission reports whether p is one of viewPermissions.
func knownPermission(p string) bool {
	switch p {
	case "camera", "microphone", "geolocation", "clipboardWrite":
		return true
	}
	return false
}

// AddView registers v as a resource with MIME type [ViewMIMEType] and
// v.UI as its _meta.ui, replacing any resource of the same URI, and makes
// the server declare [ExtensionUI]. It fails for a URI that is not
// ui://host[/path], an empty name, an empty page,
// and metadata [ViewUI] rejects. It is safe for concurrent use.
func (s *Server) AddView(v View) error {
	if err := validViewURI(v.URI); err != nil {
		return fmt.Errorf("mcp: view %q: %w", v.URI, err)
	}
	if v.Name == "" {
		return fmt.Errorf("mcp: view %q: empty name", v.URI)
	}
	html := v.HTML
	if len(html) == 0 {
		return fmt.Errorf("mcp: view %q: empty page: set HTML", v.URI)
	}
	meta, err := v.UI.meta()
	if err != nil {
		return fmt.Errorf("mcp: view %q: %w", v.URI, err)
	}
	contents := &ResourceContents{URI: v.URI, MIMEType: ViewMIMEType, Meta: meta}
	if utf8.Valid(html) {
		contents.Text = string(html)
	} else {
		contents.Blob = slices.Clone(html)
	}
	size := int64(len(html))
	res := Resource{URI: v.URI, Name: v.Name, Title: v.Title, Description: v.Description, MIMEType: ViewMIMEType, Size: &size, Meta: meta}
	return s.AddResource(res, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		c := *contents // the caller may set the URI of its copy
		return &ReadResourceResult{Contents: []*ResourceContents{&c}}, nil
	})
}

// meta returns u as the _meta of a view's resource, or why it is invalid.
func (u ViewUI) meta() (Meta, error) {
	ui := map[string]any{}
	if c := u.CSP; c != nil {
		lists := []struct {
			name    string
			domains []string
		}{
			{"connectDomains", c.ConnectDomains},
			{"resourceDomains", c.ResourceDomains},
			{"frameDomains", c.FrameDomains},
			{"baseUriDomains", c.BaseURIDomains},
		}
		for _, l := range lists {
			for _, d := range l.domains {
				if err := validOrigin(d); err != nil {
					return nil, fmt.Errorf("csp %s: %q: %w", l.name, d, err)
				}
			}
		}
		ui["csp"] = &ViewCSP{
			ConnectDomains: slices.Clone(c.ConnectDomains), ResourceDomains: slices.Clone(c.ResourceDomains),
			FrameDomains: slices.Clone(c.FrameDomains), BaseURIDomains: slices.Clone(c.BaseURIDomains),
		}
	}
	if len(u.Permissions) > 0 {
		perms := make(map[string]any, len(u.Permissions))
		for _, p := range u.Permissions {
			if !knownPermission(p) {
				return nil, fmt.Errorf("unknown permission %q (known: %s)", p, viewPermissions)
			}
			perms[p] = struct{}{}
		}
		ui["permissions"] = perms
	}
	if u.Domain != "" {
		if !validHostName(u.Domain, false) {
			return nil, fmt.Errorf("domain %q: not a host name", u.Domain)
		}
		ui["domain"] = u.Domain
	}
	if u.PrefersBorder != nil {
		ui["prefersBorder"] = *u.PrefersBorder
	}
	if len(ui) == 0 {
		return nil, nil
	}
	return Meta{"ui": ui}, nil
}

// validViewURI checks that uri is ui://host[/path] with nothing else.
func validViewURI(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return errors.New("not a URI")
	case !strings.HasPrefix(uri, "ui://") || u.Opaque != "":
		return errors.New("the URI must start with ui://")
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(uri, " ?#"):
		return errors.New("the URI must be ui://host[/path], without user, query or fragment")
	}
	return nil
}

// validOrigin checks that d is scheme://host[:port], the host's first label
// possibly "*", with nothing that could break out of a CSP directive.
func validOrigin(d string) error {
	scheme, rest, ok := strings.Cut(d, "://")
	if !ok || !slices.Contains([]string{"http", "https", "ws", "wss"}, scheme) {
		return errors.New("want an origin with scheme http, https, ws or wss")
	}
	host, port, hasPort := strings.Cut(rest, ":")
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return errors.New("bad port")
		}
	}
	if !validHostName(host, true) {
		return errors.New("want scheme://host[:port]: a host name, without path, user, query or fragment")
	}
	return nil
}

// validHostName reports whether h is a DNS host name (letters, digits and
// inner hyphens per label), whose first label may be "*" when wildcard.
func validHostName(h string, wildcard bool) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i, label := range strings.Split(h, ".") {
		if label == "*" && wildcard && i == 0 && strings.Contains(h, ".") {
			continue
		}
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			letterOrDigit := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
			if !letterOrDigit && r != '-' {
				return false
			}
		}
	}
	return true
}

// validate checks u for a tool: a view registered on s, known visibility
// values.
func (u *ToolUI) validate(s *Server) error {
	if err := validViewURI(u.ResourceURI); err != nil {
		return fmt.Errorf("ui resourceUri %q: %w", u.ResourceURI, err)
	}
	if !s.hasView(u.ResourceURI) {
		return fmt.Errorf("ui resourceUri %q: no view of that URI (register it first with AddView)", u.ResourceURI)
	}
	for _, v := range u.Visibility {
		if v != "model" && v != "app" {
			return fmt.Errorf("ui visibility %q: want \"model\" or \"app\"", v)
		}
	}
	return nil
}

// hasView reports whether a resource of that URI with the view MIME type
// is registered.
func (s *Server) hasView(uri string) bool {
	s.resources.mu.RLock()
	defer s.resources.mu.RUnlock()
	r, ok := s.resources.byURI[uri]
	return ok && r.res.MIMEType == ViewMIMEType
}

// withUIMeta returns the tool as clients that declared [ExtensionUI] see
// it: its _meta with ui set from t.UI and, as ext-apps' registerAppTool
// does for hosts that read only that, the deprecated flat "ui/resourceUri".
func withUIMeta(t Tool) Tool {
	ui := map[string]any{"resourceUri": t.UI.ResourceURI}
	if len(t.UI.Visibility) > 0 {
		ui["visibility"] = slices.Clone(t.UI.Visibility)
	}
	meta := maps.Clone(t.Meta)
	if meta == nil {
		meta = Meta{}
	}
	meta["ui"] = ui
	meta[flatResourceURI] = t.UI.ResourceURI
	t.Meta = meta
	return t
}

// hiddenWithoutUI reports whether clients without [ExtensionUI] must not
// see the tool: it asks so, or the model may not use it.
func (u *ToolUI) hiddenWithoutUI() bool {
	return u != nil && (u.RequireUI || len(u.Visibility) > 0 && !slices.Contains(u.Visibility, "model"))
}

// SupportsUI reports whether c declares the MCP Apps extension
// ([ExtensionUI]) with [ViewMIMEType] among its mimeTypes.
func (c ClientCapabilities) SupportsUI() bool {
	ext, ok := c.Extensions[ExtensionUI].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	for _, t := range types {
		if s, ok := t.(string); ok && isViewMIMEType(s) {
			return true
		}
	}
	return false
}

// isViewMIMEType reports whether s is [ViewMIMEType], up to case and
// spacing.
func isViewMIMEType(s string) bool {
	if s == ViewMIMEType {
		return true
	}
	mt, params, err := mime.ParseMediaType(s)
	return err == nil && mt == "text/html" && len(params) == 1 && params["profile"] == "mcp-app"
}

// withUIExtension declares [ExtensionUI] in caps (a view is registered).
func withUIExtension(caps *serverCapabilities) {
	ext := maps.Clone(caps.Extensions)
	if ext == nil {
		ext = map[string]any{}
	}
	ext[ExtensionUI] = map[string]any{"mimeTypes": []string{ViewMIMEType}}
	caps.Extensions = ext
}

// withTextFallback wraps the handler of a tool with a view in textFallback.
func withTextFallback(h ToolHandler) ToolHandler {
	return func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := h(ctx, req)
		if err == nil && res != nil {
			textFallback(res)
		}
		return res, err
	}
}

// textFallback gives a successful result of a tool with a view a text
// content when it has none: MCP Apps asks every such result to be
// meaningful without the view. The text is the structured content's JSON.
func textFallback(res *CallToolResult) {
	if res.IsError || len(res.Content) > 0 || res.StructuredContent == nil {
		return
	}
	if data, err := json.Marshal(res.StructuredContent); err == nil {
		res.Content = []Content{&TextContent{Text: string(data)}}
	}
}
