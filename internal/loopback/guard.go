package loopback

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// HostGuard refuses, with 403, a request that arrived on a loopback address
// with a Host that is neither a loopback name nor one of allowed (a name,
// or host:port): a web page that rebinds its DNS name to 127.0.0.1 must not
// read what a loopback listener serves. Other requests go to next.
func HostGuard(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onLoopback(r) && !hostAllowed(r.Host, allowed) {
			http.Error(w, "forbidden Host", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host hostport is a loopback name or one
// of allowed.
func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool {
		return strings.EqualFold(a, hostport) || strings.EqualFold(a, host)
	})
}

// onLoopback reports whether r arrived on a loopback address.
func onLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true // unknown: be strict
	}
	tcp, ok := addr.(*net.TCPAddr)
	return !ok || tcp.IP.IsLoopback()
}
