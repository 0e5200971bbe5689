// Package exposure decides whether vigil may serve /mcp on the address its
// flags name ([Check]): off loopback only with authorization, or knowingly
// without it behind allowed host names, and never with the observability
// endpoints beside an /mcp they would open a back door to. Only cmd/vigil
// imports it.
package exposure

import (
	"fmt"
	"net"
	"strings"

	"github.com/vigil-mcp/vigil/internal/loopback"
)

// Listener is what the flags say of the MCP listener.
type Listener struct {
	HTTPAddr             string   // -http
	AdminAddr            string   // -admin-http; "": the observability endpoints beside /mcp
	Authorized           bool     // -auth-issuer is set
	Resource             string   // -auth-resource
	AllowUnauthenticated bool     // -allow-unauthenticated
	AllowedHosts         []string // -allowed-hosts
}

// Check refuses to serve /mcp without authorization on a listen address
// other than loopback unless -allow-unauthenticated says so, and refuses
// authorization without -auth-resource on a wildcard address, whose
// resource URI vigil cannot know. It returns a warning to log when
// serving unauthenticated on such an address.
func Check(l Listener) (warning string, err error) {
	if l.Authorized {
		if l.Resource == "" && isWildcardAddr(l.HTTPAddr) {
			return "", fmt.Errorf("-http %s listens on every address, so vigil cannot know the URL clients use: add -auth-resource URL (the canonical https URL of /mcp that tokens must name)", l.HTTPAddr)
		}
		if l.AdminAddr == "" && !loopback.ListenAddr(l.HTTPAddr) {
			// /metrics and /debug/vigil name sessions, subjects and tools:
			// beside a protected /mcp they would be its open back door.
			return "", fmt.Errorf("-http %s is not a loopback address, and /metrics, /healthz, /readyz and /debug/vigil would be served there without authorization beside the protected /mcp: add -admin-http ADDR to serve them on a listener of their own (127.0.0.1:9090, or :9090 for a cluster network that only monitoring reaches)", l.HTTPAddr)
		}
		return "", nil
	}
	if loopback.ListenAddr(l.HTTPAddr) {
		return "", nil
	}
	if !l.AllowUnauthenticated {
		return "", fmt.Errorf("-http %s is not a loopback address, and /mcp would be open to anyone who can reach it: add -auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated", l.HTTPAddr)
	}
	if len(l.AllowedHosts) == 0 {
		return "", fmt.Errorf("-http %s is not a loopback address and /mcp has no authorization: add -allowed-hosts NAMES (the host names clients use), so that a web page cannot reach it by DNS rebinding", l.HTTPAddr)
	}
	if l.AdminAddr == "" {
		// The page lists session ids, which are the only credential of an
		// unauthenticated session.
		return "", fmt.Errorf("-http %s is not a loopback address, and /debug/vigil would list its session ids (their only credential without authorization) to anyone: add -admin-http ADDR to serve /metrics, /healthz, /readyz and /debug/vigil on a listener of their own", l.HTTPAddr)
	}
	return "serving /mcp without authorization on a non-loopback address (-allow-unauthenticated)", nil
}

// isWildcardAddr reports whether the listen address addr has an empty or
// unspecified (0.0.0.0, ::) host.
func isWildcardAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsUnspecified()
}
