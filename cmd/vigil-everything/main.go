package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/internal/gcheadroom"
	"github.com/vigil-mcp/vigil/internal/loopback"
	"github.com/vigil-mcp/vigil/internal/maxprocs"
	"github.com/vigil-mcp/vigil/redisshare"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// serverName is the name the server reports in serverInfo.
const serverName = "vigil-everything"

func main() {
	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vigil-everything:", err)
		os.Exit(1)
	}
}

// errNoTransport is returned by run when no transport flag was given.
var errNoTransport = errors.New("no transport chosen: pass -stdio or -http ADDR")

// run serves the fixtures as args say, on stdin and stdout, logging to
// stderr. When ctx is done it shuts the server down gracefully: in-flight
// requests get the shutdown grace period, then are cancelled. It returns
// nil when the client closes its input.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(serverName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(fs.Output(), "Usage: vigil-everything -stdio|-http ADDR [flags]\n\n"+
			"Serves the MCP conformance fixtures (tools, resources, prompts, completion,\n"+
			"logging, progress, sampling, elicitation, roots and multi round-trip inputs)\n"+
			"over standard input and output, or over Streamable HTTP at http://ADDR/mcp.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	useStdio := fs.Bool("stdio", false, "serve MCP on standard input and output")
	addr := fs.String("http", "", "serve MCP over Streamable HTTP on this address (endpoint /mcp), e.g. 127.0.0.1:8080")
	maxFrame := fs.Int("max-frame", stdio.DefaultMaxFrameSize, "largest stdio frame accepted, in bytes")
	grace := fs.Duration("shutdown-grace", 5*time.Second, "how long in-flight requests may run after SIGTERM or SIGINT")
	logLevel := fs.String("log-level", "info", "log level on stderr: debug, info, warn or error")
	redisURL := fs.String("redis", os.Getenv("VIGIL_REDIS_URL"), "with -http: share the sessions with the other replicas on Redis at this `URL` (rediss://[user@]host:port/db, rediss+sentinel://[user@]S1,S2,S3/master[/db] with the Sentinels' password in $VIGIL_REDIS_SENTINEL_PASSWORD, or rediss+cluster://[user@]N1,N2,N3; TLS, the user's password in $VIGIL_REDIS_PASSWORD; redis… only on loopback; default $VIGIL_REDIS_URL), with the replicas' cluster key in $VIGIL_CLUSTER_KEY (and the old one in $VIGIL_CLUSTER_KEY_PREVIOUS during a rotation)")
	redisCA := fs.String("redis-ca", os.Getenv("VIGIL_REDIS_CA"), "PEM `file` of the certificate authorities that Redis's certificate must chain to, instead of the system's (default $VIGIL_REDIS_CA)")
	redisPlaintext := fs.Bool("redis-insecure-plaintext", false, "accept a redis:// URL (no TLS) to a Redis that is not on loopback")
	maxSessions := fs.Int("max-sessions", 10000, "with -http: most concurrent 2025-era sessions; more initializes get 503")
	listChangedDelay := fs.Duration("list-changed-delay", server.DefaultListChangedDelay, "how long the server waits after a change to its tools, resources or prompts before it sends list_changed, coalescing the changes in between (0: at once)")
	resumable := fs.Bool("resumable", true, "with -http: keep each session's SSE events in memory so that a client resumes a stream with Last-Event-ID (false: no event store, as the shipped vigil)")
	overloadTarget := fs.Duration("overload-target", transport.DefaultShedTarget, "shed requests other than initialize and ping (HTTP 503 with Retry-After, stdio -32000) while requests wait longer than this to be read (90th percentile) with the CPUs busy, as the shipped vigil (0: never shed)")
	gcHeadroom := fs.Int("gc-headroom", gcheadroom.DefaultHeadroomMiB, gcheadroom.FlagUsage+", as the shipped vigil")
	allowPublic := fs.Bool("allow-public", false, "with -http: serve on a non-loopback address, to anyone who can reach it (the fixtures have no authentication)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *maxSessions <= 0 || *listChangedDelay < 0 || *gcHeadroom < 0 {
		return errors.New("-max-sessions must be positive, -list-changed-delay and -gc-headroom not negative")
	}
	if *useStdio == (*addr != "") {
		fs.Usage()
		return errNoTransport
	}
	if *addr != "" && !*allowPublic && !loopback.ListenAddr(*addr) {
		// Test fixtures with no authentication: not for a shared network.
		return fmt.Errorf("-http %s is not a loopback address: the fixtures have no authentication; pass -allow-public to serve them there anyway", *addr)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	shedder := transport.NewShedder(*overloadTarget) // nil for 0: sheds nothing
	opts := []server.Option{server.WithListChangedDelay(*listChangedDelay)}
	opts = append(opts, server.WithShedder(shedder)) // over HTTP the endpoint asks it, and answers 503
	if v := os.Getenv("VIGIL_REQUEST_STATE_KEY"); v != "" {
		// Replicas behind one load balancer sign requestState with one key.
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) < 32 {
			return errors.New("VIGIL_REQUEST_STATE_KEY must be the base64 of at least 32 bytes")
		}
		opts = append(opts, server.WithRequestStateKey(key))
	}
	var shared *redisshare.Shared
	if *redisURL != "" && *addr != "" {
		// Sessions shared with the other replicas on Redis: open before
		// the server, which broadcasts its changes through it.
		// What the replicas hand to Redis is signed and sealed with the
		// cluster key, the same on each: from the environment only.
		var keys [2][]byte
		for i, name := range []string{"VIGIL_CLUSTER_KEY", "VIGIL_CLUSTER_KEY_PREVIOUS"} {
			if v := strings.TrimSpace(os.Getenv(name)); v != "" {
				key, err := base64.StdEncoding.DecodeString(v)
				if err != nil || len(key) < 32 {
					return fmt.Errorf("%s must be the base64 of at least 32 random bytes (openssl rand -base64 48)", name)
				}
				keys[i] = key
			}
		}
		if keys[0] == nil {
			return errors.New("-redis needs VIGIL_CLUSTER_KEY, the base64 of at least 32 random bytes shared by every replica (openssl rand -base64 48)")
		}
		var err error
		if shared, err = redisshare.Open(ctx, redisshare.Config{
			URL: *redisURL, Password: os.Getenv("VIGIL_REDIS_PASSWORD"), SentinelPassword: os.Getenv("VIGIL_REDIS_SENTINEL_PASSWORD"),
			CAFile: *redisCA, AllowPlaintext: *redisPlaintext,
			Logger: logger, ClusterKey: keys[0], PreviousClusterKey: keys[1],
		}); err != nil {
			return err
		}
		defer func() { _ = shared.Close() }()
		opts = append(opts, shared.ServerOptions()...)
	}
	srv, err := newServer(logger, opts...)
	if err != nil {
		return err
	}
	if *addr != "" {
		return serveHTTP(ctx, srv, logger, httpConfig{addr: *addr, grace: *grace, maxSessions: *maxSessions, resumable: *resumable, gcHeadroom: uint64(*gcHeadroom) << 20}, shared)
	}
	// The shipped vigil's collector: a small heap under load collected
	// less often, the garbage of a burst returned at rest.
	defer gcheadroom.Start(uint64(*gcHeadroom) << 20).Stop()
	defer maxprocs.Start(logger).Stop() // one P under a core of load, as the shipped vigil
	conn := stdioConn(stdin, stdout, stdio.WithMaxFrameSize(*maxFrame))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), conn) }()
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace_seconds", grace.Seconds())
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown grace expired; in-flight requests were cancelled", "error", err)
	}
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-time.After(time.Second):
		return errors.New("a handler ignored cancellation; exiting anyway")
	}
}

// stdioConn returns the stdio transport on stdin and stdout. The process's
// own standard streams go through [stdio.Std], which makes pipes pollable so
// that closing the Conn interrupts a blocked read.
func stdioConn(stdin io.Reader, stdout io.Writer, opts ...stdio.Option) *stdio.Conn {
	if f, ok := stdin.(*os.File); ok && f == os.Stdin {
		if g, ok := stdout.(*os.File); ok && g == os.Stdout {
			return stdio.Std(opts...)
		}
	}
	return stdio.New(stdin, stdout, opts...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, server.ErrServerClosed) {
		return nil
	}
	return err
}

// newServer returns a server with every fixture registered. main and the
// tests build the server the same way.
func newServer(logger *slog.Logger, opts ...server.Option) (*server.Server, error) {
	s := server.New(append([]server.Option{
		server.WithImplementation(serverName, version),
		server.WithLogger(logger),
	}, opts...)...)
	err := errors.Join(
		addContentTools(s),
		addClientTools(s),
		addResources(s),
		addPrompts(s),
		addMRTRFixtures(s),
		addDiagnostics(s),
		addExtras(s),
		addTaskFixtures(s),
		addReconnection(s),
		addApps(s),
		addSkills(s),
	)
	if err != nil {
		return nil, fmt.Errorf("registering the fixtures: %w", err)
	}
	return s, nil
}

// httpConfig is what serveHTTP takes from the flags.
type httpConfig struct {
	addr        string
	grace       time.Duration
	maxSessions int
	resumable   bool   // SSE events kept in memory for Last-Event-ID (with -redis, Redis keeps them)
	gcHeadroom  uint64 // the collector tuner's headroom, in bytes (-gc-headroom)
}

// serveHTTP serves the fixtures at http://addr/mcp until ctx is done, then
// drains in-flight requests for up to grace.
func serveHTTP(ctx context.Context, srv *server.Server, logger *slog.Logger, cfg httpConfig, shared *redisshare.Shared) error {
	addr, grace := cfg.addr, cfg.grace
	opts := []streamable.Option{streamable.WithLogger(logger), streamable.WithMaxSessions(cfg.maxSessions)}
	if cfg.resumable {
		opts = append(opts, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	}
	if shared != nil {
		opts = append(opts, shared.Options()...) // its event store replaces the memory one
	}
	endpoint := streamable.New(srv, opts...)
	// The collector's tuner starts once the endpoint has taken its memory
	// budget from the operator's memory limit, which the tuner lowers
	// after each collection (see cmd/vigil's serve).
	defer gcheadroom.Start(cfg.gcHeadroom).Stop()
	defer maxprocs.Start(logger).Stop() // one P under a core of load, as the shipped vigil
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnContext: streamable.ConnContext}
	logger.Info("serving MCP", "url", "http://"+ln.Addr().String()+"/mcp")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if shared != nil {
		endpoint.Drain() // leave the cluster: the other replicas serve the sessions
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown grace expired; in-flight requests were cancelled", "error", err)
	}
	_ = endpoint.Close()
	hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
	defer hcancel()
	if err := hs.Shutdown(hctx); err != nil {
		// A connection a client opened as the endpoint closed counts as
		// busy for 5 s (net/http's StateNew rule): its request, if any,
		// would be refused anyway, so close it rather than fail the exit.
		logger.Warn("HTTP connections still open at exit", "error", err)
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
