package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// toolSlotWait is how long a tool call over -tool-concurrency waits for a
// slot before it is answered busy.
const toolSlotWait = time.Second

// outcomeBatch is how many requests' outcomes the server records at a
// time (server.WithOutcomeBatches).
const outcomeBatch = 32

// newServer returns the MCP server with the demo tools, and its
// instrumentation: the middleware chain (tracing, metrics, logging,
// recovery, timeout, per-tool concurrency limit), traced calls to the
// client, and the metrics observer and the hooks of page (the debug page's
// recorder; nil: none). The metrics are registered with in.registry; hand
// each transport inst.ConnServer(srv, ...). audit, when not nil, gets the
// audit log's lines (a non-blocking writer). extra are more server options
// (a test's observer), given last.
func newServer(cfg config, logger *slog.Logger, in *instruments, page *debugpage.Recorder, audit io.Writer, extra ...server.Option) (*server.Server, *middleware.Instrumentation, error) {
	quotaMW, quotaSrv := quotaOptions(cfg)
	instOpts := []middleware.InstrumentationOption{
		middleware.WithTracerProvider(in.tracer),
		middleware.WithPropagators(in.propagator),
		middleware.WithRegisterer(in.registry),
		middleware.WithLogger(logger),
		middleware.WithTimeout(cfg.requestTimeout),
		middleware.WithConcurrencyLimit(cfg.toolConcurrency),
		middleware.WithLimitWait(toolSlotWait),
		middleware.WithAuditLog(audit),
	}
	if cfg.untrustedTraceContext() {
		instOpts = append(instOpts, middleware.WithUntrustedTraceContext())
	}
	if cfg.traceContent {
		instOpts = append(instOpts, middleware.WithContentCapture(nil))
	}
	instOpts = append(instOpts, quotaMW...)
	inst, err := middleware.NewInstrumentation(append(instOpts, rateLimitOptions(cfg)...)...)
	if err != nil {
		return nil, nil, err
	}
	// NewInstrumentation registered the MCP collector with in.registry;
	// OTLP pushes it too.
	if err := in.pushed.Register(inst.Metrics()); err != nil {
		return nil, nil, err
	}
	opts := inst.ServerOptions()
	opts = append(opts,
		server.WithImplementation("vigil", version),
		server.WithLogger(logger),
		server.WithMaxInFlightPerSession(cfg.maxInFlight),
		server.WithMaxResultBytes(cfg.maxResultBytes),
		server.WithListChangedDelay(cfg.listChangedDelay),
		server.WithRequestStateKey(cfg.stateKey), // shorter keys (none) keep a random one
		// Each request's span end, metrics, log line and debug counts run
		// in batches, off its way out; /metrics and the debug page flush
		// them first.
		server.WithOutcomeBatches(outcomeBatch, 0),
	)
	if page != nil {
		// The debug page's counts and events: it sees every request,
		// those the chain refuses too.
		opts = append(opts, server.WithObserver(page.Observer()))
	}
	opts = append(opts, quotaSrv...)
	if cfg.shared != nil {
		opts = append(opts, cfg.shared.ServerOptions()...)
	}
	if cfg.authEnabled() && !cfg.stdio {
		// tools/list shows a principal only the tools its scopes allow, a
		// task answers only its creator, and the debug page learns who
		// opened each session. (The demo tools do not read the caller, so
		// auth.Middleware, which puts it in handlers' contexts, is left
		// out: it would cost a context per request for nobody.) Both fail
		// closed without a verified principal: not for stdio, whose client
		// holds no token (the guard is HTTP's).
		opts = append(opts, server.WithToolAccess(auth.ToolAccess), server.WithCallerKey(auth.CallerKey))
		if page != nil {
			opts = append(opts, server.WithMiddleware(page.Middleware()))
		}
	}
	srv := server.New(append(opts, extra...)...)
	if err := addDemoTools(srv, cfg.authToolScopes); err != nil {
		return nil, nil, err
	}
	if err := checkToolRates(srv.ToolNames(), cfg.toolRateLimits); err != nil {
		return nil, nil, err
	}
	if cfg.skillsDir != "" {
		paths, err := srv.AddSkills(os.DirFS(cfg.skillsDir))
		if err != nil {
			return nil, nil, fmt.Errorf("-skills %s: %w", cfg.skillsDir, err)
		}
		if len(paths) == 0 {
			return nil, nil, fmt.Errorf("-skills %s: no SKILL.md in it", cfg.skillsDir)
		}
		logger.Info("serving skills", "dir", cfg.skillsDir, "skills", paths)
	}
	return srv, inst, nil
}

// serveStdio serves one session on standard input and output until the
// input ends or ctx is done; then it drains for the grace.
func serveStdio(ctx context.Context, stop func(), srv *server.Server, inst *middleware.Instrumentation, logger *slog.Logger, cfg config) error {
	if cfg.authEnabled() {
		logger.Warn("-auth-issuer guards HTTP requests only: the stdio client, the process that started vigil, is asked for no token and may use every tool")
	}
	conns := inst.ConnServer(srv, telemetry.TransportStdio)
	served := make(chan error, 1)
	go func() { served <- conns.Serve(context.Background(), stdio.Std(stdio.WithMaxFrameSize(cfg.maxFrame))) }()
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	drain(srv, logger, cfg.grace)
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-time.After(time.Second):
		return errors.New("a handler ignored cancellation; exiting anyway")
	}
}

// drain stops the server gracefully: in-flight requests may run for up to
// grace, then the rest are cancelled.
func drain(srv *server.Server, logger *slog.Logger, grace time.Duration) {
	logger.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown grace expired; in-flight requests were cancelled", "error", err)
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, server.ErrServerClosed) {
		return nil
	}
	return err
}
