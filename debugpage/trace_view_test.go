package debugpage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/receiving"
	"github.com/vigil-mcp/vigil/server"
)

// traceViewRig is the page, mounted at /debug/vigil, of a server whose
// spans go to the Recorder's ring, as vigil's do: each span handed to it
// as it ends.
type traceViewRig struct {
	mux    http.Handler
	tracer trace.Tracer
	ring   *spanRing
}

func newTraceViewRig(t *testing.T) *traceViewRig {
	t.Helper()
	rec := NewRecorder(WithTraceRing(10, 0))
	tp, shutdown := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	srv := server.New() // whose names are the ring's keys: confirm_action among them
	require.NoError(t, srv.AddTool(server.Tool{Name: "confirm_action"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("confirmed"), nil
	}))
	return &traceViewRig{mux: mountPage(Handler(srv, rec)), tracer: tp.Tracer("trace-view-test"), ring: rec.traceRing()}
}

// get serves a GET of path from a loopback Host.
func (rig *traceViewRig) get(path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	rig.mux.ServeHTTP(rec, req)
	return rec
}

// hostileCall records a tools/call whose span holds hostile values, with
// an elicitation (a CLIENT child) that the client cancelled.
func (rig *traceViewRig) hostileCall() trace.TraceID {
	ctx, root := rig.tracer.Start(context.Background(), "tools/call confirm_action", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "confirm_action"),
			attribute.String("vigil.test.argument", `<script>alert("x")</script>`)))
	_, call := rig.tracer.Start(ctx, "elicitation/create", trace.WithSpanKind(trace.SpanKindClient))
	call.SetAttributes(attribute.String("vigil.cancel.cause", "client_cancel"))
	call.AddEvent("cancelled", trace.WithAttributes(attribute.String("vigil.cancel.cause", "client_cancel")))
	call.End()
	root.SetAttributes(attribute.String("vigil.cancel.cause", "client_cancel"))
	root.AddEvent("cancelled", trace.WithAttributes(attribute.String("vigil.cancel.cause", "</td><img src=x onerror=alert(1)>")))
	root.End()
	return root.SpanContext().TraceID()
}

// The trace view shows the span tree (the elicitation as the tool call's
// child), escapes hostile values, names the cancellation cause, and sets
// the strict Content-Security-Policy that allows its one style.
func TestTraceViewPage(t *testing.T) {
	rig := newTraceViewRig(t)
	id := rig.hostileCall()
	rec := rig.get("/debug/vigil/trace/" + id.String())
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	body := rec.Body.String()
	assert.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))

	csp := rec.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "img-src 'self' data:")
	assert.NotContains(t, csp, "unsafe-inline")
	assert.NotContains(t, csp, "script-src")
	_, css, ok := strings.Cut(body, "<style>")
	require.True(t, ok)
	css, _, ok = strings.Cut(css, "</style>")
	require.True(t, ok)
	sum := sha256.Sum256([]byte(css))
	assert.Contains(t, csp, "style-src 'self' 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", "the page's style is allowed by hash")
	assert.Equal(t, 1, strings.Count(body, "<style"), "one style block")
	assert.NotContains(t, body, "style=", "no inline style attribute: the CSP would block it")
	assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))

	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, "<img")
	assert.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	assert.Contains(t, body, "&lt;/td&gt;&lt;img src=x onerror=alert(1)&gt;")

	assert.Contains(t, body, `Cancelled · cause <span class="cause">client_cancel</span>`)
	serverRow := strings.Index(body, "<td><b>tools/call confirm_action</b>")
	clientRow := strings.Index(body, `<td><span class="ind"></span><b>elicitation/create</b> <span class="muted">client</span>`)
	require.NotEqual(t, -1, serverRow, body)
	require.NotEqual(t, -1, clientRow, "the elicitation, indented once")
	assert.Less(t, serverRow, clientRow, "the parent first")
	assert.Equal(t, 2, strings.Count(body, "<svg class=\"bar\""), "one timing bar per span")
	assert.Contains(t, body, "Trace ring: 1 traces, 2 spans, 1 method/tool keys; about ")
	assert.Contains(t, body, " of memory, at most "+formatBytes(rig.ring.memory().Bound)+".")
}

// ?format=json gives the same trace as JSON: the tree in order, with depths
// and parents, and the outcome.
func TestTraceViewJSON(t *testing.T) {
	rig := newTraceViewRig(t)
	id := rig.hostileCall()
	rec := rig.get("/debug/vigil/trace/" + id.String() + "?format=json")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.NotEmpty(t, rec.Header().Get("Content-Security-Policy"))
	var v traceView
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
	assert.Equal(t, id.String(), v.TraceID)
	assert.Equal(t, "tools/call confirm_action", v.Key)
	assert.Equal(t, "cancelled", v.Outcome)
	assert.Equal(t, "client_cancel", v.Detail)
	assert.True(t, v.Complete)
	assert.Contains(t, v.Classes, classCancelled)
	require.Len(t, v.Spans, 2)
	assert.Equal(t, []string{"tools/call confirm_action", "elicitation/create"}, []string{v.Spans[0].Name, v.Spans[1].Name})
	assert.Equal(t, []int{0, 1}, []int{v.Spans[0].Depth, v.Spans[1].Depth})
	assert.Equal(t, []string{"server", "client"}, []string{v.Spans[0].Kind, v.Spans[1].Kind})
	assert.Equal(t, v.Spans[0].SpanID, v.Spans[1].ParentSpanID)
	assert.Equal(t, `<script>alert("x")</script>`, v.Spans[0].Attributes["vigil.test.argument"])
}

// Unknown and malformed ids are 404; so is every id when spans do not go
// to the ring. (cmd/vigil's tests check that its host guard refuses a
// foreign Host here too, as on /debug/vigil.)
func TestTraceViewNotFound(t *testing.T) {
	rig := newTraceViewRig(t)
	_, s := rig.tracer.Start(context.Background(), "other")
	s.SetStatus(codes.Error, "x")
	s.End()
	for _, path := range []string{
		"/debug/vigil/trace/0123456789abcdef0123456789abcdef",
		"/debug/vigil/trace/00000000000000000000000000000000",
		"/debug/vigil/trace/nothex",
		"/debug/vigil/trace/0123456789abcdef0123456789abcdef?format=json",
	} {
		rec := rig.get(path)
		assert.Equal(t, http.StatusNotFound, rec.Code, path)
		assert.NotEmpty(t, rec.Header().Get("Content-Security-Policy"), path)
	}
	assert.Equal(t, http.StatusOK, rig.get("/debug/vigil/trace/"+s.SpanContext().TraceID().String()).Code)

	mux := mountPage(Handler(server.New(), NewRecorder())) // its SpanExporter never taken: no ring
	req := httptest.NewRequest(http.MethodGet, "/debug/vigil/trace/"+s.SpanContext().TraceID().String(), nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

// The trace view lists the other kept traces of its key, linked.
func TestTraceViewLinksSiblings(t *testing.T) {
	rig := newTraceViewRig(t)
	first := rig.hostileCall()
	second := rig.hostileCall()
	body := rig.get("/debug/vigil/trace/" + second.String()).Body.String()
	assert.Contains(t, body, `<a href="/debug/vigil/trace/`+first.String()+`">`)
	assert.NotContains(t, body, `<a href="/debug/vigil/trace/`+second.String()+`">`)
}
