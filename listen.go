package vigil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// ListenAndServe serves MCP at /mcp on mcpAddr and /metrics, /healthz,
// /readyz and /debug/vigil on adminAddr ("": on mcpAddr beside /mcp) until
// ctx is done or a listener fails; then it shuts the service down
// ([Service.Shutdown], in-flight requests getting the shutdown grace) and
// the HTTP servers, and returns once every goroutine it started has ended.
// It returns nil after a shutdown that ctx asked for.
//
// It refuses an mcpAddr other than loopback unless [WithAllowPublic], and
// then one without an admin listener of its own, or without a [Front] and
// [WithAllowedHosts]. The HTTP servers read a
// request's headers within 10s and its body within 30s, and close
// keep-alive connections idle for 2 minutes ([WithHTTPTimeouts] changes it).
//
// ListenAndServe is the long form of docs/server.md, written once.
func (s *Service) ListenAndServe(ctx context.Context, mcpAddr, adminAddr string) error {
	if s.err != nil {
		return s.err
	}
	// Whatever the way out, the service is done (a no-op after the
	// shutdown below).
	defer func() { _ = s.Shutdown(context.Background()) }()
	if err := checkExposure(mcpAddr, adminAddr, s.cfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", mcpAddr)
	if err != nil {
		return err
	}
	var adminLn net.Listener
	if adminAddr != "" {
		if adminLn, err = net.Listen("tcp", adminAddr); err != nil {
			_ = ln.Close()
			return err
		}
	}
	var mcp http.Handler
	var public map[string]http.Handler
	if s.cfg.front != nil {
		built, err := s.buildWith(func(srv streamable.Server, opts ...streamable.Option) (endpoint *streamable.Endpoint, err error) {
			endpoint, mcp, public, err = s.cfg.front(ctx, ln.Addr(), srv, opts...)
			return endpoint, err
		})
		if err == nil && !built {
			err = errors.New("vigil: the endpoint was made before ListenAndServe (Endpoint or AdminHandler), without the front")
		}
		if err != nil {
			_ = ln.Close()
			if adminLn != nil {
				_ = adminLn.Close()
			}
			return err
		}
	} else {
		mcp = s.Endpoint()
	}

	var servers []*http.Server
	served := make(chan error, 2)
	serve := func(h http.Handler, l net.Listener) {
		hs := s.newHTTPServer(h)
		servers = append(servers, hs)
		go func() { served <- hs.Serve(l) }()
	}
	base := "http://" + ln.Addr().String()
	adminBase := base
	if adminLn != nil {
		adminBase = "http://" + adminLn.Addr().String()
		// Logged before "serving MCP", which tests wait for.
		s.Logger.Info("serving admin endpoints", "url", adminBase, "paths", s.adminPaths(),
			"loopback_only", loopback.ListenAddr(adminAddr))
		if !loopback.ListenAddr(adminAddr) {
			s.Logger.Warn(adminExposedWarning, "addr", adminLn.Addr().String())
		}
		serve(newMux(mcp, public, nil), ln)
		serve(s.AdminHandler(), adminLn)
	} else {
		serve(newMux(mcp, public, s.AdminHandler()), ln)
	}
	s.Logger.Info("serving MCP", "url", base+"/mcp")
	if s.Page != nil {
		s.Logger.Info("observability", "metrics", adminBase+"/metrics", "debug", adminBase+"/debug/vigil")
	} else {
		s.Logger.Info("observability", "metrics", adminBase+"/metrics")
	}

	pending := len(servers)
	var failed error
	select {
	case failed = <-served:
		pending--
	case <-ctx.Done():
	}
	s.stop()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			s.Logger.Warn("HTTP connections still open at exit", "error", err)
			_ = hs.Close()
		}
	}
	for ; pending > 0; pending-- {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) && failed == nil {
			failed = err
		}
	}
	s.closeInstruments()
	if failed != nil {
		return failed
	}
	s.Logger.Info("stopped")
	return nil
}

// stop stops the service for its grace (see Shutdown), logging it.
func (s *Service) stop() {
	s.Logger.Info("shutting down", "grace_seconds", s.cfg.grace.Seconds())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.grace)
	defer cancel()
	if err := s.stopServing(sctx); err != nil {
		s.Logger.Warn("shutdown grace expired; in-flight requests were cancelled", "error", err)
	}
}

// adminPaths lists what the admin handler serves, for the log.
func (s *Service) adminPaths() []string {
	paths := []string{"/metrics", "/healthz", "/readyz"}
	if s.Page != nil {
		paths = append(paths, "/debug/vigil", "/")
	}
	return paths
}

// newHTTPServer returns the http.Server of h with the service's connection
// hygiene: headers within 10s, a request body within 30s of the request's
// start (ReadTimeout), keep-alive connections closed after 2 minutes of
// idleness (or WithHTTPTimeouts'), and the connection contexts of
// WithConnContext after its own. There is no WriteTimeout, which would cut
// SSE streams.
func (s *Service) newHTTPServer(h http.Handler) *http.Server {
	// ReadTimeout's deadline does not outlive the body: net/http lifts it
	// when the handler has read the body to its end (or at once for a
	// request without one), as it starts reading the connection in the
	// background to notice the client going away. A deadline left there
	// would cancel the request, ending an SSE stream or a long tool call.
	body, idle := 30*time.Second, 2*time.Minute
	switch {
	case s.cfg.bodyTimeout < 0:
		body = 0 // no limit
	case s.cfg.bodyTimeout > 0:
		body = s.cfg.bodyTimeout
	}
	switch {
	case s.cfg.idleTimeout < 0:
		idle = -1 // no limit; 0 would mean ReadTimeout's
	case s.cfg.idleTimeout > 0:
		idle = s.cfg.idleTimeout
	}
	more := s.cfg.connContexts
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       body,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
		// the connection whose socket tells the shedder how long each
		// request waited, whose address the spans name and which holds the
		// OAuth verifiers' memo (streamable.ConnContext); then the user's.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = streamable.ConnContext(ctx, c)
			for _, f := range more {
				ctx = f(ctx, c)
			}
			return ctx
		},
	}
}

// newMux routes /mcp to mcp and each pattern of public (paths anyone may
// read, such as the OAuth protected resource metadata) to its handler;
// everything else goes to admin, or is 404 when admin is nil.
func newMux(mcp http.Handler, public map[string]http.Handler, admin http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp)
	for pattern, h := range public {
		mux.Handle(pattern, h)
	}
	if admin != nil {
		mux.Handle("/", admin)
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

// adminExposedWarning is logged when the admin listener is not loopback.
const adminExposedWarning = "the admin listener is reachable beyond this host, with no authorization: " +
	"/metrics, and /debug/vigil, which lists session ids (an unauthenticated session's only credential) " +
	"and the ids of requests waiting for a client's answer; firewall it, or restrict it with a NetworkPolicy, " +
	"to the monitoring that scrapes it"

// checkExposure refuses to serve /mcp on a listen address other than
// loopback unless cfg allows it (WithAllowPublic), and then with the admin
// endpoints beside it (/metrics and /debug/vigil name sessions, subjects
// and tools) or, without a guard, with no Host names to accept (a web page
// could reach /mcp by DNS rebinding). cmd/vigil checks the same of its
// flags first, naming them.
func checkExposure(mcpAddr, adminAddr string, cfg config) error {
	switch {
	case loopback.ListenAddr(mcpAddr):
		return nil
	case !cfg.allowPublic:
		return fmt.Errorf("vigil: %s is not a loopback address, and /mcp would be open to anyone who can reach it: authorize requests (WithFront, or a proxy in front) and say so with WithAllowPublic", mcpAddr)
	case adminAddr == "":
		return fmt.Errorf("vigil: %s is not a loopback address, and /metrics, /healthz, /readyz and /debug/vigil would be served there beside /mcp: give them an admin address of their own", mcpAddr)
	case cfg.front == nil && len(cfg.allowedHosts) == 0:
		return fmt.Errorf("vigil: %s is not a loopback address and /mcp has no guard: name the Host names clients use (WithAllowedHosts), so that a web page cannot reach it by DNS rebinding", mcpAddr)
	}
	return nil
}
