package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func baggageOf(ctx context.Context) string { return baggage.FromContext(ctx).Member("user").Value() }

func TestTracingSpanNamesKindsAttributes(t *testing.T) {
	var h *traced
	var sid string
	synctest.Test(t, func(t *testing.T) {
		h = newTraced(t, nil).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", nil)
		h.RecvResponseTo(2)
		h.Request(3, "prompts/get", map[string]any{"name": "greet"})
		h.RecvResponseTo(3)
		h.Request(4, "resources/read", map[string]any{"uri": "file:///readme.txt"})
		h.RecvResponseTo(4)
		h.Send(&transport.Request{ID: transport.StringID("five"), Method: "ping"})
		h.Recv()
		synctest.Wait()
		sid = h.sessionID()
		h.close()
	})

	base := map[string]string{
		"mcp.method.name":      "",
		"mcp.session.id":       sid,
		"mcp.protocol.version": "2025-11-25",
		"network.transport":    "pipe",
	}
	tests := []struct {
		name string
		want map[string]string
	}{
		{"initialize", withAttrs(base, map[string]string{"mcp.method.name": "initialize", "jsonrpc.request.id": "1"})},
		{"notifications/initialized", withAttrs(base, map[string]string{"mcp.method.name": "notifications/initialized"})},
		{"tools/call echo", withAttrs(base, map[string]string{
			"mcp.method.name": "tools/call", "jsonrpc.request.id": "2",
			"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		})},
		{"prompts/get greet", withAttrs(base, map[string]string{
			"mcp.method.name": "prompts/get", "jsonrpc.request.id": "3", "gen_ai.prompt.name": "greet",
		})},
		{"resources/read", withAttrs(base, map[string]string{
			"mcp.method.name": "resources/read", "jsonrpc.request.id": "4", "mcp.resource.uri": "file:///readme.txt",
		})},
		{"ping", withAttrs(base, map[string]string{"mcp.method.name": "ping", "jsonrpc.request.id": "five"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := h.span(tt.name)
			assert.Equal(t, trace.SpanKindServer, s.SpanKind())
			assert.Equal(t, tt.want, spanAttrs(s))
			assert.Equal(t, codes.Unset, s.Status().Code)
			assert.Empty(t, s.Events())
			assert.Equal(t, mcpconv.ScopeName, s.InstrumentationScope().Name)
		})
	}
	assert.Len(t, h.rec.Ended(), len(tests))
}

func TestTracingStatelessRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newTraced(t, nil).start(t.Context(), nil)
		h.Request(7, "tools/list", map[string]any{"_meta": map[string]any{
			vocab.MetaProtocolVersion:    protocol.Version20260728,
			vocab.MetaClientCapabilities: map[string]any{},
		}})
		h.RecvResponseTo(7)
		synctest.Wait()
		h.close()
		assert.Equal(t, map[string]string{
			"mcp.method.name":      "tools/list",
			"jsonrpc.request.id":   "7",
			"mcp.protocol.version": protocol.Version20260728,
			"network.transport":    "pipe",
		}, spanAttrs(h.span("tools/list")), "no session id: a stateless request has no session")
	})
}

func TestTracingNetworkTransport(t *testing.T) {
	tests := []struct {
		name string
		ctx  func(context.Context) context.Context
		want map[string]string
	}{
		{
			name: "stdio",
			ctx: func(ctx context.Context) context.Context {
				return mcpconv.ContextWithTransport(ctx, telemetry.TransportStdio)
			},
			want: map[string]string{"network.transport": "pipe"},
		},
		{
			name: "streamable http",
			ctx: func(ctx context.Context) context.Context {
				return mcpconv.ContextWithTransport(ctx, telemetry.TransportStreamableHTTP)
			},
			want: map[string]string{"network.transport": "tcp", "network.protocol.name": "http"},
		},
		{
			name: "unnamed, from an HTTP request's context",
			ctx: func(ctx context.Context) context.Context {
				ctx = mcpconv.ContextWithTransport(ctx, "unnamed")
				return context.WithValue(ctx, http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
			},
			want: map[string]string{"network.transport": "tcp", "network.protocol.name": "http"},
		},
		{
			name: "unknown",
			ctx:  func(ctx context.Context) context.Context { return mcpconv.ContextWithTransport(ctx, "unnamed") },
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newTraced(t, nil).start(tt.ctx(t.Context()), nil)
				h.Request(1, "ping", nil)
				h.RecvResponseTo(1)
				synctest.Wait()
				h.close()
				got := spanAttrs(h.span("ping"))
				want := withAttrs(map[string]string{"mcp.method.name": "ping", "jsonrpc.request.id": "1", "mcp.session.id": got["mcp.session.id"]}, tt.want)
				assert.Equal(t, want, got)
			})
		})
	}
}

func TestTracingParent(t *testing.T) {
	tests := []struct {
		name        string
		ambient     bool
		meta        map[string]any
		wantParent  trace.SpanContext // zero: a root span
		wantLinks   []trace.SpanContext
		wantState   string
		wantBaggage string
	}{
		{
			name:       "meta is the parent, the ambient span a link",
			ambient:    true,
			meta:       map[string]any{"traceparent": traceparentOf(remoteSC)},
			wantParent: remoteSC,
			wantLinks:  []trace.SpanContext{ambientSC},
		},
		{
			name:       "ambient span is the parent without meta",
			ambient:    true,
			wantParent: ambientSC,
		},
		{
			name:       "meta without an ambient span",
			meta:       map[string]any{"traceparent": traceparentOf(remoteSC)},
			wantParent: remoteSC,
		},
		{
			name: "neither: a root span",
		},
		{
			name:        "tracestate and baggage",
			meta:        map[string]any{"traceparent": traceparentOf(remoteSC), "tracestate": "vendor=opaque", "baggage": "user=alice"},
			wantParent:  remoteSC,
			wantState:   "vendor=opaque",
			wantBaggage: "alice",
		},
		{
			name:        "beside MCP's own keys",
			meta:        map[string]any{"progressToken": "p1", "traceparent": traceparentOf(remoteSC), "baggage": "user=alice"},
			wantParent:  remoteSC,
			wantBaggage: "alice",
		},
		{
			name:        "baggage alone beside MCP's own keys",
			meta:        map[string]any{"progressToken": "p1", "baggage": "user=alice"},
			wantBaggage: "alice",
		},
		{
			name:       "malformed traceparent is ignored",
			ambient:    true,
			meta:       map[string]any{"traceparent": "00-nope"},
			wantParent: ambientSC,
		},
		{
			name:       "non-string traceparent is ignored",
			ambient:    true,
			meta:       map[string]any{"traceparent": 42},
			wantParent: ambientSC,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.ambient {
					ctx = trace.ContextWithSpanContext(ctx, ambientSC)
				}
				s, text := callBaggage(ctx, t, nil, tt.meta)
				if tt.wantParent.IsValid() {
					assert.Equal(t, tt.wantParent.TraceID(), s.Parent().TraceID())
					assert.Equal(t, tt.wantParent.SpanID(), s.Parent().SpanID())
					assert.Equal(t, tt.wantParent.IsRemote(), s.Parent().IsRemote())
					assert.Equal(t, tt.wantParent.TraceID(), s.SpanContext().TraceID())
				} else {
					assert.False(t, s.Parent().IsValid(), "parent %v", s.Parent())
				}
				var links []trace.SpanContext
				for _, l := range s.Links() {
					links = append(links, l.SpanContext)
				}
				assert.Equal(t, tt.wantLinks, links)
				assert.Equal(t, tt.wantState, s.SpanContext().TraceState().String())
				assert.Equal(t, tt.wantBaggage, text, "baggage seen by the handler")
			})
		})
	}
}

// callBaggage serves one session from ctx, traced with opts, and calls the
// baggage tool with meta as the request's _meta (nil: none); it returns
// the call's span and the baggage the handler saw.
func callBaggage(ctx context.Context, t *testing.T, opts []middleware.InstrumentationOption, meta map[string]any) (sdktrace.ReadOnlySpan, string) {
	t.Helper()
	h := newTracedWith(t, nil, opts, nil).start(ctx, nil)
	h.Initialize("", nil)
	p := map[string]any{"name": "baggage", "arguments": map[string]any{}}
	if meta != nil {
		p["_meta"] = meta
	}
	h.Request(2, "tools/call", p)
	text, _ := toolResultText(t, h.RecvResponseTo(2))
	synctest.Wait()
	h.close()
	return h.span("tools/call baggage"), text
}

// With WithUntrustedTraceContext, the client's context in _meta is only a
// link: the span is a root (or the ambient span's child) in a trace of the
// server's, the server's sampler decides, and no baggage reaches handlers.
func TestTracingUntrustedTraceContext(t *testing.T) {
	clientMeta := map[string]any{"traceparent": traceparentOf(remoteSC), "tracestate": "vendor=opaque", "baggage": "user=alice"}
	tests := []struct {
		name       string
		ambient    bool
		bag        string // baggage already in the Serve context
		meta       map[string]any
		wantParent trace.SpanContext // zero: a root span
		wantLinks  []trace.SpanContext
	}{
		{name: "a new root linked to the client's span", meta: clientMeta, wantLinks: []trace.SpanContext{remoteSC}},
		{name: "the ambient span stays the parent", ambient: true, meta: clientMeta, wantParent: ambientSC, wantLinks: []trace.SpanContext{remoteSC}},
		{name: "baggage alone is dropped", meta: map[string]any{"progressToken": "p1", "baggage": "user=alice"}},
		{name: "baggage in the context is dropped too", bag: "user=bob"},
		{name: "a malformed traceparent is no link", meta: map[string]any{"traceparent": "00-nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.ambient {
					ctx = trace.ContextWithSpanContext(ctx, ambientSC)
				}
				if tt.bag != "" {
					b, err := baggage.Parse(tt.bag)
					require.NoError(t, err)
					ctx = baggage.ContextWithBaggage(ctx, b)
				}
				s, text := callBaggage(ctx, t, []middleware.InstrumentationOption{middleware.WithUntrustedTraceContext()}, tt.meta)
				if tt.wantParent.IsValid() {
					assert.Equal(t, tt.wantParent.SpanID(), s.Parent().SpanID())
					assert.Equal(t, tt.wantParent.TraceID(), s.SpanContext().TraceID())
				} else {
					assert.False(t, s.Parent().IsValid(), "parent %v", s.Parent())
				}
				assert.NotEqual(t, remoteSC.TraceID(), s.SpanContext().TraceID(), "the client picks no trace id")
				assert.Empty(t, s.SpanContext().TraceState().String(), "nor the trace state")
				var links []trace.SpanContext
				for _, l := range s.Links() {
					links = append(links, l.SpanContext.WithTraceState(trace.TraceState{}))
				}
				assert.Equal(t, tt.wantLinks, links)
				assert.Empty(t, text, "no baggage seen by the handler")
			})
		})
	}
}

// A sampled traceparent from the client forces sampling under a
// parent-based sampler, unless the context is untrusted: then the root
// sampler decides.
func TestTracingUntrustedTraceContextSampling(t *testing.T) {
	for _, untrusted := range []bool{false, true} {
		t.Run(fmt.Sprintf("untrusted=%v", untrusted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mw []middleware.InstrumentationOption
				if untrusted {
					mw = append(mw, middleware.WithUntrustedTraceContext())
				}
				sampler := sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample()))
				h := newTracedWith(t, []sdktrace.TracerProviderOption{sampler}, mw, nil).start(t.Context(), nil)
				h.Initialize("", nil)
				h.Request(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}, "_meta": map[string]any{"traceparent": traceparentOf(remoteSC)}})
				h.RecvResponseTo(2)
				synctest.Wait()
				h.close()
				var names []string
				for _, s := range h.rec.Ended() {
					names = append(names, s.Name())
				}
				if untrusted {
					assert.NotContains(t, names, "tools/call echo", "the server's sampler said never")
				} else {
					assert.Contains(t, names, "tools/call echo", "the client's sampled flag decided")
				}
			})
		})
	}
}

// toolResultText returns the text of a single-text tools/call result.
func toolResultText(t *testing.T, resp *transport.Response) (string, bool) {
	t.Helper()
	require.Nil(t, resp.Error, "want a result")
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &r))
	require.Len(t, r.Content, 1, "result: %s", resp.Result)
	return r.Content[0].Text, r.IsError
}

func TestTracingOutcomes(t *testing.T) {
	type want struct {
		status    codes.Code
		desc      string
		errorType string // "" for none
		rpcCode   string // "" for none
		cause     string // vigil.cancel.cause; "" for none
		events    []string
	}
	tests := []struct {
		name  string
		span  string
		extra []server.Middleware
		wrap  func(transport.Conn) transport.Conn
		run   func(t *testing.T, h *traced)
		want  want
	}{
		{
			name: "ok",
			span: "tools/call echo",
			run: func(_ *testing.T, h *traced) {
				h.SendCallTool(2, "echo", nil)
				h.RecvResponseTo(2)
			},
			want: want{status: codes.Unset},
		},
		{
			// A caller's fault (-32602 here) is no server error: status
			// Unset, no error.type, the code as rpc.response.status_code.
			name: "caller fault: invalid params",
			span: "tools/call nope",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "nope", nil)
				assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvResponseTo(2).Error.Code)
			},
			want: want{status: codes.Unset, rpcCode: "-32602"},
		},
		{
			name: "caller fault: method not found",
			span: "bogus/method",
			run: func(t *testing.T, h *traced) {
				h.Request(2, "bogus/method", nil)
				assert.Equal(t, int64(protocol.CodeMethodNotFound), h.RecvResponseTo(2).Error.Code)
			},
			want: want{status: codes.Unset, rpcCode: "-32601"},
		},
		{
			name: "caller fault: resource not found",
			span: "resources/read",
			run: func(t *testing.T, h *traced) {
				h.Request(2, "resources/read", map[string]any{"uri": "file:///nope.txt"})
				assert.Equal(t, int64(protocol.CodeResourceNotFound), h.RecvResponseTo(2).Error.Code)
			},
			want: want{status: codes.Unset, rpcCode: "-32002"},
		},
		{
			name: "tool error",
			span: "tools/call fail",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "fail", nil)
				_, isErr := toolResultText(t, h.RecvResponseTo(2))
				assert.True(t, isErr)
			},
			want: want{status: codes.Error, errorType: "tool_error"},
		},
		{
			// A result over -max-result-bytes is the server's refusal, not a
			// bug: error.type says which, and no exception is recorded.
			name: "result over its bound",
			span: "resources/read",
			run: func(t *testing.T, h *traced) {
				require.NoError(t, h.srv.AddResource(server.Resource{URI: "test://big", Name: "big"},
					func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
						return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Text: strings.Repeat("x", 5<<20)}}}, nil
					}))
				h.Request(2, "resources/read", map[string]any{"uri": "test://big"})
				assert.Equal(t, int64(protocol.CodeInternal), h.RecvResponseTo(2).Error.Code)
			},
			want: want{
				status: codes.Error, errorType: "result_too_large", rpcCode: "-32603",
				desc: fmt.Sprintf("result too large: %d bytes encoded, over the limit of %d bytes",
					len(`{"contents":[{"uri":"test://big","text":""}]}`)+5<<20, server.DefaultMaxResultBytes),
			},
		},
		{
			name: "arguments the tool's schema refuses",
			span: "tools/call strict",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "strict", `{"n":"1"}`)
				_, isErr := toolResultText(t, h.RecvResponseTo(2))
				assert.True(t, isErr)
			},
			want: want{status: codes.Error, errorType: "invalid_arguments"},
		},
		{
			name: "client cancel",
			span: "tools/call block",
			run: func(_ *testing.T, h *traced) {
				h.SendCallTool(2, "block", nil)
				synctest.Wait()
				h.Notify("notifications/cancelled", map[string]any{"requestId": 2, "reason": "user"})
			},
			want: want{status: codes.Unset, errorType: "cancelled", cause: "client_cancel", events: []string{
				"cancelled vigil.cancel.cause=client_cancel", "response_dropped vigil.drop.reason=cancelled",
			}},
		},
		{
			name: "dropped late response",
			span: "tools/call late",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "late", nil)
				synctest.Wait()
				h.Notify("notifications/cancelled", map[string]any{"requestId": 2})
				synctest.Wait()
				for _, s := range h.rec.Ended() {
					assert.NotEqual(t, "tools/call late", s.Name(), "the span waits for the handler")
				}
				close(h.release)
			},
			want: want{status: codes.Unset, errorType: "cancelled", cause: "client_cancel", events: []string{
				"cancelled vigil.cancel.cause=client_cancel", "response_dropped vigil.drop.reason=cancelled",
			}},
		},
		{
			name: "transport close",
			span: "tools/call block",
			run: func(_ *testing.T, h *traced) {
				h.SendCallTool(2, "block", nil)
				synctest.Wait()
				h.close()
			},
			want: want{status: codes.Unset, errorType: "cancelled", cause: "transport_close", events: []string{
				"cancelled vigil.cancel.cause=transport_close", "response_dropped vigil.drop.reason=writer_closed",
			}},
		},
		{
			name: "shutdown",
			span: "tools/call block",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "block", nil)
				synctest.Wait()
				require.NoError(t, h.srv.Close())
				require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
			},
			want: want{status: codes.Unset, errorType: "cancelled", cause: "shutdown", events: []string{
				"cancelled vigil.cancel.cause=shutdown", "response_dropped vigil.drop.reason=shutdown",
			}},
		},
		{
			name:  "timeout",
			span:  "tools/call block",
			extra: []server.Middleware{traceTimeout(time.Second)},
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "block", nil)
				assert.Equal(t, int64(protocol.CodeRequestTimeout), h.RecvResponseTo(2).Error.Code)
			},
			want: want{status: codes.Error, desc: "request timed out", errorType: "-32001", rpcCode: "-32001", cause: "timeout", events: []string{
				"cancelled vigil.cancel.cause=timeout",
			}},
		},
		{
			name: "panic",
			span: "tools/call panic",
			run: func(t *testing.T, h *traced) {
				h.SendCallTool(2, "panic", nil)
				assert.Equal(t, int64(protocol.CodeInternal), h.RecvResponseTo(2).Error.Code)
			},
			want: want{status: codes.Error, desc: "internal error", errorType: "-32603", rpcCode: "-32603", events: []string{
				"exception exception.message=panic: boom exception.type=*errors.errorString",
			}},
		},
		{
			name:  "notification panic",
			span:  "notifications/roots/list_changed",
			extra: []server.Middleware{panicOn("notifications/roots/list_changed")},
			run: func(_ *testing.T, h *traced) {
				h.Notify("notifications/roots/list_changed", nil)
			},
			// Never answered, but it failed like a request's handler would.
			want: want{status: codes.Error, desc: "internal error", errorType: "-32603", events: []string{
				"exception exception.message=panic: boom in notifications/roots/list_changed exception.type=*errors.errorString",
			}},
		},
		{
			name: "write fails",
			span: "tools/call echo",
			wrap: func(c transport.Conn) transport.Conn { return &failWrites{Conn: c, id: transport.Int64ID(2)} },
			run: func(_ *testing.T, h *traced) {
				h.SendCallTool(2, "echo", nil)
			},
			want: want{status: codes.Unset, errorType: "dropped", events: []string{
				"response_dropped exception.message=scripted: transport: peer gone vigil.drop.reason=peer_gone",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newTraced(t, tt.extra).start(t.Context(), tt.wrap)
				h.Initialize("", nil)
				tt.run(t, h)
				synctest.Wait()
				h.close()
				s := h.span(tt.span)
				assert.Equal(t, tt.want.status, s.Status().Code)
				assert.Equal(t, tt.want.desc, s.Status().Description)
				attrs := spanAttrs(s)
				assert.Equal(t, tt.want.errorType, attrs["error.type"])
				assert.Equal(t, tt.want.rpcCode, attrs["rpc.response.status_code"])
				assert.Equal(t, tt.want.cause, attrs["vigil.cancel.cause"])
				assert.Equal(t, tt.want.events, spanEvents(s))
			})
		})
	}
}

// failWrites fails the write of the response to one id, as a vanished peer
// would.
type failWrites struct {
	transport.Conn
	id transport.ID
}

func (c *failWrites) Write(ctx context.Context, m transport.Message) error {
	if r, ok := m.(*transport.Response); ok && r.ID == c.id {
		return errPeerGone
	}
	return c.Conn.Write(ctx, m)
}

var errPeerGone = fmt.Errorf("scripted: %w", transport.ErrPeerGone)

func TestTracingClientCall(t *testing.T) {
	elicit := map[string]any{"elicitation": map[string]any{}}
	tests := []struct {
		name   string
		opts   []server.Option
		client func(t *testing.T, h *traced, req *transport.Request)
		status codes.Code
		desc   string
		attrs  map[string]string // beyond the common ones
		events []string
		answer string // the tools/call answer: "result", "tool_error", "-32601", or "" for none
	}{
		{
			name: "answered",
			client: func(_ *testing.T, h *traced, req *transport.Request) {
				h.Send(&transport.Response{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{"name":"ada"}}`)})
			},
			status: codes.Unset,
			answer: "result",
		},
		{
			name: "error answer",
			client: func(_ *testing.T, h *traced, req *transport.Request) {
				h.Send(&transport.Response{ID: req.ID, Error: &transport.Error{Code: -32601, Message: "no elicitation here"}})
			},
			status: codes.Error,
			desc:   "no elicitation here",
			attrs:  map[string]string{"error.type": "-32601", "rpc.response.status_code": "-32601"},
			answer: "-32601", // a protocol error travels as it is
		},
		{
			name: "the request is cancelled",
			client: func(t *testing.T, h *traced, _ *transport.Request) {
				h.Notify("notifications/cancelled", map[string]any{"requestId": 2})
				m, ok := h.Recv().(*transport.Request)
				require.True(t, ok)
				assert.Equal(t, "notifications/cancelled", m.Method, "the server withdraws its call")
			},
			status: codes.Unset,
			attrs:  map[string]string{"vigil.cancel.cause": "client_cancel"},
			events: []string{"cancelled vigil.cancel.cause=client_cancel"},
		},
		{
			name: "no answer in time",
			opts: []server.Option{server.WithCallTimeout(time.Second)},
			client: func(t *testing.T, h *traced, _ *transport.Request) {
				m, ok := h.Recv().(*transport.Request) // after a second of fake time
				require.True(t, ok)
				assert.Equal(t, "notifications/cancelled", m.Method)
			},
			status: codes.Error,
			desc:   "mcp: elicitation/create: no answer from the client within 1s: context deadline exceeded",
			attrs:  map[string]string{"error.type": "timeout", "vigil.cancel.cause": "timeout"},
			events: []string{"cancelled vigil.cancel.cause=timeout"},
			answer: "tool_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newTraced(t, nil, tt.opts...).start(t.Context(), nil)
				h.Initialize("", elicit)
				h.SendCallTool(2, "ask", nil)
				req, ok := h.Recv().(*transport.Request)
				require.True(t, ok)
				require.Equal(t, "elicitation/create", req.Method)
				synctest.Wait() // the CLIENT span is open, the call waits for the answer
				var client sdktrace.ReadOnlySpan
				for _, s := range h.rec.Started() {
					if s.Name() == "elicitation/create" {
						client = s
					}
				}
				require.NotNil(t, client, "the CLIENT span started")
				var params struct {
					Message string `json:"message"`
					Meta    struct {
						Traceparent string `json:"traceparent"`
					} `json:"_meta"`
				}
				require.NoError(t, json.Unmarshal(req.Params, &params))
				assert.Equal(t, "who?", params.Message, "the params survive")
				assert.Equal(t, traceparentOf(client.SpanContext()), params.Meta.Traceparent, "the CLIENT span is the client's parent")

				tt.client(t, h, req)
				switch tt.answer {
				case "":
				case "result", "tool_error":
					text, isErr := toolResultText(t, h.RecvResponseTo(2))
					assert.Equal(t, tt.answer == "tool_error", isErr, text)
				default:
					resp := h.RecvResponseTo(2)
					require.NotNil(t, resp.Error)
					assert.Equal(t, tt.answer, fmt.Sprint(resp.Error.Code))
				}
				synctest.Wait()
				sid := h.sessionID()
				h.close()

				s := h.span("elicitation/create")
				srv := h.span("tools/call ask")
				assert.Equal(t, trace.SpanKindClient, s.SpanKind())
				assert.True(t, s.Parent().Equal(srv.SpanContext()), "child of the SERVER span")
				assert.Equal(t, withAttrs(map[string]string{
					"mcp.method.name":      "elicitation/create",
					"mcp.session.id":       sid,
					"mcp.protocol.version": "2025-11-25",
					"network.transport":    "pipe",
					"jsonrpc.request.id":   "1",
				}, tt.attrs), spanAttrs(s))
				assert.Equal(t, tt.status, s.Status().Code)
				assert.Equal(t, tt.desc, s.Status().Description)
				assert.Equal(t, tt.events, spanEvents(s))
			})
		})
	}
}

// TestTracingBatchedSpanEndsAtTheOutcome checks that, with the outcomes
// recorded in batches (server.WithOutcomeBatches), a request's span ends
// when the batch runs, but with the request's end as its end time.
func TestTracingBatchedSpanEndsAtTheOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlusher()
		h := newTraced(t, nil, server.WithOutcomeBatches(100, time.Hour), f).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", nil)
		h.RecvResponseTo(2)
		synctest.Wait()
		answered := time.Now()
		for _, s := range h.rec.Ended() {
			require.NotEqual(t, "tools/call echo", s.Name(), "the span ended before its batch ran")
		}
		time.Sleep(time.Minute)
		f.flush()
		s := h.span("tools/call echo")
		assert.Equal(t, answered, s.EndTime(), "the span ends at the request's end, not the batch's")
		h.close()
	})
}

// TestTracingBatchedEventsInsideTheSpan: with the outcomes recorded in
// batches, the events of a span (a cancel and the dropped response, a
// late answer dropped, a panic's exception) are stamped at the request's
// end, not when the batch ran: none is after the span's end.
func TestTracingBatchedEventsInsideTheSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlusher()
		h := newTraced(t, nil, server.WithOutcomeBatches(100, time.Hour), f).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "block", nil)
		synctest.Wait()
		h.Cancel(2, "stop")
		h.SendCallTool(3, "late", nil)
		synctest.Wait()
		h.Cancel(3, "stop")
		synctest.Wait()
		close(h.release)
		h.SendCallTool(4, "panic", nil)
		h.RecvResponseTo(4)
		synctest.Wait()
		time.Sleep(time.Minute) // the batch runs a minute later
		f.flush()
		events := 0
		for _, name := range []string{"tools/call block", "tools/call late", "tools/call panic"} {
			s := h.span(name)
			for _, e := range s.Events() {
				events++
				assert.False(t, e.Time.After(s.EndTime()), "%s: event %s at %v, after the span's end at %v", name, e.Name, e.Time, s.EndTime())
			}
		}
		assert.GreaterOrEqual(t, events, 4, "the cancels, the drop and the exception")
		h.close()
	})
}

// flusher is a server.Option that keeps the outcome flush of the server
// it is given to, as the instrumentation's collector does: server.New
// hands it over (serverhook.Wired).
type flusher struct {
	server.Option // an observer of nothing
	flush         func()
}

func newFlusher() *flusher { return &flusher{Option: server.WithObserver()} }

func (f *flusher) WireServer(s *serverhook.Server) { f.flush = s.Flush }

// Without a tracer provider (none, or nil), Tracing and TracingCalls are
// the identity, as NewInstrumentation traces nothing: the handler and the
// client call get the very context they were given, with no span of
// theirs in it.
func TestTracingWithoutProviderIsIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), struct{ k int }{1}, "mark")
	for _, mw := range []server.Middleware{middleware.Tracing(), middleware.Tracing(middleware.WithTracerProvider(nil))} {
		var got context.Context
		h := mw(func(ctx context.Context, _ *server.Request) (any, error) { got = ctx; return nil, nil })
		_, err := h(ctx, &server.Request{ID: transport.Int64ID(1), Method: "ping"})
		require.NoError(t, err)
		assert.Equal(t, ctx, got, "the handler's context is the one given")
	}
	for _, cm := range []server.CallMiddleware{middleware.TracingCalls(), middleware.TracingCalls(middleware.WithTracerProvider(nil))} {
		var got context.Context
		call := cm(func(ctx context.Context, _ *server.ClientCall) error { got = ctx; return nil })
		require.NoError(t, call(ctx, &server.ClientCall{Method: "roots/list"}))
		assert.Equal(t, ctx, got, "the call's context is the one given")
	}
}
