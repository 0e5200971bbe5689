package middleware

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
)

// spanStarter starts the SERVER spans of one Tracing middleware.
//
// A sampler sees a span's name ("{mcp.method.name} {target}", which names
// the method and the tool or prompt) and kind; the attributes are set at
// the request's end, with its outcome's, and only on a span that records,
// so that an unsampled request pays for none of them and a sampled one
// sets them off its way in, after its answer (with server.WithOutcomeBatches)
// rather than before its handler runs. With the OpenTelemetry SDK,
// attributes given at the start cost a copy and an allocation more than
// those set after it, and they are most of a span's cost. The name and
// start options of each (method, target) are built once and shared.
type spanStarter struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// untrusted: the client's context is a link, never the parent, and
	// baggage is dropped (WithUntrustedTraceContext).
	untrusted bool
	capture   Redactor // WithContentCapture; nil: off
	starts    *spanStarts
	attrs     *sync.Pool // of *[]attribute.KeyValue, the attributes set at the end
}

// newServerSpanStarter returns the spanStarter of the tracing with cfg,
// whose provider and propagator are set.
func newServerSpanStarter(cfg tracingConfig) spanStarter {
	return spanStarter{
		tracer:    cfg.tracer(),
		prop:      cfg.propagator,
		untrusted: cfg.untrusted,
		capture:   cfg.capture,
		starts:    &spanStarts{},
		attrs:     &sync.Pool{New: func() any { return new([]attribute.KeyValue) }},
	}
}

// start starts req's span in ctx; principal is req's (principalOf), nil
// without one. Its attributes are set by attributes, which the request's
// end calls with what start returns.
//
// It stands over the tracer's Start, the deepest call of a request's
// way in: its own frame holds no more than the call needs (see
// docs/limits.md, "The request's stack"), and the span's parent and
// attributes are worked out in calls of their own, which return before
// and after it.
func (s spanStarter) start(ctx context.Context, req *server.Request) (context.Context, trace.Span, *spanStart) {
	st := s.starts.get(ctx, req)
	pctx, opts := s.parent(ctx, req, st.opts)
	sctx, span := s.tracer.Start(pctx, st.name, opts...)
	return sctx, span, st
}

// attributes sets the attributes of req's span, started by start in the
// context ctx returned with st, when it records; principal is req's.
func (s spanStarter) attributes(ctx context.Context, span trace.Span, st *spanStart, req *server.Request, principal *auth.Principal) {
	if span.IsRecording() {
		s.setAttributes(ctx, span, st, req, principal)
	}
}

// parent returns the context and options req's span starts with: ctx
// under the span of req's own delivery, and the client's trace context in
// _meta as the parent or (untrusted) a link, in a frame apart from
// start's (see start).
//
//go:noinline
func (s spanStarter) parent(ctx context.Context, req *server.Request, opts []trace.SpanStartOption) (context.Context, []trace.SpanStartOption) {
	pctx := ctx
	// The ambient span is that of the message's own delivery (the POST that
	// carried it), which in a 2025 Streamable HTTP session is not the one
	// the session's context, and so ctx, came from.
	ambient := trace.SpanContextFromContext(req.ArrivalContext())
	if ambient.IsValid() && !ambient.Equal(trace.SpanContextFromContext(ctx)) {
		pctx = trace.ContextWithSpanContext(ctx, ambient)
	}
	switch {
	case s.untrusted:
		pctx, opts = s.untrustedParent(pctx, req, opts)
	case !protocolMetaOnly(&req.Meta): // else nothing to extract: spare the propagators
		pctx = s.prop.Extract(pctx, metaCarrier{&req.Meta})
		if remote := trace.SpanContextFromContext(pctx); remote.IsValid() && !remote.Equal(ambient) && ambient.IsValid() {
			opts = append(opts[:len(opts):len(opts)], trace.WithLinks(trace.Link{SpanContext: ambient}))
		}
	}
	return pctx, opts
}

// setAttributes sets the attributes of req's recording span, those of its
// (method, target) and those of the request itself, in a frame apart
// from start's (see start).
//
//go:noinline
func (s spanStarter) setAttributes(ctx context.Context, span trace.Span, st *spanStart, req *server.Request, principal *auth.Principal) {
	buf, _ := s.attrs.Get().(*[]attribute.KeyValue)
	attrs := (*buf)[:0]
	attrs = append(attrs, st.attrs...)
	// The transport is read from ctx: the same value as in the span's
	// context, one context closer.
	attrs = recordedAttributes(ctx, req, principal, attrs)
	span.SetAttributes(attrs...) // copied by the span
	clear(attrs)
	*buf = attrs
	s.attrs.Put(buf)
}

// untrustedParent returns the context and options a span starts with
// under WithUntrustedTraceContext: pctx, which holds the server's own span
// if any, without baggage, and the client's context in _meta as a link.
func (s spanStarter) untrustedParent(pctx context.Context, req *server.Request, opts []trace.SpanStartOption) (context.Context, []trace.SpanStartOption) {
	if !protocolMetaOnly(&req.Meta) {
		// Extracted apart from pctx: the client's baggage stays out of it.
		if remote := trace.SpanContextFromContext(s.prop.Extract(context.Background(), metaCarrier{&req.Meta})); remote.IsValid() {
			opts = append(opts[:len(opts):len(opts)], trace.WithLinks(trace.Link{SpanContext: remote}))
		}
	}
	if baggage.FromContext(pctx).Len() > 0 {
		pctx = baggage.ContextWithoutBaggage(pctx)
	}
	return pctx, opts
}

// protocolMetaOnly reports whether every key of meta (none included) is
// one MCP itself defines: progressToken, or one under the
// "io.modelcontextprotocol/" prefix, such as the protocol version and
// client capabilities every 2026-07-28 request carries. No propagator
// reads those, so extracting from such a _meta would only run every
// propagator to find nothing. Any other key (traceparent, baggage, or a
// custom propagator's) is extracted from.
func protocolMetaOnly(meta *server.RequestMeta) bool {
	for k := range meta.All() {
		if k != vocab.MetaProgressToken && !strings.HasPrefix(k, vocab.MetaPrefix) {
			return false
		}
	}
	return true
}

// recordedAttributes appends the attributes of req's span that depend on
// more than its method and target to attrs; p is req's principal, nil
// without one.
func recordedAttributes(ctx context.Context, req *server.Request, p *auth.Principal, attrs []attribute.KeyValue) []attribute.KeyValue {
	if !req.IsNotification() {
		attrs = append(attrs, mcpconv.JSONRPCRequestIDKey.String(cutName(req.ID.String(), maxSpanIDLen)))
	}
	if req.InSession() {
		attrs = append(attrs, mcpconv.MCPSessionIDKey.String(req.Session.ID()))
	}
	if req.Protocol != "" {
		attrs = append(attrs, mcpconv.MCPProtocolVersionKey.String(req.Protocol))
	}
	if req.URI != "" {
		attrs = append(attrs, mcpconv.MCPResourceURIKey.String(req.URI))
	}
	if p != nil {
		attrs = append(attrs, semconv.UserID(p.Subject))
		if p.ClientID != "" {
			attrs = append(attrs, mcpconv.OAuthClientIDKey.String(p.ClientID))
		}
		if len(p.Actors) > 0 {
			attrs = append(attrs, mcpconv.OAuthActorsKey.StringSlice(p.Actors))
		}
	}
	return appendPeer(req.ArrivalContext(), appendNetwork(ctx, attrs))
}

// spanStart is how every span of one (method, target) starts.
type spanStart struct {
	name  string                  // "{mcp.method.name} {target}", or the method
	opts  []trace.SpanStartOption // the kind; read-only
	attrs []attribute.KeyValue    // mcp.method.name and the target's; read-only
}

// spanStartKey is a method and its target: the tool of tools/call, the
// prompt of prompts/get, empty otherwise.
type spanStartKey struct{ method, target string }

// maxSpanStarts bounds the spanStarts cache. Only names the session's
// server knows are cached (a method of its table, a registered tool or
// prompt), so that a client sending ever new names neither grows it nor
// takes the place of a real one; the starts of other names are built for
// each request, their names cut at maxSpanNameLen bytes.
const maxSpanStarts = 1024

// Caps on client-chosen text in a span: a method or target the server does
// not know (the spec's tool names have at most 128 bytes), and a JSON-RPC id.
const (
	maxSpanNameLen = 128
	maxSpanIDLen   = 256
)

// spanStarts caches a spanStart per spanStartKey: read without locking,
// copied on write (new names are rare once a server has seen its tools).
// It is indexed by method, then by target, so that a lookup is two
// lookups by string, the kind every request makes anyway, rather than one
// by a struct, whose map code is the request's alone.
type spanStarts struct {
	mu       sync.Mutex // serializes writers; guards n
	n        int        // starts cached
	byMethod atomic.Pointer[map[string]*methodStarts]
}

// methodStarts are the cached starts of one method; read-only once
// published (a new target publishes a new one).
type methodStarts struct {
	plain    *spanStart            // without a target; nil until built
	byTarget map[string]*spanStart // by target
}

func (c *spanStarts) get(ctx context.Context, req *server.Request) *spanStart {
	key := spanStartKey{method: req.Method}
	if req.Name != "" && (req.Method == "tools/call" || req.Method == "prompts/get") {
		key.target = req.Name
	}
	if m := c.byMethod.Load(); m != nil {
		if ms := (*m)[key.method]; ms != nil {
			if st := ms.lookup(key.target); st != nil {
				return st
			}
		}
	}
	if !knownStart(ctx, req, key) {
		key.method, key.target = cutName(key.method, maxSpanNameLen), cutName(key.target, maxSpanNameLen)
		return newSpanStart(key)
	}
	st := newSpanStart(key)
	if key.method == "tools/call" { // a gateway's tool names its upstream, static from registration
		if t, _ := req.Session.Server().Tool(key.target); t.Upstream != "" {
			st.attrs = append(st.attrs, mcpconv.UpstreamKey.String(t.Upstream))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxSpanStarts {
		return st
	}
	var old map[string]*methodStarts
	if m := c.byMethod.Load(); m != nil {
		old = *m
	}
	var ms methodStarts
	if prev := old[key.method]; prev != nil {
		if got := prev.lookup(key.target); got != nil {
			return got // cached by another writer meanwhile
		}
		ms = *prev
	}
	if key.target == "" {
		ms.plain = st
	} else {
		targets := make(map[string]*spanStart, len(ms.byTarget)+1)
		maps.Copy(targets, ms.byTarget)
		targets[key.target] = st
		ms.byTarget = targets
	}
	m := make(map[string]*methodStarts, len(old)+1)
	maps.Copy(m, old)
	m[key.method] = &ms
	c.byMethod.Store(&m)
	c.n++
	return st
}

// knownStart reports whether req's session's server knows key's method and
// target: what the cache may hold. ctx is req's handler's.
func knownStart(ctx context.Context, req *server.Request, key spanStartKey) bool {
	hook := serverhook.ServerOf(ctx)
	if req.Session == nil || hook == nil {
		return false
	}
	srv := req.Session.Server()
	if !hook.HasMethod(key.method) {
		return false
	}
	switch {
	case key.target == "":
		return true
	case key.method == "tools/call":
		_, ok := srv.Tool(key.target)
		return ok
	}
	return srv.HasPrompt(key.target)
}

// cutName returns s, or, when it is longer than n bytes, its first n at
// most, cut on a rune boundary, marked with "…".
func cutName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// lookup returns the cached start of target ("" for none), or nil.
func (ms *methodStarts) lookup(target string) *spanStart {
	if target == "" {
		return ms.plain
	}
	return ms.byTarget[target]
}

func newSpanStart(key spanStartKey) *spanStart {
	attrs := []attribute.KeyValue{mcpconv.MCPMethodNameKey.String(key.method)}
	name := key.method
	if key.target != "" {
		name += " " + key.target
		if key.method == "tools/call" {
			attrs = append(attrs, mcpconv.GenAIToolNameKey.String(key.target),
				mcpconv.GenAIOperationNameKey.String(mcpconv.OperationExecuteTool))
		} else {
			attrs = append(attrs, mcpconv.GenAIPromptNameKey.String(key.target))
		}
	}
	return &spanStart{
		name:  name,
		opts:  []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)},
		attrs: attrs,
	}
}
