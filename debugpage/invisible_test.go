package debugpage

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// The bidirectional controls and zero-width characters of a client's tool
// name or span attribute are shown escaped, as the visible text \u202e, on
// the page and the trace view (HTML escaping leaves them raw, and they
// reorder what the operator reads), and as \u202e escapes in their JSON
// forms, which decode to the same strings (issue 56 N10).
func TestDebugPageEscapesInvisible(t *testing.T) {
	hostile := "ech\u202eo\u2066x\u200f"
	rig := newTraceViewRig(t)
	_, span := rig.tracer.Start(context.Background(), "tools/call "+hostile, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", hostile)))
	span.End()
	id := span.SpanContext().TraceID().String()
	rec := NewRecorder()
	rec.events.stats.record("tools/call", hostile, true, slotOK, time.Millisecond, time.Now())
	page := mountPage(Handler(server.New(), rec, WithTraceExporter("none")))
	get := func(h http.Handler, path string) string {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "localhost"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, "%s: %s", path, w.Body.String())
		return w.Body.String()
	}
	for _, c := range []struct {
		h    http.Handler
		path string
	}{{page, "/debug/vigil?refresh=0"}, {page, "/debug/vigil?format=json"}, {rig.mux, "/debug/vigil/trace/" + id}, {rig.mux, "/debug/vigil/trace/" + id + "?format=json"}} {
		body := get(c.h, c.path)
		for _, r := range []string{"\u202e", "\u2066", "\u200f"} {
			assert.NotContains(t, body, r, "%+q raw in %s", r, c.path)
		}
		assert.Contains(t, body, `ech\u202eo\u2066x\u200f`, c.path)
	}
	var snap debugSnapshot
	require.NoError(t, json.Unmarshal([]byte(get(page, "/debug/vigil?format=json")), &snap))
	require.Len(t, snap.Stats, 1)
	assert.Equal(t, "tools/call "+hostile, snap.Stats[0].Key, "the JSON form decodes to the name as sent")
}
