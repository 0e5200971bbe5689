package servercard

import (
	"encoding/json"
	"io"
)

// ServerJSONSchema is the $schema of the server.json -server-json
// prints: the registry's released version.
const ServerJSONSchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// ServerJSON is the MCP Registry's server.json, the fields vigil fills.
type ServerJSON struct {
	Schema      string      `json:"$schema"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version"`
	Repository  *Repository `json:"repository,omitempty"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Remotes     []Remote    `json:"remotes,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
}

// Package is a server.json package: vigil's OCI image.
type Package struct {
	RegistryType string    `json:"registryType"`
	Identifier   string    `json:"identifier"`
	Transport    Transport `json:"transport"`
}

// Transport is a package's transport: the image serves Streamable HTTP.
type Transport struct {
	Type string `json:"type"`
	URL  string `json:"url,omitempty"`
}

// NewServerJSON returns the server.json of s: its remote when mcpURL is
// not "" (the deployment's public URL), and the OCI image image, which
// serves Streamable HTTP at http://localhost:8080/mcp, as deploy/README.md
// runs it.
func NewServerJSON(s Server, mcpURL, image string) ServerJSON {
	out := ServerJSON{Schema: ServerJSONSchema, Name: s.Name, Description: s.Description, Version: s.Version}
	if s.Repository != "" {
		out.Repository = &Repository{URL: s.Repository, Source: "github"}
	}
	if mcpURL != "" {
		card := New(s, Endpoint{URL: mcpURL})
		out.Remotes = card.Remotes
		for i := range out.Remotes {
			out.Remotes[i].SupportedProtocolVersions = nil // not in server.json's schema
		}
	}
	out.Packages = []Package{{RegistryType: "oci", Identifier: image, Transport: Transport{Type: "streamable-http", URL: "http://localhost:8080/mcp"}}}
	return out
}

// Write writes v as indented JSON and a newline to w.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
