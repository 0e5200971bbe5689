package middleware

import (
	"context"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
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

func (o metricsObserver) ResponseDropped(_ context.Context, req *server.Request, reason protocol.DropReason) {
	o.m.ResponseDropped(req.Method, reason.String())
}

func (o metricsObserver) WriteFailed(ctx context.Context, _ *server.Session, class protocol.DropReason, _ error) {
	o.m.WriteFailed(TransportFromContext(ctx), class.String())
}

func (o metricsObserver) OutgoingFailed(_ context.Context, _ *server.Session, method string, _ error) {
	o.m.ClientRequestFailed(method)
}

func (o metricsObserver) MessageRejected(_ context.Context, _ *server.Session, _ protocol.Code, reason protocol.RejectReason) {
	o.m.MessageRejected(reason.String())
}
