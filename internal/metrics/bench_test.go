package metrics_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// BenchmarkRequestRecorded: what RecordMetrics records for a successful
// tools/call of a registered tool, traced (an exemplar at most every
// interval).
func BenchmarkRequestRecorded(b *testing.B) {
	m := metrics.New(vocabulary())
	tid := trace.TraceID{1, 2, 3}
	b.ReportAllocs()
	for b.Loop() {
		m.RequestStarted("tools/call")
		m.RequestFinished(metrics.RequestEnd{
			Method: "tools/call", Tool: "echo", ToolRegistered: true,
			Outcome: mcpconv.OutcomeOK, Duration: time.Millisecond, TraceID: tid,
		})
	}
}

// BenchmarkMessageCounted: what CountConn records for a request received
// and its response sent.
func BenchmarkMessageCounted(b *testing.B) {
	m := metrics.New(vocabulary())
	b.ReportAllocs()
	for b.Loop() {
		m.MessageReceived(mcpconv.TransportStreamableHTTP, mcpconv.KindRequest, 120)
		m.MessageSent(mcpconv.TransportStreamableHTTP, mcpconv.KindResponse, 200)
	}
}

// BenchmarkSessionRecorded: what the metrics observer records for a session
// that starts and ends, as every 2026-07-28 stateless request does.
func BenchmarkSessionRecorded(b *testing.B) {
	m := metrics.New(vocabulary())
	b.ReportAllocs()
	for b.Loop() {
		m.SessionStarted(mcpconv.TransportStreamableHTTP)
		m.SessionEnded(mcpconv.TransportStreamableHTTP, "transport_close", time.Millisecond)
	}
}
