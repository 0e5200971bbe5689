// Package servercard builds what vigil publishes for discovery before a
// client connects: a Server Card (SEP-2127, the experimental extension
// modelcontextprotocol/experimental-ext-server-card, schema v1) for each
// MCP endpoint it serves, at <mcp-url>/server-card, and the AI Catalog
// that lists them, at /.well-known/ai-catalog.json ([Handler]). A card
// says what initialize and server/discover say (the server's name and
// version, the protocol versions) and how to connect (the endpoint's URL,
// its transport, the Authorization header when the endpoint asks for one
// with the protected resource metadata's URL); it lists no tool,
// resource or prompt, which the extension leaves to the runtime lists.
// Only cmd/vigil imports it.
package servercard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// The media types, paths and schema of discovery.
const (
	// MediaType is a Server Card's.
	MediaType = "application/mcp-server-card+json"
	// CatalogMediaType is the AI Catalog's.
	CatalogMediaType = "application/ai-catalog+json"
	// SchemaURL is the card's $schema, the extension's v1.
	SchemaURL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// CardSuffix follows an MCP endpoint's URL to name its card.
	CardSuffix = "/server-card"
	// CatalogPath is the AI Catalog's well-known path.
	CatalogPath = "/.well-known/ai-catalog.json"
	// MetaKey names what the card's _meta says of vigil: the protected
	// resource metadata's URL, when the endpoint asks for a token.
	MetaKey = "io.github.vigil-mcp/discovery"
)

// Card is a Server Card, as the extension's v1 schema defines it.
type Card struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	Repository  *Repository    `json:"repository,omitempty"`
	Remotes     []Remote       `json:"remotes"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// Repository is where the server's source is.
type Repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// Remote is one way to connect: a transport at a URL.
type Remote struct {
	Type                      string   `json:"type"`
	URL                       string   `json:"url"`
	Headers                   []Header `json:"headers,omitempty"`
	SupportedProtocolVersions []string `json:"supportedProtocolVersions,omitempty"`
}

// Header is an HTTP header a client sends when it connects.
type Header struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// Server is what the cards say of the server at every endpoint.
type Server struct {
	// Name is the server's name in reverse-DNS form (namespace/name), its
	// registry name.
	Name string
	// Version is serverInfo.version of initialize.
	Version string
	// Description is the card's description (1 to 100 characters).
	Description string
	// Versions are the protocol versions served, server/discover's
	// supportedVersions.
	Versions []string
	// ResourceMetadata is the URL of the OAuth protected resource metadata
	// (RFC 9728) when the endpoints ask for a bearer token; "" when they
	// do not.
	ResourceMetadata string
	// Repository is the source's repository URL on GitHub; "" for none.
	Repository string
}

// Endpoint is one MCP endpoint the server serves.
type Endpoint struct {
	// Name is the catalog endpoint's name; "" for the default, /mcp.
	Name string
	// URL is the endpoint's public URL.
	URL string
}

// New returns the card of the endpoint e of s.
func New(s Server, e Endpoint) Card {
	remote := Remote{Type: "streamable-http", URL: e.URL, SupportedProtocolVersions: s.Versions}
	c := Card{Schema: SchemaURL, Name: s.Name, Version: s.Version, Description: s.Description, Remotes: []Remote{remote}}
	if e.Name != "" {
		c.Title = truncate(s.Name[strings.LastIndexByte(s.Name, '/')+1:]+": endpoint "+e.Name, 100)
	}
	if s.Repository != "" {
		c.Repository = &Repository{URL: s.Repository, Source: "github"}
	}
	if s.ResourceMetadata != "" {
		c.Remotes[0].Headers = []Header{{
			Name:        "Authorization",
			Description: "Bearer token of an authorization server the protected resource metadata names: " + s.ResourceMetadata,
			IsRequired:  true, IsSecret: true,
		}}
		c.Meta = map[string]any{MetaKey: map[string]any{"protectedResourceMetadata": s.ResourceMetadata}}
	}
	return c
}

// Catalog is an AI Catalog of Server Cards.
type Catalog struct {
	SpecVersion string  `json:"specVersion"`
	Entries     []Entry `json:"entries"`
}

// Entry is one card of a Catalog, by URL.
type Entry struct {
	Identifier string `json:"identifier"`
	Type       string `json:"type"`
	URL        string `json:"url"`
}

// NewCatalog returns the catalog of the cards of endpoints of s: each
// entry's identifier is urn:air:HOST:mcp:NAME (NAME.ENDPOINT for a named
// endpoint), its URL the endpoint's URL followed by CardSuffix.
func NewCatalog(s Server, endpoints []Endpoint) Catalog {
	c := Catalog{SpecVersion: "1.0", Entries: []Entry{}}
	name := s.Name[strings.LastIndexByte(s.Name, '/')+1:]
	for _, e := range endpoints {
		host := "localhost"
		if u, err := url.Parse(e.URL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		id := "urn:air:" + host + ":mcp:" + name
		if e.Name != "" {
			id += "." + e.Name
		}
		c.Entries = append(c.Entries, Entry{Identifier: id, Type: MediaType, URL: e.URL + CardSuffix})
	}
	return c
}

// Handler serves the document doc returns for a request (nil: 404) as
// mediaType, to any origin (CORS: the document is public and read-only),
// with a strong ETag of its bytes, 304 to a request whose If-None-Match
// names it, and Cache-Control public, max-age=300 (shorter than the
// extension's example hour: a catalog reload changes the cards). It
// builds nothing per client: doc reads only the request's path. It
// answers GET and HEAD, and OPTIONS
// (a preflight) with the CORS headers alone; 405 otherwise.
func Handler(mediaType string, doc func(r *http.Request) any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
		h.Set("Access-Control-Expose-Headers", "ETag")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		v := doc(r)
		if v == nil {
			http.NotFound(w, r)
			return
		}
		body, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			http.Error(w, "the document does not encode", http.StatusInternalServerError)
			return
		}
		body = append(body, '\n')
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Vary", "Accept")
		if matches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", mediaType)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

// matches reports whether the If-None-Match value inm names etag (or is
// *), weak comparison as RFC 9110 asks for If-None-Match.
func matches(inm, etag string) bool {
	for t := range strings.SplitSeq(inm, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// truncate is s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
