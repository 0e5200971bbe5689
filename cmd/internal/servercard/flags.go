package servercard

import (
	"errors"
	"flag"
	"net/url"
	"regexp"
	"strings"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// DefaultName is the registry name of vigil's own cards and server.json
// when -registry-name is not given: Vigil's namespace, and the serverInfo
// name vigil gives initialize ("vigil") after the slash.
const DefaultName = "io.github.vigil-mcp/vigil"

// Flags are vigil's discovery flags.
type Flags struct {
	Enabled         bool   // -discovery: serve the cards and the catalog
	PublicURL       string // -public-url: the MCP endpoint's URL as clients reach it; "": the resource URI
	Name            string // -registry-name: the reverse-DNS name of the cards and server.json
	Image           string // -registry-image: the OCI image server.json's package names; "": Vigil's at the version
	PrintServerJSON bool   // -server-json: print server.json and exit
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.Enabled, "discovery", true, "serve a Server Card (SEP-2127) at <mcp-url>/server-card for /mcp and each -catalog endpoint, and the AI Catalog listing them at /.well-known/ai-catalog.json, to anyone (name, version, URLs, protocol versions, whether a token is needed; never tools); false serves neither")
	fs.StringVar(&f.PublicURL, "public-url", "", "the `URL` of /mcp as clients reach it (https://mcp.example.com/mcp), for the Server Cards, the catalog and -server-json (default -auth-resource, else http://HOST:PORT/mcp of -http)")
	fs.StringVar(&f.Name, "registry-name", DefaultName, "the reverse-DNS `name` (namespace/name) of the Server Cards and -server-json, as the MCP Registry knows this deployment")
	fs.StringVar(&f.Image, "registry-image", "", "the OCI image `reference` -server-json's package names (default ghcr.io/vigil-mcp/vigil at vigil's version)")
	fs.BoolVar(&f.PrintServerJSON, "server-json", false, "print the MCP Registry's server.json of this deployment (-registry-name, -public-url, -registry-image) and exit")
}

// namePattern is the registry's and the card's name pattern.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// Check refuses a name outside the registry's pattern and a public URL
// that is not an absolute http(s) URL.
func (f *Flags) Check() error {
	if !namePattern.MatchString(f.Name) || len(f.Name) > 200 {
		return errors.New("-registry-name must be a reverse-DNS namespace and a name, one slash between (io.github.acme/weather)")
	}
	if f.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(f.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("-public-url must be an http(s) URL with a host and no query, fragment or credentials")
	}
	f.PublicURL = strings.TrimSuffix(f.PublicURL, "/")
	return nil
}

// Vigil returns what vigil's cards say of it at version, named as f
// says: the description, every protocol version vigil serves (those
// server/discover lists) and its repository.
func (f *Flags) Vigil(version string) Server {
	return Server{
		Name: f.Name, Version: version, Description: "Vigil: an observability-first MCP server and gateway",
		Versions: protocol.Versions(), Repository: "https://github.com/vigil-mcp/vigil",
	}
}

// ServerJSON returns the server.json of the deployment f describes, vigil
// at version: its remote at -public-url when given, its package the image
// of -registry-image, else ghcr.io/vigil-mcp/vigil at version.
func (f *Flags) ServerJSON(version string) ServerJSON {
	image := f.Image
	if image == "" {
		image = "ghcr.io/vigil-mcp/vigil:" + version
	}
	return NewServerJSON(f.Vigil(version), f.PublicURL, image)
}
