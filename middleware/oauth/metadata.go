package oauth

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// wellKnownPath is the path of RFC 9728 protected resource metadata; a
// resource with a path has its metadata at wellKnownPath followed by that
// path as well (/.well-known/oauth-protected-resource/mcp).
const wellKnownPath = "/.well-known/oauth-protected-resource"

// metadataMaxAge is how long clients and caches may keep the metadata.
const metadataMaxAge = time.Hour

// protectedResourceMetadata is the RFC 9728 document that tells a client
// which authorization servers issue tokens for this resource.
type protectedResourceMetadata struct {
	// Resource is the resource's canonical URI, the audience of its tokens.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer URLs of the authorization servers.
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported are the scopes a client may ask for.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported is ["header"]: tokens only in the
	// Authorization header.
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// ResourceName is a human-readable name, optional.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is a URL of documentation for developers,
	// optional.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// DPoPAlgorithms are the algorithms of the DPoP proofs accepted, with
	// DPoP (RFC 9728 dpop_signing_alg_values_supported).
	DPoPAlgorithms []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPRequired says every token must be DPoP-bound (RFC 9728
	// dpop_bound_access_tokens_required).
	DPoPRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
}

// metadataPaths returns the paths the metadata of resource is served at:
// the path-inserted form (RFC 9728 §3.1) first when the resource has a
// path, then the root form.
func metadataPaths(resource *url.URL) []string {
	p := strings.TrimSuffix(resource.EscapedPath(), "/")
	if p == "" {
		return []string{wellKnownPath}
	}
	return []string{wellKnownPath + p, wellKnownPath}
}

// metadataURL returns the URL of the metadata of resource, for the
// resource_metadata attribute of challenges.
func metadataURL(resource *url.URL) string {
	u := url.URL{Scheme: resource.Scheme, Host: resource.Host}
	return u.String() + metadataPaths(resource)[0]
}

// metadataHandler serves a metadata document encoded once.
type metadataHandler struct{ body []byte }

func (h metadataHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", "*") // public metadata, read by browser clients
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		hdr.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		hdr.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		hdr.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(metadataMaxAge.Seconds())))
	hdr.Set("Content-Length", strconv.Itoa(len(h.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.body)
	}
}
