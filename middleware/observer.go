package middleware

import (
	"context"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// MetricsObserver returns a server.Observer that records in m what only
// the session core sees: sessions active and their duration by the cause
// that ended them, responses dropped by reason, failed writes by class,
// server-to-client requests failed at close, and messages rejected before
// a handler by reason. The transport label comes from the Serve context
// (see [ContextWithTransport]). Cancellations and request outcomes are
// recorded by [RecordMetrics], which sees them all; use both
// ([NewInstrumentation] does). Combine it with other observers through
// server.Observers. With a nil m it does nothing. It is safe for
// concurrent use.
func MetricsObserver(m *telemetry.Metrics) server.Observer {
	if m == nil {
		return server.NopObserver{}
	}
	return metricsObserver{m: m}
}

type metricsObserver struct {
	server.NopObserver
	m *telemetry.Metrics
}

func (o metricsObserver) SessionStarted(ctx context.Context, _ *server.Session) {
	o.m.SessionStarted(TransportFromContext(ctx))
}

func (o metricsObserver) SessionEnded(ctx context.Context, s *server.Session, cause error) {
	o.m.SessionEnded(TransportFromContext(ctx), server.ReasonOfCause(cause).String(), time.Since(s.Started()))
}

func (o metricsObserver) ResponseDropped(_ context.Context, req *server.Request, reason server.DropReason) {
	o.m.ResponseDropped(req.Method, string(reason))
}

func (o metricsObserver) WriteFailed(ctx context.Context, _ *server.Session, class server.DropReason, _ error) {
	o.m.WriteFailed(TransportFromContext(ctx), string(class))
}

func (o metricsObserver) OutgoingFailed(_ context.Context, _ *server.Session, method string, _ error) {
	o.m.ClientRequestFailed(method)
}

func (o metricsObserver) MessageRejected(_ context.Context, _ *server.Session, code server.Code, reason string) {
	o.m.MessageRejected(rejectReason(code, reason))
}

// rejectReason maps a rejection to the bounded reason label.
func rejectReason(code server.Code, reason string) string {
	switch reason {
	case server.RejectDuplicateID:
		return telemetry.RejectDuplicateID
	case server.RejectTooManyInFlight:
		return telemetry.RejectInFlightLimit
	case server.RejectShuttingDown:
		return telemetry.RejectShuttingDown
	case server.RejectNotInitialized, server.RejectAlreadyInitialized:
		return telemetry.RejectLifecycle
	case server.RejectFrameTooLarge:
		return telemetry.RejectFrameTooLarge
	}
	switch code {
	case 0:
		return telemetry.RejectUnknownResponse
	case server.CodeParseError:
		return telemetry.RejectParseError
	case server.CodeInvalidRequest:
		return telemetry.RejectInvalidRequest
	case server.CodeInvalidParams:
		return telemetry.RejectInvalidParams
	case server.CodeHeaderMismatch, server.CodeMissingRequiredClientCapability, server.CodeUnsupportedProtocolVersion:
		return telemetry.RejectProtocolMismatch
	}
	return telemetry.LabelOther
}
