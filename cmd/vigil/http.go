package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// serveHTTP serves MCP and the observability endpoints on cfg.httpAddr
// until ctx is done, then shuts down: /readyz turns 503, the MCP server
// drains for the grace, the MCP endpoint closes, and the HTTP server stops.
func serveHTTP(ctx context.Context, stop func(), srv *server.Server, inst *middleware.Instrumentation, in *instruments, events *eventLog, logger *slog.Logger, cfg config) error {
	opts := []streamable.Option{
		streamable.WithLogger(logger),
		streamable.WithMaxBodyBytes(cfg.maxBody),
		streamable.WithMaxSessions(cfg.maxSessions),
		streamable.WithMaxInFlight(cfg.maxInFlight),
		streamable.WithIdleTimeout(cfg.idleTimeout),
	}
	if len(cfg.allowedHosts) > 0 {
		opts = append(opts, streamable.WithAllowedHosts(cfg.allowedHosts...))
	}
	opts = append(opts, streamable.WithRejectHook(func(r protocol.RejectReason) { inst.Metrics().MessageRejected(r.String()) }))
	endpoint := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP), opts...)

	var ready atomic.Bool
	var dbg *debugPage
	if cfg.debug {
		dbg = &debugPage{srv: srv, in: in, events: events, ready: &ready, started: time.Now()}
	}
	mux := newMux(endpoint, in, &ready, dbg, cfg.allowedHosts)

	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	base := "http://" + ln.Addr().String()
	logger.Info("serving MCP", "url", base+"/mcp")
	if dbg != nil {
		logger.Info("observability", "metrics", base+"/metrics", "debug", base+"/debug/vigil")
	} else {
		logger.Info("observability", "metrics", base+"/metrics")
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	ready.Store(true)

	select {
	case err := <-served:
		_ = endpoint.Close()
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	ready.Store(false)
	drain(srv, logger, cfg.grace)
	_ = endpoint.Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("HTTP connections still open at exit", "error", err)
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// newMux routes /mcp to the MCP endpoint and serves /metrics, /healthz,
// /readyz and, when dbg is not nil, /debug/vigil. The observability
// endpoints refuse non-loopback Host names on a loopback listener, as the
// MCP endpoint does, against DNS rebinding.
func newMux(endpoint http.Handler, in *instruments, ready *atomic.Bool, dbg *debugPage, allowedHosts []string) *http.ServeMux {
	guard := func(h http.Handler) http.Handler { return hostGuard(h, allowedHosts) }
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	mux.Handle("GET /metrics", guard(promhttp.HandlerFor(in.registry, promhttp.HandlerOpts{EnableOpenMetrics: true})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("draining\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if dbg != nil {
		mux.Handle("GET /debug/vigil", guard(dbg))
		mux.Handle("GET /{$}", guard(http.RedirectHandler("/debug/vigil", http.StatusFound)))
	}
	return mux
}

// hostGuard refuses, with 403, a request that arrived on a loopback address
// with a Host that is neither a loopback name nor one of allowed: a web
// page that rebinds its DNS name to 127.0.0.1 must not read the debug page
// or the metrics.
func hostGuard(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onLoopback(r) && !hostAllowed(r.Host, allowed) {
			http.Error(w, "forbidden Host", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

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
