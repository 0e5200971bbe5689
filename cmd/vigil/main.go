package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/cmd/internal/auditlog"
	"github.com/vigil-mcp/vigil/cmd/internal/buildversion"
	"github.com/vigil-mcp/vigil/cmd/internal/catalogfile"
	"github.com/vigil-mcp/vigil/cmd/internal/logsetup"
	"github.com/vigil-mcp/vigil/cmd/internal/procself"
	"github.com/vigil-mcp/vigil/cmd/internal/redislog"
	"github.com/vigil-mcp/vigil/cmd/internal/restpages"
	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/internal/maxprocs"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/otelsetup"
	"github.com/vigil-mcp/vigil/redisshare"

	"github.com/vigil-mcp/vigil/transport/stdio"
)

// pagesEvery is set by the tests alone, with -ldflags "-X
// main.pagesEvery=N": the GC tuner then releases the executable's pages
// every N rest intervals (half seconds) whatever the load, instead of once
// after each 30 s of rest, so that a test sees many releases, at idle and
// under load, in seconds (exepages_e2e_linux_test.go). "" in every build
// that ships.
var pagesEvery string

// ownPagemap is /proc/self/pagemap, opened before vigil made itself not
// dumpable (procself.Protect); nil: each release opens it.
var ownPagemap *os.File

func main() {
	// A sandboxed upstream's launcher is this program started again: it
	// confines itself and runs the upstream's command, never returning.
	gateway.SandboxMain()
	// The gateway's environment, memory and descriptors are out of reach
	// of its own user's other processes (its upstreams), and it leaves no
	// core dump; its pagemap, which it then could not open, is open before.
	ownPagemap = procself.Protect()
	// vigil serves no heap profile, so the runtime's sampling of
	// allocations (a stack walk every 512 KiB allocated; see
	// docs/perf/ROUNDS.md) would be work for no reader; it must be
	// set before the program allocates much.
	runtime.MemProfileRate = 0
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) || errors.Is(err, catalogfile.ErrLockWritten) {
			os.Exit(0)
		}
		if errors.Is(err, errVersion) {
			info, _ := debug.ReadBuildInfo()
			fmt.Println(buildversion.Line("vigil", buildVersion(), info))
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

// run serves as args and the environment say, logging to stderr, until
// ctx is done, a signal arrives, or (with -stdio) the input ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.discovery.PrintServerJSON { // the registry's server.json, and exit
		return servercard.Write(os.Stdout, cfg.discovery.ServerJSON(buildVersion()))
	}
	// Records are written to stderr in the background, so that no request
	// waits on it; the deferred Close, which runs last, writes what is
	// left before run returns.
	logOut := asyncwriter.New(stderr)
	defer func() { _ = logOut.Close() }()
	logger := newLogger(cfg, logOut)
	logsetup.OTelErrors(logger)
	warning, err := checkExposure(cfg, args)
	if err != nil {
		return err
	}
	if warning != "" {
		logger.Warn(warning, "addr", cfg.httpAddr)
	}
	audit, closeAudit, err := auditlog.Open(cfg.auditLog, cfg.auditBlock, logger)
	if err != nil {
		return err
	}
	defer closeAudit() // after the servers stopped: the last calls are in

	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	return serve(ctx, cfg, logger, logOut, audit, stop)
}

// serve builds the service of cfg and serves it until ctx is done;
// logOut and audit (nil without -audit-log) are the writers of the logs
// and the audit log, whose dropped lines it counts, and stop ends the
// signals' context.
func serve(ctx context.Context, cfg config, logger *slog.Logger, logOut, audit *asyncwriter.Writer, stop func()) error {
	// What /debug/vigil shows, and its trace ring, where spans go when
	// OTEL_* names no exporter: none with -stdio, nobody could read them.
	var page *debugpage.Recorder
	if cfg.debug && !cfg.stdio {
		page = debugpage.NewRecorder(debugpage.WithTraceRing(cfg.traceRing, 0))
	}
	registry := prometheus.NewRegistry()
	closeShared, err := openShared(ctx, &cfg, logger, registry)
	if err != nil {
		return err
	}
	defer closeShared()
	var auditOut io.Writer // a nil *asyncwriter.Writer would not be a nil io.Writer
	auditDropped := func() uint64 { return 0 }
	if audit != nil {
		auditOut, auditDropped = audit, audit.Dropped
	}
	f := &front{cfg: cfg, audit: auditOut, log: logger}
	defer f.close()
	pageOpts, closeTracing, err := pageOptions(ctx, cfg, page, f)
	if err != nil {
		return err
	}
	defer closeTracing()
	svc, err := newService(cfg, logger, registry, page, auditOut, append(f.options(), pageOpts...)...)
	if err != nil {
		return err
	}
	f.svc = svc
	// Collect less often while the live heap is small (it is, serving
	// requests: a few MiB); see package gcheadroom. Started once the
	// endpoint has taken its memory budget's default from the operator's
	// memory limit (GOMEMLIMIT): the tuner lowers the limit after each
	// collection, and a budget read from a tuned limit was an eighth of
	// that, too small for one large request (TestBytesOneCallerHoldsLargeCalls,
	// under load: 255 of 256 calls refused 503).
	every, _ := strconv.Atoi(pagesEvery)
	defer restpages.Start(cfg.gcHeadroomMiB, every, ownPagemap, logger).Stop()
	// Run on one P while the load is under a core; see package maxprocs.
	defer maxprocs.Start(logger).Stop()
	closeGateway, err := f.mountUpstreams(ctx, registry, logger)
	if err != nil {
		return err
	}
	defer closeGateway() // after serving: the calls in flight are done
	// Records the outcomes the last requests left waiting for their batch
	// and flushes the spans and metrics, before the log flush, when run
	// returns before serving (the serve methods do it themselves).
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.grace)
		defer cancel()
		_ = svc.Shutdown(sctx)
	}()
	if err := svc.Register(metrics.NewLogLinesDropped(logOut.Dropped)); err != nil {
		return err
	}
	if err := svc.Register(metrics.NewAuditLinesDropped(auditDropped)); err != nil {
		return err
	}
	context.AfterFunc(ctx, stop) // a second signal kills the process
	if cfg.stdio {
		if cfg.authEnabled() {
			svc.Logger.Warn("-auth-issuer guards HTTP requests only: the stdio client, the process that started vigil, is asked for no token and may use every tool")
		}
		return svc.ServeStdio(ctx, stdio.WithMaxFrameSize(cfg.maxFrame))
	}
	return svc.ListenAndServe(ctx, cfg.httpAddr, cfg.adminAddr)
}

// openShared opens the shared mode of -redis into cfg.shared, before the
// server, which broadcasts its changes through it; closeShared closes it.
func openShared(ctx context.Context, cfg *config, logger *slog.Logger, registry prometheus.Registerer) (closeShared func(), err error) {
	if cfg.redisURL == "" {
		return func() {}, nil
	}
	// go-redis's own log, for the process: rate-limited, through logger.
	redis.SetLogger(redislog.New(logger, cfg.redisPassword, cfg.redisSentinelPassword))
	cfg.shared, err = redisshare.Open(ctx, redisshare.Config{
		URL: cfg.redisURL, Password: cfg.redisPassword, SentinelPassword: cfg.redisSentinelPassword,
		CAFile: cfg.redisCA, AllowPlaintext: cfg.redisPlaintext, UnreadyInOutage: cfg.redisOutageUnready,
		MaxSessionEventBytes: cfg.maxSessionEvents, Logger: logger, Registerer: registry,
		ClusterKey: cfg.clusterKey, PreviousClusterKey: cfg.clusterKeyPrev,
	})
	if err != nil {
		return nil, err
	}
	shared := cfg.shared
	return func() { _ = shared.Close() }, nil
}

// pageOptions returns the options of the live page (page; nil: none):
// each upstream's state on it and, with -trace-ring 0, where the page
// keeps no trace, a tracer provider that sends spans where OTEL_* says or
// nowhere, not to the page's ring; closeTracing flushes that provider.
func pageOptions(ctx context.Context, cfg config, page *debugpage.Recorder, f *front) (opts []vigil.Option, closeTracing func(), err error) {
	closeTracing = func() {}
	if page == nil {
		return nil, closeTracing, nil
	}
	if len(cfg.upstreams) > 0 {
		opts = append(opts, vigil.WithPage(page, debugpage.WithStatus(f.upstreamLines)))
	}
	if cfg.traceRing == 0 {
		none := func(context.Context) (sdktrace.SpanExporter, error) { return nil, nil }
		tp, shutdown, err := otelsetup.TracerProvider(ctx, otelsetup.WithService("vigil", buildVersion()),
			otelsetup.WithFallbackExporter(none), otelsetup.WithConsoleWriter(os.Stderr),
			otelsetup.WithGRPC(otelsetup.GRPCExporters{
				Spans: func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracegrpc.New(ctx) },
			}))
		if err != nil {
			return nil, nil, err
		}
		closeTracing = func() { _ = shutdown(context.Background()) }
		opts = append(opts, vigil.WithTracerProvider(tp))
	}
	return opts, closeTracing, nil
}

// newLogger returns the logger of cfg's -log-format and -log-level,
// writing to stderr (logsetup.New).
func newLogger(cfg config, stderr io.Writer) *slog.Logger {
	return logsetup.New(cfg.logFormat, cfg.logLevel, stderr)
}
