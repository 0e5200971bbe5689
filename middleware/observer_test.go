package middleware_test

import (
	"context"
	"testing"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/telemetry"
)

// TestObserverRejectReasons counts every reason the core reports under its
// label.
func TestObserverRejectReasons(t *testing.T) {
	t.Parallel()
	for _, reason := range protocol.RejectReasons() {
		t.Run(reason.String(), func(t *testing.T) {
			t.Parallel()
			m := metrics.New(middleware.MetricsVocabulary())
			middleware.MetricsObserver(m).MessageRejected(context.Background(), nil, protocol.CodeInvalidRequest, reason)
			assert.Equal(t, map[string]float64{rejected(reason.String()): 1}, series(t, m))
		})
	}
	m := metrics.New(middleware.MetricsVocabulary())
	middleware.MetricsObserver(m).MessageRejected(context.Background(), nil, 0, protocol.RejectReason(250))
	assert.Equal(t, map[string]float64{rejected(mcpconv.LabelOther): 1}, series(t, m), "an unknown reason is other")
}

// TestServerVocabularyIsKnown guards against drift between the server's
// causes and drop reasons and telemetry's label sets: none may fall into
// "other" (except the server's own "other" cause).
func TestServerVocabularyIsKnown(t *testing.T) {
	t.Parallel()
	m := metrics.New(middleware.MetricsVocabulary())
	want := map[string]float64{}
	for _, r := range protocol.CancelReasons() {
		m.RequestCancelled("ping", r.String())
		want[cancellations("ping", r.String())] = 1
	}
	for _, d := range protocol.DropReasons() {
		m.ResponseDropped("ping", d.String())
		want[drops("ping", d.String())] = 1
	}
	for _, c := range []protocol.DropReason{protocol.DropWriterClosed, protocol.DropPeerGone} {
		m.WriteFailed(telemetry.TransportStdio, c.String())
		want[`mcp_server_transport_write_errors_total{class="`+c.String()+`",transport="stdio"}`] = 1
	}
	assert.Equal(t, want, series(t, m))
}
