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

	// Args is the command line as given, after the program's name, which
	// the example of a refusal completes; ExampleHost is a host name the
	// example gives to -allowed-hosts (the machine's), "" for a placeholder.
	Args        []string
	ExampleHost string
}

// ExampleAdminAddr is the -admin-http of the example a refusal gives.
const ExampleAdminAddr = "127.0.0.1:9090"

// Check refuses to serve /mcp without authorization on a listen address
// other than loopback unless -allow-unauthenticated says so (and
// -allowed-hosts names the hosts, and -admin-http moves the observability
// endpoints away), and refuses authorization without -auth-resource on a
// wildcard address, whose resource URI vigil cannot know, or without
// -admin-http off loopback. A refusal names every flag missing at once and
// ends with an example command, the given one completed, that starts. It
// returns a warning to log when serving unauthenticated on such an address.
func Check(l Listener) (warning string, err error) {
	var missing []string // one line per flag (or choice of flags) to add
	var add []string     // the flags the example adds
	if l.Authorized {
		if l.Resource == "" && isWildcardAddr(l.HTTPAddr) {
			missing = append(missing, "-auth-resource URL: -http "+l.HTTPAddr+" listens on every address, so vigil cannot know the URL clients use (the canonical https URL of /mcp that tokens must name)")
			add = append(add, "-auth-resource", "https://"+exampleHost(l)+"/mcp")
		}
	} else {
		if loopback.ListenAddr(l.HTTPAddr) {
			return "", nil
		}
		if !l.AllowUnauthenticated {
			missing = append(missing, "-auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated: else /mcp would be open to anyone who can reach it")
			add = append(add, "-allow-unauthenticated")
		}
		if len(l.AllowedHosts) == 0 {
			missing = append(missing, "-allowed-hosts NAMES (the host names clients use), without authorization: so that a web page cannot reach /mcp by DNS rebinding")
			add = append(add, "-allowed-hosts", exampleHost(l))
		}
	}
	if l.AdminAddr == "" && !loopback.ListenAddr(l.HTTPAddr) {
		// /metrics and /debug/vigil name sessions, subjects and tools:
		// beside a protected /mcp they would be its open back door, and
		// beside an unprotected one they would list its session ids,
		// the only credential of an unauthenticated session.
		missing = append(missing, "-admin-http ADDR: to serve /metrics, /healthz, /readyz and /debug/vigil on a listener of their own (127.0.0.1:9090, or :9090 for a cluster network that only monitoring reaches), which would else be open beside /mcp, session ids and all")
		add = append(add, "-admin-http", ExampleAdminAddr)
	}
	if len(missing) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "-http %s is not a loopback address; to serve /mcp there, add:", l.HTTPAddr)
		for _, m := range missing {
			b.WriteString("\n  ")
			b.WriteString(m)
		}
		b.WriteString("\nfor example:\n  vigil")
		for _, a := range append(append([]string(nil), l.Args...), add...) {
			b.WriteByte(' ')
			b.WriteString(shellQuote(a))
		}
		return "", fmt.Errorf("%s", b.String())
	}
	if l.Authorized {
		return "", nil
	}
	return "serving /mcp without authorization on a non-loopback address (-allow-unauthenticated)", nil
}

// exampleHost is the host name of l's example: ExampleHost, else the
// -http host when it names one, else a placeholder.
func exampleHost(l Listener) string {
	if l.ExampleHost != "" {
		return l.ExampleHost
	}
	if host, _, err := net.SplitHostPort(l.HTTPAddr); err == nil && host != "" && !isWildcardAddr(l.HTTPAddr) {
		return host
	}
	return "mcp.example.com"
}

// shellQuote quotes s for a POSIX shell, when it must be.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_./:=,@%+-", r)
	}
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !plain(r) }) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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

// AdminAccounts is the warning of an -admin-http beyond loopback (addr)
// that serves the user mode's /admin/connections (users upstreams of
// -upstream-auth NAME=user): what it lets anyone who reaches it do; ""
// when the admin listener is loopback, there is none, or no user mode.
func AdminAccounts(addr string, users int) string {
	if addr == "" || loopback.ListenAddr(addr) || users == 0 {
		return ""
	}
	return "the admin listener is reachable beyond this host, with no authorization, and serves the accounts of -upstream-auth NAME=user: " +
		"GET /admin/connections lists any user's connections to the upstreams that act as each user, " +
		"POST /admin/connections/revoke disconnects any user and revokes her tokens at the authorization server; " +
		"firewall it to operators, or listen on loopback and reach it through a port-forward"
}
