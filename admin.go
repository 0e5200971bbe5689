package vigil

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/loopback"
)

// adminMux serves /metrics, /healthz, /readyz and, with a page,
// /debug/vigil (and / redirecting to it) and the trace views
// /debug/vigil/trace/{id}. The metrics and the page refuse non-loopback
// Host names on a loopback listener, as the MCP endpoint does, against DNS
// rebinding. The instrumentation's collector behind /metrics records the
// outcomes still batched first (see server.WithOutcomeBatches), so that it
// counts every request answered so far, and so does the page.
func (s *Service) adminMux() *http.ServeMux {
	guard := func(h http.Handler) http.Handler { return loopback.HostGuard(h, s.cfg.allowedHosts) }
	metrics := promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", guard(metrics))
	for pattern, h := range s.cfg.admin {
		mux.Handle(pattern, guard(h))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := s.readyNow(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
		if s.cfg.readyDetail != nil {
			_, _ = w.Write([]byte(s.cfg.readyDetail()))
		}
	})
	if s.Page == nil {
		return mux
	}
	opts := append([]debugpage.HandlerOption{
		debugpage.WithService(s.name, s.version),
		debugpage.WithReadiness(func() error { return s.readyNow(context.Background()) }),
		debugpage.WithTraceExporter(s.in.exporter),
		debugpage.WithMetricsLink("/metrics"),
	}, s.cfg.pageOpts...)
	page := debugpage.Handler(s.Server, s.Page, opts...)
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
	return mux
}

// notReady returns why the service is not ready, or nil: it is not serving
// yet or any more ([errDraining]), the WithReadiness check fails, or the
// readiness handshake has not been answered yet ([errNoHandshake]: see
// readyNow, which makes it).
func (s *Service) notReady() error {
	if !s.ready.Load() {
		return errDraining
	}
	if s.cfg.readiness != nil {
		if err := s.cfg.readiness(); err != nil {
			return err
		}
	}
	if !s.handshook.Load() {
		return errNoHandshake
	}
	return nil
}

// errDraining is why a service that is not serving, yet or any more, is
// not ready.
var errDraining = errors.New("draining")
