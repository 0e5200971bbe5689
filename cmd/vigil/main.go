// Command vigil is the Vigil MCP service. With no configuration it serves
// MCP over Streamable HTTP at http://127.0.0.1:8080/mcp, with Prometheus
// metrics at /metrics, liveness at /healthz, readiness at /readyz and a live
// debug page at /debug/vigil (sessions, requests in flight, recent
// cancellations and dropped responses, and recent traces, which stay in
// memory unless OTEL_* configures an exporter). With -stdio it serves one
// session on standard input and output instead; standard output then
// carries only MCP, and logs go to standard error.
//
// Every request goes through the standard middleware chain: tracing,
// metrics, logging, panic recovery, a timeout and a per-tool concurrency
// limit. The demo tools are echo, sleep, countdown (progress),
// convert_temperature (typed input and output) and confirm_action
// (elicitation).
//
// Configuration is by flags, each with an environment variable as its
// default, and the standard OTEL_* variables; run vigil -h for the list.
// On SIGTERM or SIGINT, vigil turns not ready, lets in-flight requests run
// for the shutdown grace, then exits.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

// config is what flags and the environment select.
type config struct {
	httpAddr        string
	stdio           bool
	grace           time.Duration
	logLevel        slog.Level
	logFormat       string
	maxFrame        int
	maxBody         int64
	maxSessions     int
	maxInFlight     int
	idleTimeout     time.Duration
	allowedHosts    []string
	requestTimeout  time.Duration
	toolConcurrency int
	traceRing       int
	debug           bool
	stateKey        []byte // from VIGIL_REQUEST_STATE_KEY only: a secret is no flag
}

// envPrefix starts the name of every VIGIL_* variable.
const envPrefix = "VIGIL_"

// parseConfig reads the configuration from args and, for flags not given,
// from the environment through getenv (VIGIL_ and the flag's name in upper
// case, dashes as underscores; -http is VIGIL_HTTP_ADDR). An empty variable
// counts as unset. -h prints the usage to out and returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var cfg config
	var allowedHosts string
	fs := flag.NewFlagSet("vigil", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8080", "`address` the HTTP server listens on: MCP at /mcp, and /metrics, /healthz, /readyz, /debug/vigil")
	fs.BoolVar(&cfg.stdio, "stdio", false, "serve one MCP session on standard input and output instead of HTTP")
	fs.DurationVar(&cfg.grace, "shutdown-grace", 10*time.Second, "how long in-flight requests may run after SIGTERM or SIGINT before they are cancelled")
	fs.TextVar(&cfg.logLevel, "log-level", slog.LevelInfo, "`level` of the logs on standard error: debug, info, warn or error")
	fs.StringVar(&cfg.logFormat, "log-format", "text", "`format` of the logs on standard error: text or json")
	fs.IntVar(&cfg.maxFrame, "max-frame", stdio.DefaultMaxFrameSize, "largest stdio message accepted, in `bytes`")
	fs.Int64Var(&cfg.maxBody, "max-body", 4<<20, "largest HTTP request body accepted, in `bytes`")
	fs.IntVar(&cfg.maxSessions, "max-sessions", 10000, "most concurrent HTTP sessions (2025 protocol versions); more initializes get 503")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 256, "most requests in flight per session; more are refused as busy")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 30*time.Minute, "end an HTTP session that has seen no request for this long (0: never)")
	fs.StringVar(&allowedHosts, "allowed-hosts", "", "comma-separated Host `names` accepted besides loopback names (DNS rebinding protection)")
	fs.DurationVar(&cfg.requestTimeout, "request-timeout", time.Minute, "how long one request's handler may run before it is cancelled and answered -32001 (0: no limit)")
	fs.IntVar(&cfg.toolConcurrency, "tool-concurrency", 256, "most concurrent calls of each tool, over all sessions; a call over it waits up to 1s for a slot, then is answered -32000 busy (0: no limit)")
	fs.IntVar(&cfg.traceRing, "trace-ring", defaultRingTraces, "traces kept in memory for /debug/vigil when OTEL_* configures no exporter (0: drop them)")
	fs.BoolVar(&cfg.debug, "debug", true, "serve the /debug/vigil page (sessions, requests in flight, recent traces)")
	env := map[string]string{"http": envPrefix + "HTTP_ADDR"}
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := env[f.Name]
		if !ok {
			name = envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			env[f.Name] = name
		}
		f.Usage += " (env " + name + ")"
	})
	fs.Usage = func() { usage(fs) }

	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(env[f.Name])
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", env[f.Name], v, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return config{}, err
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if v := getenv(envPrefix + "REQUEST_STATE_KEY"); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) < 32 {
			return config{}, fmt.Errorf("%sREQUEST_STATE_KEY must be the base64 of at least 32 bytes", envPrefix)
		}
		cfg.stateKey = key
	}
	for h := range strings.SplitSeq(allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.allowedHosts = append(cfg.allowedHosts, h)
		}
	}
	switch {
	case cfg.logFormat != "text" && cfg.logFormat != "json":
		return config{}, fmt.Errorf("-log-format %q: want text or json", cfg.logFormat)
	case cfg.grace < 0, cfg.requestTimeout < 0, cfg.idleTimeout < 0:
		return config{}, errors.New("-shutdown-grace, -request-timeout and -idle-timeout must not be negative")
	case cfg.maxFrame <= 0 || cfg.maxBody <= 0 || cfg.maxSessions <= 0 || cfg.maxInFlight <= 0:
		return config{}, errors.New("-max-frame, -max-body, -max-sessions and -max-in-flight must be positive")
	case cfg.toolConcurrency < 0 || cfg.traceRing < 0:
		return config{}, errors.New("-tool-concurrency and -trace-ring must not be negative")
	}
	return cfg, nil
}

func usage(fs *flag.FlagSet) {
	w := fs.Output()
	_, _ = fmt.Fprint(w, `Usage: vigil [flags]

Vigil serves MCP over Streamable HTTP, by default at http://127.0.0.1:8080/mcp,
or with -stdio over standard input and output. The HTTP server also serves:

  /metrics       Prometheus metrics (OpenMetrics with exemplars when asked)
  /healthz       liveness: 200 while the process runs
  /readyz        readiness: 200 while serving, 503 once shutdown has begun
  /debug/vigil   live page: sessions, requests in flight, recent cancellations
                 and dropped responses, recent traces (?format=json for JSON)

Each flag's default comes from the environment variable named after it.

Flags:
`)
	fs.PrintDefaults()
	_, _ = fmt.Fprint(w, `
OpenTelemetry (standard variables):
  OTEL_TRACES_EXPORTER           otlp, console (to standard error) or none;
                                 unset with no OTLP endpoint: traces stay in
                                 memory for /debug/vigil (-trace-ring), and
                                 with -stdio they are dropped
  OTEL_EXPORTER_OTLP_ENDPOINT    OTLP endpoint (also ..._TRACES_ENDPOINT);
                                 setting it selects otlp
  OTEL_EXPORTER_OTLP_PROTOCOL    http/protobuf (default) or grpc
  OTEL_EXPORTER_OTLP_HEADERS     and the other OTEL_EXPORTER_OTLP_* settings
  OTEL_TRACES_SAMPLER            and OTEL_TRACES_SAMPLER_ARG
                                 (default parentbased_always_on)
  OTEL_SERVICE_NAME              default vigil
  OTEL_RESOURCE_ATTRIBUTES       key=value,...
  OTEL_SDK_DISABLED              true: no tracing
  OTEL_BSP_*                     batch span processor settings
Trace context (W3C traceparent, tracestate, baggage) is read from and
written to each request's params._meta.

Secrets (environment only):
  VIGIL_REQUEST_STATE_KEY        base64 of >= 32 bytes that sign the
                                 requestState of 2026-07-28 input-required
                                 results; every replica behind one load
                                 balancer needs the same key (default: a
                                 random key per process)

Signals: SIGTERM or SIGINT starts a graceful shutdown (/readyz turns 503,
new requests are refused, in-flight ones get -shutdown-grace); a second
signal exits at once.
`)
}

// run serves as args and the environment say, logging to stderr, until
// ctx is done, a signal arrives, or (with -stdio) the input ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	// Records are written to stderr in the background, so that no request
	// waits on it; the deferred Close, which runs last, writes what is
	// left before run returns.
	logOut := asyncwriter.New(stderr)
	defer func() { _ = logOut.Close() }()
	logger := newLogger(cfg, logOut)
	logOTelErrors(logger)

	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ringTraces := cfg.traceRing
	if cfg.stdio || !cfg.debug {
		ringTraces = 0 // nobody could read them
	}
	in, err := newInstruments(ctx, ringTraces)
	if err != nil {
		return err
	}
	if err := in.registry.Register(telemetry.NewLogLinesDropped(logOut.Dropped)); err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := in.shutdown(fctx); err != nil {
			logger.Warn("flushing traces failed", "error", err)
		}
	}()
	logger.Info("tracing", "exporter", in.exporter)

	events := newEventLog()
	srv, inst, err := newServer(cfg, logger, in, events)
	if err != nil {
		return err
	}
	if cfg.stdio {
		return serveStdio(ctx, stop, srv, inst, logger, cfg)
	}
	return serveHTTP(ctx, stop, srv, inst, in, events, logger, cfg)
}

// newLogger returns the process's logger, on stderr (a buffer in front of
// it, in run), adding the trace,
// span, session and request ids of a handler's context to its records.
func newLogger(cfg config, stderr io.Writer) *slog.Logger {
	var h slog.Handler = newTextHandler(stderr, cfg.logLevel) // slog.TextHandler's output, cheaper
	if cfg.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})
	}
	return slog.New(middleware.LogHandler(h))
}
