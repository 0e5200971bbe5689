package middleware

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// StandardConfig selects the middleware [Standard] returns. A zero field
// leaves its middleware out, except Recover, which is always in.
type StandardConfig struct {
	// TracerProvider, when not nil, adds [Tracing] with it and Propagator
	// (nil Propagator: the global one, see [WithPropagators]). Give
	// [TracingCalls] the same two, with server.WithCallMiddleware.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Metrics, when not nil, adds [Metrics] with it. Add [Observer] with the
	// same collector through server.WithObserver.
	Metrics *telemetry.Metrics
	// Logger, when not nil, adds [Logging] with LogLevel ([DefaultLogLevel]
	// when nil); [Recover] logs panics to it (nil: discards them).
	Logger   *slog.Logger
	LogLevel func(*server.Request, server.Outcome) slog.Level
	// Timeout and TimeoutFor, when either is set, add [Timeout](Timeout,
	// [TimeoutFor](TimeoutFor)).
	Timeout    time.Duration
	TimeoutFor func(*server.Request) time.Duration
	// ConcurrencyLimit and LimitFor, when either is set, add
	// [ConcurrencyLimit](ConcurrencyLimit, [LimitFor](LimitFor),
	// [LimitWait](LimitWait)).
	ConcurrencyLimit int
	LimitFor         func(tool string) int
	LimitWait        time.Duration
}

// Standard returns the middleware cfg selects, in the documented order,
// for server.WithMiddleware (append the application's own after them):
//
//  1. [Tracing], outermost: the span covers everything below, and its
//     context (trace id) reaches the rest;
//  2. [Metrics]: inside Tracing so that the trace id becomes the exemplar;
//     outside everything that may fail a request, so that every request is
//     counted, a panic, a timeout or a rejection as an error;
//  3. [Logging]: inside Tracing, for the trace ids of the record; outside
//     Recover, Timeout and ConcurrencyLimit, which may answer without the
//     handler, so that every request gets its record;
//  4. [Recover]: below Tracing, Metrics and Logging, so that they see a
//     panic as a -32603 error return, and above the rest, which it covers;
//  5. [Timeout]: its time limit covers the wait for a slot and the handler;
//  6. [ConcurrencyLimit]: innermost, so that a call waiting for a slot
//     ([LimitWait]) runs out of time like a slow handler.
//
// It returns a new slice with no nil entries on every call.
func Standard(cfg StandardConfig) []server.Middleware {
	var mw []server.Middleware
	if cfg.TracerProvider != nil {
		mw = append(mw, Tracing(WithTracerProvider(cfg.TracerProvider), WithPropagators(cfg.Propagator)))
	}
	if cfg.Metrics != nil {
		mw = append(mw, Metrics(cfg.Metrics))
	}
	if cfg.Logger != nil {
		mw = append(mw, Logging(cfg.Logger, LogLevelFunc(cfg.LogLevel)))
	}
	mw = append(mw, Recover(cfg.Logger))
	if cfg.Timeout > 0 || cfg.TimeoutFor != nil {
		mw = append(mw, Timeout(cfg.Timeout, TimeoutFor(cfg.TimeoutFor)))
	}
	if cfg.ConcurrencyLimit > 0 || cfg.LimitFor != nil {
		mw = append(mw, ConcurrencyLimit(cfg.ConcurrencyLimit, LimitFor(cfg.LimitFor), LimitWait(cfg.LimitWait)))
	}
	return mw
}
