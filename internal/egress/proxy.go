package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The reasons of a refusal, as [Proxy].Refused is told them.
const (
	ReasonNotAllowed = "not_allowed" // no rule allows the host and port
	ReasonAddress    = "address"     // the host is, or resolves to, a private, loopback or link-local address no rule names
	ReasonResolve    = "resolve"     // the host's name did not resolve
	ReasonDial       = "dial"        // the connection failed
	ReasonRequest    = "request"     // not a proxy request (no host, a bad port, a method other than CONNECT in origin form)
	ReasonBusy       = "busy"        // 64 connections are open through it
)

// The bounds of a proxy: connections open through it at once (one more
// is refused, busy), and each connection's dial.
const (
	maxConns    = 64
	dialTimeout = 10 * time.Second
)

// Rule allows a host and port. Host is a name (matched without case), an
// address, or "*": every host whose addresses are public. Port is a
// number or "*".
type Rule struct {
	Host string
	Port string
}

// ParseRule parses HOST:PORT (an IPv6 address in brackets); HOST and PORT
// may be "*", and "*" alone is "*:*".
func ParseRule(s string) (Rule, error) {
	if s == "*" {
		return Rule{Host: "*", Port: "*"}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return Rule{}, fmt.Errorf("network rule %q: want HOST:PORT (HOST or PORT may be *)", s)
	}
	if port != "*" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("network rule %q: port %q is not 1-65535 or *", s, port)
		}
	}
	return Rule{Host: strings.ToLower(host), Port: port}, nil
}

// String is HOST:PORT.
func (r Rule) String() string { return net.JoinHostPort(r.Host, r.Port) }

// Proxy is an HTTP proxy serving one sandbox's connections.
type Proxy struct {
	// Rules are what it allows.
	Rules []Rule
	// Refused, when set, is told each refusal: the host asked for
	// (client-named: bound it before using it as a label) and the reason.
	Refused func(host, reason string)
	// Logger logs each refusal; nil discards.
	Logger *slog.Logger

	mu    sync.Mutex
	conns int
}

// Serve serves ln until it is closed, then closes the connections open
// through it and returns.
func (p *Proxy) Serve(ln net.Listener) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    32 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	err := srv.Serve(ln)
	_ = srv.Close()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ServeHTTP serves one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.refuse(w, r.Host, ReasonRequest, http.StatusBadRequest)
		return
	}
	p.forward(w, r)
}

// acquire counts a connection open, or returns false at MaxConns.
func (p *Proxy) acquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns >= maxConns {
		return false
	}
	p.conns++
	return true
}

func (p *Proxy) release() {
	p.mu.Lock()
	p.conns--
	p.mu.Unlock()
}

// refuse answers status and reports the refusal.
func (p *Proxy) refuse(w http.ResponseWriter, host, reason string, status int) {
	if p.Refused != nil {
		p.Refused(host, reason)
	}
	if p.Logger != nil {
		p.Logger.Warn("sandbox egress refused", "host", truncate(host, 256), "reason", reason)
	}
	http.Error(w, "vigil egress: refused ("+reason+")", status)
}

// truncate cuts s at n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// dialAllowed dials hostport when a rule allows it, returning the reason
// and status of a refusal otherwise.
func (p *Proxy) dialAllowed(ctx context.Context, hostport, defaultPort string) (net.Conn, string, string, int) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, defaultPort
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || port == "" {
		return nil, host, ReasonRequest, http.StatusBadRequest
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, host, ReasonRequest, http.StatusBadRequest
	}
	rule, ok := p.match(host, port)
	if !ok {
		return nil, host, ReasonNotAllowed, http.StatusForbidden
	}
	// A rule that names an address allows that address, whatever it is;
	// any other reaches only public addresses, checked on the address
	// dialed (a name that resolves again differently changes nothing).
	named, _ := netip.ParseAddr(rule.Host)
	var refusedAddr bool
	d := net.Dialer{
		Timeout: dialTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			a := ap.Addr().Unmap()
			if named.IsValid() && a == named.Unmap() {
				return nil
			}
			if !Public(a) {
				refusedAddr = true
				return fmt.Errorf("egress: %s is not a public address", a)
			}
			return nil
		},
	}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case refusedAddr:
			return nil, host, ReasonAddress, http.StatusForbidden
		case errors.As(err, &dnsErr):
			return nil, host, ReasonResolve, http.StatusBadGateway
		default:
			return nil, host, ReasonDial, http.StatusBadGateway
		}
	}
	return c, host, "", 0
}

// match returns the first rule allowing host and port.
func (p *Proxy) match(host, port string) (Rule, bool) {
	for _, r := range p.Rules {
		if (r.Host == "*" || r.Host == host) && (r.Port == "*" || r.Port == port) {
			return r, true
		}
	}
	return Rule{}, false
}

// Public reports whether a is an address an unnamed host may have: not
// loopback, private (RFC 1918, unique local), link-local (the cloud
// metadata address among them), shared (RFC 6598), unspecified,
// multicast or in 0.0.0.0/8.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case !a.IsValid(), a.IsLoopback(), a.IsPrivate(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(),
		a.IsInterfaceLocalMulticast(), a.IsMulticast(), a.IsUnspecified():
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// nonPublic are the prefixes netip does not class that are no host's on
// the internet.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// connect serves a CONNECT tunnel.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	if !p.acquire() {
		p.refuse(w, r.Host, ReasonBusy, http.StatusServiceUnavailable)
		return
	}
	defer p.release()
	up, host, reason, status := p.dialAllowed(r.Context(), r.Host, "")
	if up == nil {
		p.refuse(w, host, reason, status)
		return
	}
	defer func() { _ = up.Close() }()
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	down, buf, err := rc.Hijack()
	if err != nil {
		return
	}
	defer func() { _ = down.Close() }()
	_ = down.SetDeadline(time.Time{})
	// The tunnel ends with the proxy (Serve returning), as with either side.
	stop := context.AfterFunc(r.Context(), func() {
		_ = up.SetDeadline(time.Now())
		_ = down.SetDeadline(time.Now())
	})
	defer stop()
	splice(down, buf, up)
}

// splice copies both ways until either side ends.
func splice(down net.Conn, buf *bufio.ReadWriter, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, buf) // what the client sent after its request, then the rest
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		if tc, ok := down.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	_ = up.SetDeadline(time.Now())
	_ = down.SetDeadline(time.Now())
	<-done
}

// forward serves a plain HTTP request in absolute form.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if !p.acquire() {
		p.refuse(w, r.URL.Host, ReasonBusy, http.StatusServiceUnavailable)
		return
	}
	defer p.release()
	up, host, reason, status := p.dialAllowed(r.Context(), r.URL.Host, "80")
	if up == nil {
		p.refuse(w, host, reason, status)
		return
	}
	defer func() { _ = up.Close() }()
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		out.Header.Del(h)
	}
	t := &http.Transport{
		DialContext:            func(context.Context, string, string) (net.Conn, error) { return up, nil },
		DisableKeepAlives:      true,
		ResponseHeaderTimeout:  time.Minute,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer t.CloseIdleConnections()
	resp, err := t.RoundTrip(out)
	if err != nil {
		p.refuse(w, host, ReasonDial, http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
