package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/server"
)

// A REST call under its caller: an OpenAPI upstream's tools are served in
// process, reached over a pipe (openapi.go), so the handler's context is
// the pipe session's, not the caller's. The hop (forwardRetry) lends the
// caller's context to the call instead (carry): the request carries an id
// in _meta, by which the handler finds it (callerOf). With it, the REST
// request is sent with the caller's credentials (Upstream.Credentials,
// Refused), under a client span that is a child of the call's span, and
// with its trace context (restTransport).

// callKey is the member of params._meta that names the caller's context
// of a call of an OpenAPI upstream; only the gateway writes to the pipe.
const callKey = "io.vigil/call"

// carry lends ctx, the caller's, to the call that notes' request makes:
// it adds its id to notes.Meta, and done forgets it once the call ended.
func (r *restAPI) carry(ctx context.Context, notes *upstream.Notes) (done func()) {
	id := r.nextID.Add(1)
	r.calls.Store(id, ctx)
	if len(notes.Meta) > 0 {
		notes.Meta = append(notes.Meta, ',')
	}
	notes.Meta = strconv.AppendUint(append(append(notes.Meta, `"`+callKey+`":`...), '"'), id, 10)
	notes.Meta = append(notes.Meta, '"')
	return func() { r.calls.Delete(id) }
}

// callerOf returns the context of the call req, whose handler has ctx:
// the caller's values (its request, principal and span), ended when
// either ends; ctx itself when req carries no caller lent (carry).
func (r *restAPI) callerOf(ctx context.Context, req *server.CallToolRequest) (context.Context, func()) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if req.Request == nil || json.Unmarshal(req.Request.Params, &p) != nil {
		return ctx, func() {}
	}
	var id string
	if json.Unmarshal(p.Meta[callKey], &id) != nil {
		return ctx, func() {}
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return ctx, func() {}
	}
	v, ok := r.calls.Load(n)
	if !ok {
		return ctx, func() {}
	}
	caller, cancel := context.WithCancelCause(v.(context.Context))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return caller, func() { stop(); cancel(nil) }
}

// operationKey is the context key of the operation a REST call calls.
type operationKey struct{}

// withOperation returns ctx naming op as the operation of its requests.
func withOperation(ctx context.Context, op *openapi.Tool) context.Context {
	return context.WithValue(ctx, operationKey{}, op)
}

// restTransport sends an OpenAPI upstream's requests: with the upstream's
// own headers (Upstream.Header) and the caller's credentials
// (Upstream.Credentials, with the request's context, the caller's), each
// under an HTTP client span (OpenTelemetry's HTTP client conventions),
// a child of the call's span, whose trace context the request carries
// (traceparent, tracestate). Without a recording span in the context, no
// span: the request carries the context's trace context, if any.
type restTransport struct {
	base        http.RoundTripper // nil: http.DefaultTransport
	header      http.Header
	credentials func(ctx context.Context) (http.Header, error)
}

// RoundTrip sends req, on a copy, with the headers, credentials and trace
// context added. An error of Credentials fails the request (its text
// holds no secret).
func (t restTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	req = req.Clone(ctx)
	for k, vs := range t.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if t.credentials != nil {
		h, err := t.credentials(ctx)
		if err != nil {
			return nil, err
		}
		for k, vs := range h {
			req.Header[k] = append([]string(nil), vs...)
		}
	}
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		// No span, but the caller's trace context, as an MCP upstream gets
		// it (hop.go, traceMembers): none when ctx has none.
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
		return base.RoundTrip(req)
	}
	ctx, span := startRESTSpan(ctx, parent, req)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(restErrorType(err)))
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// startRESTSpan starts the client span of req under parent's tracer
// provider: named "METHOD /path/{template}" (the operation's, else the
// method alone), with the request's method, URL (its query's credentials
// redacted: redactedURL), server address and port, and route template.
func startRESTSpan(ctx context.Context, parent trace.Span, req *http.Request) (context.Context, trace.Span) {
	name := req.Method
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.URLFull(redactedURL(req.URL)),
		semconv.ServerAddress(req.URL.Hostname()),
	}
	if op, _ := ctx.Value(operationKey{}).(*openapi.Tool); op != nil {
		name += " " + op.Path
		attrs = append(attrs, semconv.URLTemplateKey.String(op.Path))
	}
	port, _ := strconv.Atoi(req.URL.Port())
	if port == 0 {
		port = 80
		if req.URL.Scheme == "https" {
			port = 443
		}
	}
	attrs = append(attrs, semconv.ServerPort(port))
	return parent.TracerProvider().Tracer(mcpconv.ScopeName).Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// restErrorType is error.type of a request that got no answer: timeout,
// else _OTHER.
func restErrorType(err error) string {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return mcpconv.ErrorTypeTimeout
	}
	return mcpconv.ErrorTypeOther
}

// secretQuery names, lowercase, the query parameters whose values a span
// never shows: OpenTelemetry's (AWSAccessKeyId, Signature, sig,
// X-Goog-Signature) and any whose name holds key, token, secret,
// password, signature or auth.
var secretQuery = []string{"sig", "key", "token", "secret", "password", "signature", "auth"}

// redactedURL is u as url.full shows it: without user information (a
// base has none: openapi.Load), each credential's value in the query
// "REDACTED".
func redactedURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery == "" {
		return c.String()
	}
	q := c.Query()
	for k := range q {
		lk := strings.ToLower(k)
		for _, s := range secretQuery {
			if lk == s || strings.Contains(lk, s) && s != "sig" {
				for i := range q[k] {
					q[k][i] = "REDACTED"
				}
			}
		}
	}
	c.RawQuery = q.Encode()
	return c.String()
}

// spanBody ends the request's span once the answer's body is read and
// closed.
type spanBody struct {
	io.ReadCloser
	span trace.Span
}

// Close closes the body and ends the span.
func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.span.End()
	return err
}
