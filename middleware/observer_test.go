package middleware_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// TestObserverRejectReasons maps every rejection the core reports to its
// bounded reason label.
func TestObserverRejectReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   server.Code
		reason string
		want   string
	}{
		{name: "duplicate id", code: server.CodeInvalidRequest, reason: server.RejectDuplicateID, want: telemetry.RejectDuplicateID},
		{name: "in-flight limit", code: server.CodeServerBusy, reason: server.RejectTooManyInFlight, want: telemetry.RejectInFlightLimit},
		{name: "shutting down", code: server.CodeServerBusy, reason: server.RejectShuttingDown, want: telemetry.RejectShuttingDown},
		{name: "not initialized", code: server.CodeInvalidRequest, reason: server.RejectNotInitialized, want: telemetry.RejectLifecycle},
		{name: "initialized twice", code: server.CodeInvalidRequest, reason: server.RejectAlreadyInitialized, want: telemetry.RejectLifecycle},
		{name: "frame too large", code: server.CodeInvalidRequest, reason: server.RejectFrameTooLarge, want: telemetry.RejectFrameTooLarge},
		{name: "parse error", code: server.CodeParseError, reason: "invalid character", want: telemetry.RejectParseError},
		{name: "invalid request", code: server.CodeInvalidRequest, reason: "nested batch", want: telemetry.RejectInvalidRequest},
		{name: "invalid params", code: server.CodeInvalidParams, reason: "bad cancel", want: telemetry.RejectInvalidParams},
		{name: "unknown response", code: 0, reason: "ignored", want: telemetry.RejectUnknownResponse},
		{name: "protocol mismatch", code: server.CodeUnsupportedProtocolVersion, reason: "x", want: telemetry.RejectProtocolMismatch},
		{name: "anything else", code: -32099, reason: "x", want: telemetry.LabelOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := telemetry.NewMetrics()
			middleware.MetricsObserver(m).MessageRejected(context.Background(), nil, tt.code, tt.reason)
			assert.Equal(t, map[string]float64{rejected(tt.want): 1}, series(t, m))
		})
	}
}

// TestServerVocabularyIsKnown guards against drift between the server's
// causes and drop reasons and telemetry's label sets: none may fall into
// "other" (except the server's own "other" cause).
func TestServerVocabularyIsKnown(t *testing.T) {
	t.Parallel()
	m := telemetry.NewMetrics()
	want := map[string]float64{}
	for _, r := range server.CancelReasons() {
		m.RequestCancelled("ping", r.String())
		want[cancellations("ping", r.String())] = 1
	}
	for _, d := range server.DropReasons() {
		m.ResponseDropped("ping", string(d))
		want[drops("ping", string(d))] = 1
	}
	for _, c := range []server.DropReason{server.DropWriterClosed, server.DropPeerGone} {
		m.WriteFailed(telemetry.TransportStdio, string(c))
		want[`mcp_server_transport_write_errors_total{class="`+string(c)+`",transport="stdio"}`] = 1
	}
	assert.Equal(t, want, series(t, m))
}
