package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// toolSlotWait is how long a tool call over -tool-concurrency waits for a
// slot before it is answered busy.
const toolSlotWait = time.Second

// newService returns the service (vigil.New) with the demo tools, as cfg
// says: the middleware chain (tracing, metrics, logging, recovery, rate
// limits), the server's limits (timeout, per-tool concurrency limit,
// quotas, ...), the endpoint's, and the hooks of page (the debug page's
// recorder; nil: none). Its metrics are registered with registry. audit,
// when not nil, gets the audit log's lines (a non-blocking writer). opts
// come last (tests give their own tracer provider).
func newService(cfg config, logger *slog.Logger, registry *prometheus.Registry, page *debugpage.Recorder, audit io.Writer, opts ...vigil.Option) (*vigil.Service, error) {
	srvOpts, err := serverOptions(cfg, quotaOptions(cfg), registry, logger)
	if err != nil {
		return nil, err
	}
	// The service, built below, is what the endpoint's hooks count with:
	// they run once it serves.
	var svc *vigil.Service
	counts := func() *middleware.Instrumentation { return svc.Instrumentation }
	pageOpt := vigil.WithPage(nil)
	if page != nil {
		pageOpt = vigil.WithPage(page)
	}
	svc = vigil.New("vigil", buildVersion(), append([]vigil.Option{
		vigil.WithLogger(logger),
		vigil.WithRegistry(registry),
		pageOpt,
		vigil.WithInstrumentation(instrumentationOptions(cfg, audit)...),
		vigil.WithServerOptions(srvOpts...),
		vigil.WithEndpointOptions(endpointOptions(cfg, counts)...),
		vigil.WithAllowedHosts(cfg.allowedHosts...),
		vigil.WithShutdownGrace(drainGrace(cfg)),
		// OTEL_EXPORTER_OTLP_PROTOCOL=grpc works here: the command links gRPC.
		vigil.WithOTLPGRPC(otlptracegrpc.New, otlpmetricgrpc.New),
	}, opts...)...)
	if err := svc.Err(); err != nil {
		return nil, err
	}
	if len(cfg.upstreams) == 0 { // else run mounts the upstreams' tools, and checks them
		if err := addDemoTools(svc.Server, demoToolScopes(cfg)); err != nil {
			return nil, err
		}
		if err := checkToolNames(cfg, svc.Server.ToolNames()); err != nil {
			return nil, err
		}
	}
	if cfg.skillsDir != "" {
		paths, err := svc.Server.AddSkills(os.DirFS(cfg.skillsDir))
		if err != nil {
			return nil, fmt.Errorf("-skills %s: %w", cfg.skillsDir, err)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("-skills %s: no SKILL.md in it", cfg.skillsDir)
		}
		svc.Logger.Info("serving skills", "dir", cfg.skillsDir, "skills", paths)
	}
	return svc, nil
}

// instrumentationOptions returns the middleware chain's options of cfg:
// the audit log (audit), what traces trust and hold, the upstreams' names
// and the rate limits.
func instrumentationOptions(cfg config, audit io.Writer) []middleware.InstrumentationOption {
	instOpts := []middleware.InstrumentationOption{
		middleware.WithAuditLog(audit),
	}
	if cfg.untrustedTraceContext() {
		instOpts = append(instOpts, middleware.WithUntrustedTraceContext())
	}
	if cfg.traceContent {
		instOpts = append(instOpts, middleware.WithContentCapture(nil))
	}
	if len(cfg.upstreams) > 0 { // the request duration names a forwarded tool's upstream
		names := make([]string, 0, len(cfg.upstreams))
		for _, u := range cfg.upstreams {
			names = append(names, u.Name)
		}
		instOpts = append(instOpts, middleware.WithMetricsConfig(telemetry.MetricsConfig{Upstreams: names}))
	}
	instOpts = append(instOpts, rateLimitOptions(cfg)...)
	return instOpts
}

// serverOptions returns the server's options of cfg: its limits (the
// timeout, the per-tool concurrency limit, the result bound, ...), the
// quotas it keeps (quota), the shared mode's, and with authorization over
// HTTP the tool access and the policies of -auth-policy (counted in
// registry, logging to logger).
func serverOptions(cfg config, quota []server.Option, registry prometheus.Registerer, logger *slog.Logger) ([]server.Option, error) {
	srvOpts := []server.Option{
		server.WithTimeout(cfg.requestTimeout),
		server.WithConcurrencyLimit(cfg.toolConcurrency),
		server.WithLimitWait(toolSlotWait),
		server.WithMaxInFlightPerSession(cfg.maxInFlight),
		server.WithMaxResultBytes(cfg.maxResultBytes),
		server.WithListChangedDelay(cfg.listChangedDelay),
		server.WithRequestStateKey(cfg.stateKey), // shorter keys (none) keep a random one
	}
	srvOpts = append(srvOpts, quota...)
	if cfg.shared != nil {
		srvOpts = append(srvOpts, cfg.shared.ServerOptions()...)
	}
	if cfg.authEnabled() && !cfg.stdio {
		// tools/list shows a principal only the tools its scopes allow, and
		// a task answers only its creator. (The demo tools do not read the caller, so
		// auth.Middleware, which puts it in handlers' contexts, is left
		// out: it would cost a context per request for nobody.) Both fail
		// closed without a verified principal: not for stdio, whose client
		// holds no token (the guard is HTTP's).
		access := auth.ToolAccess
		if cfg.authPolicy != nil {
			set, err := newPolicies(cfg, registry, logger)
			if err != nil {
				return nil, err
			}
			srvOpts = append(srvOpts, server.WithToolPolicy(set.ToolPolicy))
			access = func(req *server.Request, t *server.Tool) bool {
				return auth.ToolAccess(req, t) && set.ToolAccess(req, t)
			}
		}
		srvOpts = append(srvOpts, server.WithToolAccess(access), server.WithCallerKey(auth.CallerKey))
	}
	return srvOpts, nil
}

// endpointOptions returns the MCP endpoint's options of cfg: its bounds,
// timeouts and quotas (whose refusals counts' metrics count), and the
// shared mode's; with authorization, the resource server's Endpoint binds
// each session to its principal.
func endpointOptions(cfg config, counts func() *middleware.Instrumentation) []streamable.Option {
	endpointOpts := []streamable.Option{
		streamable.WithMaxBodyBytes(cfg.maxBody),
		streamable.WithMaxSessions(cfg.maxSessions),
		streamable.WithMaxRequestStreamsPerSession(cfg.maxInFlight),
		streamable.WithIdleTimeout(cfg.idleTimeout),
		endpointQuotas(cfg, counts),
		streamable.WithWriteTimeout(cfg.sseWriteTimeout),
		streamable.WithMaxResumptions(cfg.maxResumptions),
		streamable.WithInitTimeout(cfg.initTimeout),
		streamable.WithMaxStateBytes(cfg.maxSessionState),
	}
	if cfg.shared != nil {
		endpointOpts = append(endpointOpts, cfg.shared.Options()...) // sessions shared with the other replicas
	}
	return endpointOpts
}

// checkToolNames checks that every tool the flags name
// (-tool-rate-limits, -auth-policy) is one of names (sorted).
func checkToolNames(cfg config, names []string) error {
	if err := checkToolRates(names, cfg.toolRateLimits); err != nil {
		return err
	}
	return checkPolicyTools(cfg, names)
}
