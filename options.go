package vigil

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/otelsetup"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// An Option configures a [Service]; [New] applies them, in order, before
// anything is built. A nil Option is ignored.
type Option interface{ apply(*config) }

// option is an [Option] made of a function.
type option func(*config)

func (f option) apply(c *config) { f(c) }

// config is what the options select.
type config struct {
	logger       *slog.Logger
	tracer       trace.TracerProvider    // nil: from the OTEL_* environment
	otlpGRPC     otelsetup.GRPCExporters // WithOTLPGRPC
	pageSet      bool                    // WithPage was given
	page         *debugpage.Recorder
	pageOpts     []debugpage.HandlerOption
	serverOpts   []server.Option
	instOpts     []middleware.InstrumentationOption
	endpointOpts []streamable.Option
	allowPublic  bool
	allowedHosts []string
	readiness    func() error
	readyDetail  func() string                                           // WithReadinessDetail
	bodyTimeout  time.Duration                                           // 0: 30s; < 0: none
	idleTimeout  time.Duration                                           // 0: 2 minutes; < 0: none
	connContexts []func(ctx context.Context, c net.Conn) context.Context // after the service's
	front        Front
	grace        time.Duration
	registry     *prometheus.Registry    // nil: a registry of its own
	admin        map[string]http.Handler // WithAdminHandler, by pattern
}

// WithLogger sets the operator's logger of the service, its requests and
// its users' handlers ([Service.Logger]; what a handler sends the client
// goes through [server.ClientLogger]); its handler is wrapped with
// [middleware.LogHandler], so that each line logged in a request's context
// carries its trace, span, session and request ids. By default the
// service logs at Info in slog's text format on standard error.
func WithLogger(l *slog.Logger) Option {
	return option(func(c *config) { c.logger = l })
}

// WithTracerProvider traces requests with tp instead of the provider built
// from the OTEL_* environment (and the live page's ring when it names no
// exporter); the caller owns tp and shuts it down.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option(func(c *config) { c.tracer = tp })
}

// WithOTLPGRPC lets OTEL_EXPORTER_OTLP_PROTOCOL=grpc (or its per-signal
// variables) send spans and metrics over OTLP/gRPC, with the exporters
// that spans and metrics build: the constructors of OpenTelemetry's gRPC
// exporters, which read the OTEL_EXPORTER_OTLP_* environment,
//
//	vigil.WithOTLPGRPC(otlptracegrpc.New, otlpmetricgrpc.New)
//
// each called at most once, with ctx alone, when the environment asks for
// grpc. Without it a service sends OTLP over HTTP only, links no gRPC, and
// New fails when the environment asks for grpc.
func WithOTLPGRPC[S sdktrace.SpanExporter, M sdkmetric.Exporter, SO, MO any](spans func(ctx context.Context, opts ...SO) (S, error), metrics func(ctx context.Context, opts ...MO) (M, error)) Option {
	return option(func(c *config) {
		c.otlpGRPC = otelsetup.GRPCExporters{
			Spans: func(ctx context.Context) (sdktrace.SpanExporter, error) {
				e, err := spans(ctx)
				if err != nil {
					return nil, err
				}
				return e, nil
			},
			Metrics: func(ctx context.Context) (sdkmetric.Exporter, error) {
				e, err := metrics(ctx)
				if err != nil {
					return nil, err
				}
				return e, nil
			},
		}
	})
}

// WithRegistry sets the Prometheus registry that /metrics serves, for
// collectors registered with it before New; the service registers the MCP
// metrics and the Go runtime's and the process's collectors with it. By
// default the service has a registry of its own.
func WithRegistry(r *prometheus.Registry) Option {
	return option(func(c *config) { c.registry = r })
}

// WithPage sets the live page's recorder and the options of its handler
// (/debug/vigil); a nil rec serves no page, and routine traces then go
// nowhere unless OTEL_* names an exporter. By default the page has a
// [debugpage.NewRecorder] of its own.
func WithPage(rec *debugpage.Recorder, opts ...debugpage.HandlerOption) Option {
	return option(func(c *config) { c.pageSet, c.page, c.pageOpts = true, rec, opts })
}

// WithServerOptions adds options of the [server.Server], after the
// service's own (implementation, logger, instrumentation, outcome
// batches): such as its timeout, concurrency limit and result bound
// (server.WithTimeout, server.WithConcurrencyLimit,
// server.WithMaxResultBytes).
func WithServerOptions(opts ...server.Option) Option {
	return option(func(c *config) { c.serverOpts = append(c.serverOpts, opts...) })
}

// WithInstrumentation adds options of the [middleware.Instrumentation]
// (the audit log, rate limits, what traces hold, ...), after the service's
// own (tracer provider, propagators, registry, logger, the page's hooks).
func WithInstrumentation(opts ...middleware.InstrumentationOption) Option {
	return option(func(c *config) { c.instOpts = append(c.instOpts, opts...) })
}

// WithEndpointOptions adds options of the Streamable HTTP endpoint (limits,
// quotas, sessions shared on Redis, ...), after the service's own (logger,
// allowed hosts, the counting of refusals and cut streams).
func WithEndpointOptions(opts ...streamable.Option) Option {
	return option(func(c *config) { c.endpointOpts = append(c.endpointOpts, opts...) })
}

// WithAllowPublic lets [Service.ListenAndServe] serve /mcp on an address
// other than loopback, which it refuses by default: something must then
// authorize the requests (a [Front], or a proxy in front), and the admin
// endpoints need a listener of their own.
func WithAllowPublic() Option {
	return option(func(c *config) { c.allowPublic = true })
}

// WithAllowedHosts sets the Host names accepted, besides loopback names,
// by /mcp and the admin endpoints of a loopback listener (protection
// against DNS rebinding; see [streamable.WithAllowedHosts]).
func WithAllowedHosts(hosts ...string) Option {
	return option(func(c *config) { c.allowedHosts = append(c.allowedHosts, hosts...) })
}

// WithAdminHandler serves h at pattern (an [http.ServeMux] pattern) among
// the admin endpoints (/metrics, /healthz, ...), on the admin listener
// when there is one, behind the same Host check as /metrics. The admin
// endpoints authenticate no one: h must be an operator's tool, for a
// network only operators reach.
func WithAdminHandler(pattern string, h http.Handler) Option {
	return option(func(c *config) {
		if c.admin == nil {
			c.admin = map[string]http.Handler{}
		}
		c.admin[pattern] = h
	})
}

// WithReadiness adds a check to /readyz and the live page: while check
// returns an error, /readyz answers 503 with its text. The service is
// otherwise ready once it serves and has answered its readiness handshake
// (an in-process MCP initialize, made by the first /readyz after check
// passes), until the start of its shutdown.
func WithReadiness(check func() error) Option {
	return option(func(c *config) { c.readiness = check })
}

// WithReadinessDetail adds what detail returns, lines ending in a newline,
// to the 200 answer of /readyz after "ready": the state of what the
// service is ready without (such as a gateway's upstreams that readiness
// does not require). It is called on every such answer, and must hold
// nothing secret: /readyz asks for no authorization.
func WithReadinessDetail(detail func() string) Option {
	return option(func(c *config) { c.readyDetail = detail })
}

// WithHTTPTimeouts sets how long the HTTP servers of
// [Service.ListenAndServe] wait for a request's body from the request's
// start (30s by default) and keep an idle keep-alive connection open (2
// minutes by default). A negative value means no limit; 0 keeps the
// default.
func WithHTTPTimeouts(body, idle time.Duration) Option {
	return option(func(c *config) { c.bodyTimeout, c.idleTimeout = body, idle })
}

// WithConnContext adds f to the connection contexts of the HTTP servers of
// [Service.ListenAndServe]: each connection's context goes through the
// service's own (the client's address, the socket the shedder reads), then
// through each f, in the order given.
func WithConnContext(f func(ctx context.Context, c net.Conn) context.Context) Option {
	return option(func(c *config) { c.connContexts = append(c.connContexts, f) })
}

// A Front makes what faces the clients of the MCP endpoint, such as an
// authorization guard. Called by [Service.ListenAndServe] once it listens
// on addr, it makes the endpoint of srv with opts and whatever the front
// hands the endpoint itself (as the OAuth resource server's Endpoint
// method does), and returns it with the handler of /mcp (the endpoint, or
// what is in front of it) and the handlers of the paths anyone may read
// beside it (such as the OAuth protected resource metadata), by pattern.
type Front func(ctx context.Context, addr net.Addr, srv streamable.Server, opts ...streamable.Option) (endpoint *streamable.Endpoint, mcp http.Handler, public map[string]http.Handler, err error)

// WithFront sets the front of /mcp for [Service.ListenAndServe], which
// then makes the endpoint through it. By default /mcp is served as is.
func WithFront(f Front) Option {
	return option(func(c *config) { c.front = f })
}

// WithShutdownGrace sets how long in-flight requests may run once the
// serving context is done before they are cancelled (default 10s).
func WithShutdownGrace(d time.Duration) Option {
	return option(func(c *config) { c.grace = d })
}
