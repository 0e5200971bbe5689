package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// serveHTTP serves MCP on cfg.httpAddr, and the observability endpoints
// there too or, with -admin-http, on cfg.adminAddr only, until ctx is
// done; then it shuts down: /readyz turns 503, the MCP server drains for
// the grace, the MCP endpoint closes, and the HTTP servers stop.
func serveHTTP(ctx context.Context, stop func(), srv *server.Server, inst *middleware.Instrumentation, in *instruments, rec *debugpage.Recorder, logger *slog.Logger, cfg config) error {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return err
	}
	var adminLn net.Listener
	if cfg.adminAddr != "" {
		if adminLn, err = net.Listen("tcp", cfg.adminAddr); err != nil {
			_ = ln.Close()
			return err
		}
	}
	closeListeners := func() {
		_ = ln.Close()
		if adminLn != nil {
			_ = adminLn.Close()
		}
	}
	var authz *authorization
	if cfg.authEnabled() {
		if authz, err = newAuthorization(ctx, cfg, resourceURI(cfg, ln.Addr()), srv, in.registry, logger); err != nil {
			closeListeners()
			return err
		}
		defer authz.close()
	}

	opts := []streamable.Option{
		streamable.WithLogger(logger),
		streamable.WithMaxBodyBytes(cfg.maxBody),
		streamable.WithMaxSessions(cfg.maxSessions),
		streamable.WithMaxRequestStreamsPerSession(cfg.maxInFlight),
		streamable.WithIdleTimeout(cfg.idleTimeout),
		endpointQuotas(cfg, inst.Metrics()),
		streamable.WithShedder(transport.NewShedder(cfg.overloadTarget)), // after the quotas, before the sessions
		streamable.WithWriteTimeout(cfg.sseWriteTimeout),
		streamable.WithMaxResumptions(cfg.maxResumptions),
		streamable.WithInitTimeout(cfg.initTimeout),
		streamable.WithMaxStateBytes(cfg.maxSessionState),
	}
	cuts := telemetry.NewStreamsCut()
	if err := in.register(cuts); err != nil {
		return err
	}
	opts = append(opts, streamable.WithStreamCutHook(func(c streamable.StreamCut) { cuts.Cut(c.String()) }))
	if len(cfg.allowedHosts) > 0 {
		opts = append(opts, streamable.WithAllowedHosts(cfg.allowedHosts...))
	}
	rejected := func(r protocol.RejectReason) { inst.Metrics().MessageRejected(r.String()) }
	if authz != nil {
		// A session answers only the principal that opened it; another
		// one's request with its id is an unknown session, and counted.
		opts = append(opts, streamable.WithPrincipal(auth.SessionPrincipal))
		rejected = func(r protocol.RejectReason) {
			inst.Metrics().MessageRejected(r.String())
			authz.rs.RejectHook(r)
		}
	}
	opts = append(opts, streamable.WithRejectHook(rejected))
	shared := cfg.shared
	if shared != nil {
		opts = append(opts, shared.Options()...) // sessions shared with the other replicas
	}
	endpoint := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP), opts...)
	var mcp http.Handler = endpoint
	var public map[string]http.Handler
	if authz != nil {
		mcp, public = authz.rs.Handler(endpoint), authz.public()
		endpoint.SetForwardHandler(mcp) // a forwarded task request is authorized here too
	}
	if rl := inst.RateLimiter(); rl != nil {
		// The principal's rate, behind the guard that names it (a
		// forwarded request was counted on the replica it reached first).
		// The guard in front of the endpoint itself (above) stays the one
		// that checks tool scopes per message.
		mcp = rl.Handler(endpoint)
		if authz != nil {
			mcp = authz.rs.Handler(mcp)
		}
	}

	var ready atomic.Bool
	readyNow := &serviceReadiness{serving: &ready}
	if shared != nil {
		readyNow.store = shared.Ready
	}
	var page http.Handler // nil: no debug page (rec is nil)
	if rec != nil {
		page = debugpage.Handler(srv, rec, debugpage.WithVersion(version), debugpage.WithReadiness(readyNow.Load),
			debugpage.WithMaxSessions(cfg.maxSessions), debugpage.WithTraceExporter(in.exporter), debugpage.WithMetricsLink("/metrics"))
	}
	obs := newObservabilityMux(in, readyNow, page, cfg.allowedHosts)
	var servers []*http.Server
	served := make(chan error, 2)
	serve := func(h http.Handler, l net.Listener) {
		hs := newHTTPServer(h, cfg, logger)
		servers = append(servers, hs)
		go func() { served <- hs.Serve(l) }()
	}
	base := "http://" + ln.Addr().String()
	obsBase := base
	if adminLn != nil {
		obsBase = "http://" + adminLn.Addr().String()
		// Logged before "serving MCP", which tests wait for.
		logger.Info("serving admin endpoints", "url", obsBase, "paths", adminPaths(page != nil),
			"loopback_only", loopback.ListenAddr(cfg.adminAddr))
		if !loopback.ListenAddr(cfg.adminAddr) {
			logger.Warn(adminExposedWarning, "addr", adminLn.Addr().String())
		}
		serve(newMux(mcp, public, nil), ln)
		serve(obs, adminLn)
	} else {
		serve(newMux(mcp, public, obs), ln)
	}
	logger.Info("serving MCP", "url", base+"/mcp")
	if page != nil {
		logger.Info("observability", "metrics", obsBase+"/metrics", "debug", obsBase+"/debug/vigil")
	} else {
		logger.Info("observability", "metrics", obsBase+"/metrics")
	}
	ready.Store(true)

	pending := len(servers)
	var failed error
	select {
	case failed = <-served:
		pending--
	case <-ctx.Done():
		stop() // a second signal kills the process
		ready.Store(false)
		if shared != nil {
			// Leave the cluster: refuse new requests (the load balancer
			// retries them elsewhere) and hand the open streams back to
			// their clients, who resume them on another replica.
			endpoint.Drain()
		}
		drain(srv, logger, cfg.grace)
	}
	_ = endpoint.Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			logger.Warn("HTTP connections still open at exit", "error", err)
			_ = hs.Close()
		}
	}
	for ; pending > 0; pending-- {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return failed
	}
	logger.Info("stopped")
	return nil
}

// readiness tells /readyz and the debug page whether the service is ready.
type readiness interface{ Load() bool }

// serviceReadiness is the service's readiness: serving (false from the
// start of the shutdown) and, in the shared mode, the session store
// answering.
type serviceReadiness struct {
	serving *atomic.Bool
	store   func() bool // nil: no shared store
}

// Load reports whether the service is ready.
func (r *serviceReadiness) Load() bool { return r.notReady() == "" }

// notReady returns why the service is not ready, or "".
func (r *serviceReadiness) notReady() string {
	switch {
	case !r.serving.Load():
		return "draining"
	case r.store != nil && !r.store():
		return "shared session store unreachable"
	}
	return ""
}

// resourceURI returns the canonical resource URI of the MCP endpoint:
// -auth-resource, or http://HOST:PORT/mcp with the host of -http as given
// (checkExposure refused a wildcard one) and the port listened on.
func resourceURI(cfg config, addr net.Addr) string {
	if cfg.authResource != "" {
		return cfg.authResource
	}
	host, _, err := net.SplitHostPort(cfg.httpAddr)
	_, port, perr := net.SplitHostPort(addr.String())
	if err != nil || perr != nil || host == "" {
		return "http://" + addr.String() + "/mcp"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}

// newHTTPServer returns the http.Server of h with vigil's connection
// hygiene: headers within 10s, a request body within cfg.bodyReadTimeout
// of the request's start (ReadTimeout), keep-alive connections closed
// after cfg.httpIdleTimeout of idleness (0: never). There is no
// WriteTimeout, which would cut SSE streams. With authorization, each
// connection remembers the last token verified on it (auth.ConnContext).
func newHTTPServer(h http.Handler, cfg config, logger *slog.Logger) *http.Server {
	idle := cfg.httpIdleTimeout
	if idle == 0 {
		idle = -1 // no limit; 0 would mean ReadTimeout's
	}
	// ReadTimeout's deadline does not outlive the body: net/http lifts it
	// when the handler has read the body to its end (or at once for a
	// request without one), as it starts reading the connection in the
	// background to notice the client going away. A deadline left there
	// would cancel the request, ending an SSE stream or a long tool call
	// (TestSSEOutlivesBodyReadTimeout); one left on a body cut short
	// makes net/http close the connection after the answer.
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.bodyReadTimeout,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// The caller of the quotas (quota.go), client.address and
	// client.port on spans (middleware.PeerConnContext), and the
	// connection whose socket tells the shedder how long each request
	// waited (streamable.ConnContext).
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return streamable.ConnContext(middleware.PeerConnContext(clientConnContext(ctx, c), c), c)
	}
	if cfg.authEnabled() {
		// A keep-alive client's token, the same with each request, is
		// then recognized by comparison, not hashed and looked up.
		hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return auth.ConnContext(streamable.ConnContext(middleware.PeerConnContext(clientConnContext(ctx, c), c), c), c)
		}
	}
	return hs
}

// adminPaths lists what the observability mux serves, for the log.
func adminPaths(debug bool) []string {
	paths := []string{"/metrics", "/healthz", "/readyz"}
	if debug {
		paths = append(paths, "/debug/vigil", "/")
	}
	return paths
}

// newMux routes /mcp to mcp and each pattern of public (paths anyone may
// read, such as the OAuth protected resource metadata under
// /.well-known/oauth-protected-resource) to its handler; everything else
// goes to obs, the observability endpoints, or is 404 when obs is nil
// (with -admin-http they have a listener of their own).
func newMux(mcp http.Handler, public map[string]http.Handler, obs http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp)
	for pattern, h := range public {
		mux.Handle(pattern, h)
	}
	if obs != nil {
		mux.Handle("/", obs)
	}
	return mcpFirst{mcp: mcp, mux: mux}
}

// mcpFirst hands a request for exactly /mcp to mcp and any other to mux,
// whose "/mcp" pattern routes the same requests to mcp: the MCP endpoint,
// which takes nearly every request, is spared the mux's pattern matching
// (docs/perf/ROUNDS.md has its cost).
type mcpFirst struct {
	mcp http.Handler
	mux *http.ServeMux
}

func (m mcpFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/mcp" {
		m.mcp.ServeHTTP(w, r)
		return
	}
	m.mux.ServeHTTP(w, r)
}

// newObservabilityMux serves /metrics, /healthz, /readyz and, when page
// (a debugpage.Handler) is not nil, /debug/vigil (and / redirecting to it)
// and the trace views /debug/vigil/trace/{id}. The metrics and debug
// endpoints refuse non-loopback Host names on a loopback listener, as the
// MCP endpoint does, against DNS rebinding. The instrumentation's collector
// and the page record the outcomes that wait for their batch before they
// are read (see server.WithOutcomeBatches).
func newObservabilityMux(in *instruments, ready readiness, page http.Handler, allowedHosts []string) *http.ServeMux {
	guard := func(h http.Handler) http.Handler { return loopback.HostGuard(h, allowedHosts) }
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", guard(promhttp.HandlerFor(in.registry, promhttp.HandlerOpts{EnableOpenMetrics: true})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ready.Load() {
			why := "draining" // a readiness that does not say why
			if r, ok := ready.(interface{ notReady() string }); ok && r.notReady() != "" {
				why = r.notReady()
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(why + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if page != nil {
		live := guard(http.StripPrefix("/debug/vigil", page))
		for _, p := range []string{"", "/trace/{id}", "/style.css", "/favicon.svg"} {
			mux.Handle("GET /debug/vigil"+p, live)
		}
		// What a browser asks for a page without an icon link: the page's.
		mux.Handle("GET /favicon.ico", guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r = r.Clone(r.Context())
			r.URL.Path, r.URL.RawPath = "/favicon.svg", ""
			page.ServeHTTP(w, r)
		})))
		mux.Handle("GET /{$}", guard(http.RedirectHandler("/debug/vigil", http.StatusFound)))
	}
	return mux
}

// adminExposedWarning is logged when -admin-http is not loopback.
const adminExposedWarning = "the admin listener is reachable beyond this host, with no authorization: " +
	"/metrics, and /debug/vigil, which lists session ids (an unauthenticated session's only credential) " +
	"and the ids of requests waiting for a client's answer; firewall it, or restrict it with a NetworkPolicy, " +
	"to the monitoring that scrapes it"

// checkExposure refuses to serve /mcp without authorization on a listen
// address other than loopback unless -allow-unauthenticated says so, and
// refuses authorization without -auth-resource on a wildcard address,
// whose resource URI vigil cannot know. It returns a warning to log when
// serving unauthenticated on such an address.
func checkExposure(cfg config) (warning string, err error) {
	if cfg.stdio {
		return "", nil
	}
	if cfg.authEnabled() {
		if cfg.authResource == "" && isWildcardAddr(cfg.httpAddr) {
			return "", fmt.Errorf("-http %s listens on every address, so vigil cannot know the URL clients use: add -auth-resource URL (the canonical https URL of /mcp that tokens must name)", cfg.httpAddr)
		}
		if cfg.adminAddr == "" && !loopback.ListenAddr(cfg.httpAddr) {
			// /metrics and /debug/vigil name sessions, subjects and tools:
			// beside a protected /mcp they would be its open back door.
			return "", fmt.Errorf("-http %s is not a loopback address, and /metrics, /healthz, /readyz and /debug/vigil would be served there without authorization beside the protected /mcp: add -admin-http ADDR to serve them on a listener of their own (127.0.0.1:9090, or :9090 for a cluster network that only monitoring reaches)", cfg.httpAddr)
		}
		return "", nil
	}
	if loopback.ListenAddr(cfg.httpAddr) {
		return "", nil
	}
	if !cfg.allowUnauthenticated {
		return "", fmt.Errorf("-http %s is not a loopback address, and /mcp would be open to anyone who can reach it: add -auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated", cfg.httpAddr)
	}
	if len(cfg.allowedHosts) == 0 {
		return "", fmt.Errorf("-http %s is not a loopback address and /mcp has no authorization: add -allowed-hosts NAMES (the host names clients use), so that a web page cannot reach it by DNS rebinding", cfg.httpAddr)
	}
	if cfg.adminAddr == "" {
		// The page lists session ids, which are the only credential of an
		// unauthenticated session.
		return "", fmt.Errorf("-http %s is not a loopback address, and /debug/vigil would list its session ids (their only credential without authorization) to anyone: add -admin-http ADDR to serve /metrics, /healthz, /readyz and /debug/vigil on a listener of their own", cfg.httpAddr)
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
