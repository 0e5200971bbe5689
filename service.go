package vigil

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// outcomeBatch is how many requests' outcomes the server records at a
// time (server.WithOutcomeBatches); /metrics and the page flush them first.
const outcomeBatch = 32

// defaultGrace is how long in-flight requests may run after the serving
// context is done, unless WithShutdownGrace says otherwise.
const defaultGrace = 10 * time.Second

// A Service is an instrumented MCP server and what observes it: add tools,
// resources and prompts to its Server, then serve it with
// [Service.ListenAndServe] or [Service.ServeStdio], or mount
// [Service.Endpoint] and [Service.AdminHandler] on servers of your own and
// stop them with [Service.Shutdown]. A Service serves once.
//
// Its parts are public, for what the Service does not do itself; replace
// none of them.
type Service struct {
	// Server is the MCP server: tools, resources, prompts and the rest.
	Server *server.Server
	// Instrumentation is the middleware chain: tracing, metrics, logging.
	Instrumentation *middleware.Instrumentation
	// Page records what the live page (/debug/vigil) shows; nil with
	// WithPage(nil).
	Page *debugpage.Recorder
	// Registry holds the metrics /metrics serves: the MCP metrics, and
	// the Go runtime's and the process's.
	Registry *prometheus.Registry
	// TracerProvider traces the requests.
	TracerProvider trace.TracerProvider
	// Logger is the service's logger, for the operator (standard error by
	// default), which adds a request's ids to the lines logged in its
	// context; server.ClientLogger writes to a request's client instead.
	Logger *slog.Logger

	name, version string
	cfg           config
	err           error // New's; returned by Err and the serve methods
	in            *instruments
	ready         atomic.Bool    // serving, and not shutting down
	handshook     atomic.Bool    // a readiness handshake was answered (readiness.go)
	handshakeMu   sync.Mutex     // guards handshakeDone and handshakeErr
	handshakeDone chan struct{}  // closed when the handshake under way ends; nil: none under way
	handshakeErr  error          // the last handshake's
	handshakes    sync.WaitGroup // the handshake under way, which stopServing waits for

	build    sync.Once // the endpoint and the admin handler, at first use
	endpoint *streamable.Endpoint
	admin    http.Handler

	shutdown    sync.Once
	shutdownErr error
	flush       sync.Once
}

// New returns the service name at version, with opts applied first. Spans
// go where the OpenTelemetry environment variables say (OTEL_TRACES_EXPORTER,
// OTEL_EXPORTER_OTLP_ENDPOINT and the rest of the OTEL_* the SDK reads)
// or, when they name no exporter, to the live page's trace ring; OTEL_METRICS_EXPORTER
// may push the metrics too. An error in opts or the environment is
// returned by [Service.Err] and by the serve methods; the Server is then
// bare, so that registering tools still works.
func New(name, version string, opts ...Option) *Service {
	cfg := config{grace: defaultGrace}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if cfg.logger != nil {
		h = cfg.logger.Handler()
	}
	s := &Service{Logger: slog.New(middleware.LogHandler(h)), name: name, version: version, cfg: cfg}
	if !cfg.pageSet {
		cfg.page = debugpage.NewRecorder()
	}
	s.Page = cfg.page
	if err := s.instrument(); err != nil {
		s.err = err
		s.Server = server.New(server.WithImplementation(name, version))
	}
	return s
}

// instrument builds the instruments, the instrumentation and the server.
func (s *Service) instrument() error {
	var ring func() sdktrace.SpanExporter
	if s.Page != nil {
		ring = s.Page.SpanExporter
	}
	in, err := newInstruments(context.Background(), s.name, s.version, s.cfg.registry, s.cfg.tracer, s.cfg.otlpGRPC, ring)
	if err != nil {
		return err
	}
	instOpts := []middleware.InstrumentationOption{
		middleware.WithTracerProvider(in.tracer),
		middleware.WithPropagators(in.propagator),
		middleware.WithRegisterer(in.registry),
		middleware.WithRequestLog(s.Logger),
	}
	inst, err := middleware.NewInstrumentation(append(instOpts, s.cfg.instOpts...)...)
	if err == nil {
		// NewInstrumentation registered the MCP collector with the
		// registry; OTLP pushes it too.
		err = in.pushed.Register(inst.Collector())
	}
	if err != nil {
		return errors.Join(err, in.shutdown(context.Background()))
	}
	srvOpts := append(inst.ServerOptions(),
		server.WithImplementation(s.name, s.version),
		server.WithLogger(s.Logger),
		// Each request's span end, metrics, log line and page counts run in
		// batches, off its way out; /metrics and the page flush them first.
		server.WithOutcomeBatches(outcomeBatch, 0),
	)
	if s.Page != nil {
		// The page's counts and events: it sees every request, those the
		// chain refuses too.
		srvOpts = append(srvOpts, s.Page.ServerOption())
	}
	s.in, s.Instrumentation, s.Registry, s.TracerProvider = in, inst, in.registry, in.tracer
	s.Server = server.New(append(srvOpts, s.cfg.serverOpts...)...)
	s.Logger.Info("tracing", "exporter", in.exporter)
	s.Logger.Info("metrics", "prometheus", "/metrics", "otel_exporter", in.metricsExporter)
	return nil
}

// Err returns the error that New met building the service, or nil.
func (s *Service) Err() error { return s.err }

// Register registers c with the Registry that /metrics serves and with the
// metrics that OTEL_METRICS_EXPORTER pushes.
func (s *Service) Register(c prometheus.Collector) error {
	if s.err != nil {
		return s.err
	}
	return s.in.register(c)
}

// Shutdown stops the service in the order its parts need: /readyz turns
// 503; the endpoint admits no more requests and hands its streams back
// (Endpoint.Drain); the Server refuses new requests and lets those in
// flight run until ctx is done, then cancels them (Server.Shutdown); the
// endpoint closes, ending its sessions' streams; the outcomes still
// batched are recorded and the spans and metrics flushed. Shut your HTTP
// servers down after it. It returns ctx's error when requests had to be
// cancelled.
func (s *Service) Shutdown(ctx context.Context) error {
	err := s.stopServing(ctx)
	s.closeInstruments()
	return err
}

// stopServing is Shutdown but for the instruments, once.
func (s *Service) stopServing(ctx context.Context) error {
	s.shutdown.Do(func() {
		if s.err != nil {
			s.shutdownErr = s.err
			return
		}
		s.handshakeMu.Lock() // readyNow starts no handshake once this is false
		s.ready.Store(false)
		s.handshakeMu.Unlock()
		if s.endpoint != nil {
			s.endpoint.Drain()
		}
		s.shutdownErr = s.Server.Shutdown(ctx)
		if s.endpoint != nil {
			_ = s.endpoint.Close()
		}
		s.handshakes.Wait() // its requests ended with the Server's
	})
	return s.shutdownErr
}

// closeInstruments records the outcomes still batched and flushes the
// spans and the metrics, once.
func (s *Service) closeInstruments() {
	s.flush.Do(func() {
		if s.err != nil {
			return
		}
		_ = s.Server.Close()
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.in.shutdown(fctx); err != nil {
			s.Logger.Warn("flushing traces or metrics failed", "error", err)
		}
	})
}
