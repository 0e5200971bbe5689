package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// toolSlotWait is how long a tool call over -tool-concurrency waits for a
// slot before it is answered busy.
const toolSlotWait = time.Second

// newServer returns the MCP server with the standard middleware chain
// (tracing, metrics, logging, recovery, timeout, per-tool concurrency
// limit), traced calls to the client, the metrics and debug observers, and
// the demo tools.
func newServer(cfg config, logger *slog.Logger, in *instruments, events *eventLog) (*server.Server, error) {
	chain := middleware.Standard(middleware.StandardConfig{
		TracerProvider:   in.tracer,
		Propagator:       in.propagator,
		Metrics:          in.metrics,
		Logger:           logger,
		Timeout:          cfg.requestTimeout,
		ConcurrencyLimit: cfg.toolConcurrency,
		LimitWait:        toolSlotWait,
	})
	srv := server.New(
		server.WithImplementation("vigil", version),
		server.WithLogger(logger),
		server.WithMaxInFlight(cfg.maxInFlight),
		server.WithMiddleware(chain...),
		server.WithCallMiddleware(middleware.TracingCalls(
			middleware.WithTracerProvider(in.tracer), middleware.WithPropagators(in.propagator))),
		server.WithObserver(server.Observers(middleware.Observer(in.metrics), events)),
		server.WithRequestStateKey(cfg.stateKey), // shorter keys (none) keep a random one
	)
	if err := addDemoTools(srv); err != nil {
		return nil, err
	}
	in.metrics.SetToolNames(srv.ToolNames())
	return srv, nil
}

// serveStdio serves one session on standard input and output until the
// input ends or ctx is done; then it drains for the grace.
func serveStdio(ctx context.Context, stop func(), srv *server.Server, in *instruments, logger *slog.Logger, cfg config) error {
	conns := middleware.Instrument(srv, in.metrics, telemetry.TransportStdio)
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
