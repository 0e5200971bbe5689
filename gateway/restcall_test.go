package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// keyedDescription is GET /pets/{petId} with a query key and limit.
const keyedDescription = `{"openapi":"3.1.0","info":{"title":"pets","version":"1"},
"paths":{"/pets/{petId}":{"get":{"operationId":"getPet",
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}},
		{"name":"api_key","in":"query","schema":{"type":"string"}},
		{"name":"limit","in":"query","schema":{"type":"integer"}}],
	"responses":{"200":{"description":"ok"}}}}}}`

// restSeen is what a test API saw of a request.
type restSeen struct {
	path, authorization, traceparent string
}

// restAPIServer serves /v1/pets/{id}: 500 for "broken", 401 while
// accept(authorization) is false, else the pet; each request goes to
// seen.
func restAPIServer(t *testing.T, seen chan<- restSeen, accept func(authorization string) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- restSeen{r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Traceparent")}
		id, _ := strings.CutPrefix(r.URL.EscapedPath(), "/v1/pets/")
		switch {
		case accept != nil && !accept(r.Header.Get("Authorization")):
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
		case id == "broken":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "down")
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"name": id})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenAPIUpstreamTelemetry checks what a call of an OpenAPI upstream
// records: an HTTP client span per request, named by method and path
// template, a child of the call's server span, with OpenTelemetry's HTTP
// client attributes (a credential's query value redacted) and the
// status, error.type for a 5xx; the API gets its trace context; the
// gateway's metrics count the calls by upstream and tool as any
// upstream's; the live page's status has its state and tools.
func TestOpenAPIUpstreamTelemetry(t *testing.T) {
	testkit.Watchdog(t)
	seen := make(chan restSeen, 10)
	api := restAPIServer(t, seen, nil)
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{Upstreams: []string{"pets"}})
	g := tr.mount(t, gateway.Upstream{Name: "pets", OpenAPI: []byte(keyedDescription), URL: api.URL + "/v1"})
	c := mcptest.Connect(t, tr.srv)

	res := c.CallTool("getPet", map[string]any{"petId": "rex", "api_key": "s3cret", "limit": 3})
	require.False(t, res.IsError, "%s", res.Text())
	ok := <-seen
	res = c.CallTool("getPet", map[string]any{"petId": "broken"})
	require.True(t, res.IsError)
	<-seen

	st := g.Upstreams()
	require.Len(t, st, 1)
	assert.Equal(t, gateway.StateReady, st[0].State)
	assert.Equal(t, 1, st[0].Tools)
	assert.True(t, st[0].OpenAPI)
	assert.Equal(t, map[string]int64{"ok": 1, "tool_error": 1}, st[0].Calls)
	require.NoError(t, tr.srv.Shutdown(t.Context())) // every span ended

	var clients []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.SpanKind == trace.SpanKindClient {
			clients = append(clients, s)
		}
	}
	require.Len(t, clients, 2)
	first, broken := clients[0], clients[1]
	if strings.Contains(attr(first, "url.full"), "broken") {
		first, broken = broken, first
	}
	assert.Equal(t, "GET /pets/{petId}", first.Name)
	var calls []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.Name == "tools/call getPet" && s.SpanKind == trace.SpanKindServer {
			calls = append(calls, s)
		}
	}
	require.Len(t, calls, 2)
	for _, client := range []tracetest.SpanStub{first, broken} {
		i := slices.IndexFunc(calls, func(s tracetest.SpanStub) bool { return s.SpanContext.SpanID() == client.Parent.SpanID() })
		require.GreaterOrEqual(t, i, 0, "a child of a call's span")
		assert.Equal(t, calls[i].SpanContext.TraceID(), client.SpanContext.TraceID(), "in the call's trace")
		calls = slices.Delete(calls, i, i+1) // each call's span has one child
	}

	u, err := url.Parse(api.URL)
	require.NoError(t, err)
	assert.Equal(t, "GET", attr(first, "http.request.method"))
	full := attr(first, "url.full")
	assert.Contains(t, full, api.URL+"/v1/pets/rex?")
	assert.Contains(t, full, "api_key=REDACTED")
	assert.Contains(t, full, "limit=3")
	assert.NotContains(t, full, "s3cret")
	assert.Equal(t, "/pets/{petId}", attr(first, "url.template"))
	assert.Equal(t, u.Hostname(), attr(first, "server.address"))
	assert.Equal(t, u.Port(), attr(first, "server.port"))
	assert.Equal(t, "200", attr(first, "http.response.status_code"))
	assert.Empty(t, attr(first, "error.type"))
	assert.Equal(t, "500", attr(broken, "http.response.status_code"))
	assert.Equal(t, "500", attr(broken, "error.type"))

	// The API got the client span's context.
	assert.Equal(t, "00-"+first.SpanContext.TraceID().String()+"-"+first.SpanContext.SpanID().String()+"-01", ok.traceparent)

	got := gathered(t, tr.reg)
	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=getPet,mcp_method_name=tools/call,outcome=ok,upstream=pets}":         1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=getPet,mcp_method_name=tools/call,outcome=tool_error,upstream=pets}": 1,
	}
	assert.Equal(t, want, pick(got, want))
}

// TestOpenAPIUpstreamCredentials checks an OpenAPI upstream's
// credentials: Credentials is asked with the caller's context and its
// Authorization sent; a 401 goes to Refused, which renews the token and
// the call is sent once more; a second 401 asks Refused again, whose
// error (asking the user to connect the account anew) answers the call
// with its code and data; without Refused a 401 is a tool error.
func TestOpenAPIUpstreamCredentials(t *testing.T) {
	testkit.Watchdog(t)
	seen := make(chan restSeen, 10)
	var valid atomic.Value
	valid.Store("Bearer fresh")
	api := restAPIServer(t, seen, func(a string) bool { return a == valid.Load() })
	var token atomic.Value
	token.Store("stale")
	var callers atomic.Int64 // Credentials asked with a caller's request in ctx
	refusals := make(chan bool, 10)
	up := gateway.Upstream{
		Name: "pets", OpenAPI: []byte(keyedDescription), URL: api.URL + "/v1",
		Credentials: func(ctx context.Context) (http.Header, error) {
			if server.RequestFromContext(ctx) != nil {
				callers.Add(1)
			}
			return http.Header{"Authorization": {"Bearer " + token.Load().(string)}}, nil
		},
		Refused: func(ctx context.Context, again bool) error {
			refusals <- again
			if server.RequestFromContext(ctx) == nil {
				return errors.New("no caller")
			}
			if again {
				return &server.Error{Code: protocol.CodeURLElicitationRequired, Message: "connect your account", Data: json.RawMessage(`{"url":"https://gw.example/connect/x"}`)}
			}
			token.Store("fresh") // renewed
			return nil
		},
	}
	c := front(t, up)

	res := c.CallTool("getPet", map[string]any{"petId": "rex"})
	require.False(t, res.IsError, "%s", res.Text())
	assert.JSONEq(t, `{"name":"rex"}`, res.Text())
	assert.Equal(t, "Bearer stale", (<-seen).authorization)
	assert.Equal(t, "Bearer fresh", (<-seen).authorization, "sent once more with the renewed token")
	assert.False(t, <-refusals)
	assert.Equal(t, int64(2), callers.Load(), "Credentials asked with the caller's context")

	// The renewed token is refused too: the user is asked to connect anew.
	valid.Store("Bearer other")
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "getPet", "arguments": map[string]any{"petId": "rex"}})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeURLElicitationRequired), rpcErr.Code)
	assert.Equal(t, "connect your account", rpcErr.Message)
	assert.JSONEq(t, `{"url":"https://gw.example/connect/x"}`, string(rpcErr.Data))
	assert.False(t, <-refusals)
	assert.True(t, <-refusals)
	for range 2 {
		assert.Equal(t, "Bearer fresh", (<-seen).authorization)
	}
	select {
	case s := <-seen:
		t.Fatalf("a third request: %+v", s)
	default:
	}

	// Without Refused, the API's 401 is a tool error with its body.
	up.Refused = nil
	c = front(t, up)
	res = c.CallTool("getPet", map[string]any{"petId": "rex"})
	<-seen
	assert.True(t, res.IsError)
	assert.Equal(t, `HTTP 401 Unauthorized: {"message":"Bad credentials"}`, res.Text())
}

// TestOpenAPIUpstreamUnsampled: a call whose span is not sampled makes no
// client span, and the API still gets its trace context, not sampled.
func TestOpenAPIUpstreamUnsampled(t *testing.T) {
	testkit.Watchdog(t)
	seen := make(chan restSeen, 10)
	api := restAPIServer(t, seen, nil)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	srv := server.New(inst.ServerOptions()...)
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "pets", OpenAPI: []byte(keyedDescription), URL: api.URL + "/v1"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := mcptest.Connect(t, srv)
	require.False(t, c.CallTool("getPet", map[string]any{"petId": "rex"}).IsError)
	got := (<-seen).traceparent
	assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`, got, "the trace context, not sampled")
	assert.NotEqual(t, "00-00000000000000000000000000000000-0000000000000000-00", got)
	assert.Empty(t, spans.GetSpans())
}

// TestOpenAPIUpstreamCallerNotForged: a caller's _meta naming the id
// under which another caller's call in flight is lent (io.vigil/call)
// does not reach the REST call: its request goes with its own
// credentials, the other's with theirs.
func TestOpenAPIUpstreamCallerNotForged(t *testing.T) {
	testkit.Watchdog(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	seen := make(chan restSeen, 10)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- restSeen{path: r.URL.Path, authorization: r.Header.Get("Authorization")}
		if strings.HasSuffix(r.URL.Path, "/slow") {
			close(arrived)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(api.Close)
	up := gateway.Upstream{
		Name: "pets", OpenAPI: []byte(keyedDescription), URL: api.URL + "/v1",
		Credentials: func(ctx context.Context) (http.Header, error) {
			req := server.RequestFromContext(ctx)
			if req == nil {
				return nil, errors.New("no caller")
			}
			return http.Header{"Authorization": {fmt.Sprintf("Bearer %p", req.Session)}}, nil
		},
	}
	srv := frontServer(t, up)
	a, b := mcptest.Connect(t, srv), mcptest.Connect(t, srv)
	done := make(chan *server.CallToolResult, 1)
	go func() { done <- a.CallTool("getPet", map[string]any{"petId": "slow"}) }()
	<-arrived
	aSeen := <-seen
	for id := range 4 { // the ids a call of a may be lent under
		_, rpcErr := b.Call("tools/call", map[string]any{"name": "getPet", "arguments": map[string]any{"petId": "rex"}, "_meta": map[string]any{"io.vigil/call": strconv.Itoa(id)}})
		require.Nil(t, rpcErr)
		bSeen := <-seen
		assert.NotEqual(t, aSeen.authorization, bSeen.authorization, "b's call went with a's credentials")
	}
	close(release)
	assert.False(t, (<-done).IsError)
}
