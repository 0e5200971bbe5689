package streamable

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
)

// hostAllowed guards against DNS rebinding: on a loopback listener only
// loopback names (and the configured hosts) are accepted as Host.
func (h *Endpoint) hostAllowed(r *http.Request) bool {
	return h.nameAllowed(r, r.Host, &h.namedHost)
}

// originAllowed checks the Origin header, when there is one.
func (h *Endpoint) originAllowed(r *http.Request) bool {
	origin := headerValue(r.Header, headerOrigin)
	if origin == "" {
		return true
	}
	if h.cfg.allowedOrigin != nil {
		return h.cfg.allowedOrigin(origin, r)
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true // the page is served from this very host (the Host check guards that)
	}
	if known := h.namedOrigin.Load(); known != nil && *known == u.Host {
		return true
	}
	if h.allowedByName(u.Host) {
		remembered := u.Host // on the heap only here
		h.namedOrigin.Store(&remembered)
		return true
	}
	return false // on every listener: the spec's MUST, whatever the address
}

// nameAllowed decides for a host or host:port. A host allowed by its name
// alone (listed, or a loopback name), whatever the request's listener, is
// remembered in last: the next request naming it, as a client's every
// request does, is allowed by a comparison.
func (h *Endpoint) nameAllowed(r *http.Request, hostport string, last *atomic.Pointer[string]) bool {
	if known := last.Load(); known != nil && *known == hostport {
		return true
	}
	if h.allowedByName(hostport) {
		remembered := hostport // on the heap only here
		last.Store(&remembered)
		return true
	}
	if len(h.cfg.allowedHosts) > 0 {
		return false
	}
	return !onLoopback(r)
}

// allowedByName reports whether a host or host:port is allowed by its name:
// one of the allowed hosts, or a loopback name.
func (h *Endpoint) allowedByName(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	return slices.ContainsFunc(h.cfg.allowedHosts, func(a string) bool {
		return strings.EqualFold(a, hostport) || strings.EqualFold(a, host)
	}) || isLoopbackName(host)
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback reports whether the request arrived on a loopback address.
func onLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true // unknown: be strict
	}
	tcp, ok := addr.(*net.TCPAddr)
	return !ok || tcp.IP.IsLoopback()
}
