package servercard

import (
	"maps"
	"net/http"
)

// Routes returns public (the paths served on the MCP listener besides
// /mcp, to anyone) with discovery's: the card of /mcp at
// /mcp/server-card, the card of each named endpoint of a gateway's
// catalog at /mcp/NAME/server-card, and the AI Catalog listing them at
// CatalogPath. mcpURL is /mcp's public URL; endpoints, called at each
// request (a catalog reloads), returns the named endpoints and whether
// /mcp serves (nil: /mcp alone). A card is built from the path's NAME
// only when the catalog has it: nothing a client sends is kept.
func Routes(public map[string]http.Handler, s Server, mcpURL string, endpoints func() (names []string, defaultServes bool)) map[string]http.Handler {
	list := func() []Endpoint {
		names, serves := []string(nil), true
		if endpoints != nil {
			names, serves = endpoints()
		}
		var out []Endpoint
		if serves {
			out = append(out, Endpoint{URL: mcpURL})
		}
		for _, n := range names {
			out = append(out, Endpoint{Name: n, URL: mcpURL + "/" + n})
		}
		return out
	}
	card := func(name string) any {
		for _, e := range list() {
			if e.Name == name {
				return New(s, e)
			}
		}
		return nil
	}
	out := maps.Clone(public)
	if out == nil {
		out = map[string]http.Handler{}
	}
	out["/mcp"+CardSuffix] = Handler(MediaType, func(*http.Request) any { return card("") })
	out["/mcp/{name}"+CardSuffix] = Handler(MediaType, func(r *http.Request) any { return card(r.PathValue("name")) })
	out[CatalogPath] = Handler(CatalogMediaType, func(*http.Request) any { return NewCatalog(s, list()) })
	return out
}
