package vigil

import (
	"net/http"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Endpoint returns the Streamable HTTP endpoint serving the Server at
// /mcp, built at the first call, once the tools are registered: their
// metric series are created then. Call it only when New succeeded (Err).
func (s *Service) Endpoint() *streamable.Endpoint {
	s.handlers()
	return s.endpoint
}

// AdminHandler returns the handler of /metrics, /healthz, /readyz and,
// with a page, /debug/vigil (and / redirecting to it). Keep it off a
// public listener: the page names sessions and subjects. Call it only when
// New succeeded (Err).
func (s *Service) AdminHandler() http.Handler {
	s.handlers()
	return s.admin
}

// handlers builds the endpoint and the admin handler once.
func (s *Service) handlers() { _, _ = s.buildWith(nil) }

// buildWith builds the endpoint and the admin handler once: the endpoint
// made by front when it is not nil (ListenAndServe's [Front]), else by
// streamable.New. It reports whether this call built them, and the front's
// error.
func (s *Service) buildWith(front func(srv streamable.Server, opts ...streamable.Option) (*streamable.Endpoint, error)) (built bool, err error) {
	s.build.Do(func() {
		built = true
		cuts := metrics.NewStreamsCut()
		if err := s.in.register(cuts); err != nil {
			s.Logger.Warn("the streams cut are not counted", "error", err)
		}
		opts := []streamable.Option{
			streamable.WithLogger(s.Logger),
			streamable.WithRejectHook(s.Instrumentation.MessageRejected),
			streamable.WithStreamCutHook(func(c streamable.StreamCut) { cuts.Cut(c.String()) }),
		}
		if len(s.cfg.allowedHosts) > 0 {
			opts = append(opts, streamable.WithAllowedHosts(s.cfg.allowedHosts...))
		}
		opts = append(opts, s.cfg.endpointOpts...)
		srv := s.Instrumentation.ConnServer(s.Server, telemetry.TransportStreamableHTTP)
		if front != nil {
			if s.endpoint, err = front(srv, opts...); err != nil {
				return
			}
		} else {
			s.endpoint = streamable.New(srv, opts...)
		}
		s.ready.Store(true)
		s.admin = s.adminMux()
	})
	return built, err
}
