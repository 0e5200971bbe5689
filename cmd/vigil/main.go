// Command vigil is the Vigil MCP service: MCP over Streamable HTTP at
// http://127.0.0.1:8080/mcp by default (-http ADDR to change it), or over
// standard input and output with -stdio. It serves two demo tools: echo and
// sleep.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("vigil", flag.ContinueOnError)
	fs.SetOutput(stderr)
	useStdio := fs.Bool("stdio", false, "serve MCP on standard input and output instead of HTTP")
	addr := fs.String("http", "127.0.0.1:8080", "listen address of the HTTP endpoint (MCP at /mcp)")
	maxFrame := fs.Int("max-frame", stdio.DefaultMaxFrameSize, "largest stdio frame accepted, in bytes")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long in-flight requests may run after SIGTERM or SIGINT")
	logLevel := fs.String("log-level", "info", "log level on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := server.New(server.WithImplementation("vigil", version), server.WithLogger(logger))
	if err := addDemoTools(srv); err != nil {
		return err
	}
	if *useStdio {
		return serveStdio(ctx, srv, logger, *maxFrame, *grace)
	}
	return serveHTTP(ctx, srv, logger, *addr, *grace)
}

func serveStdio(ctx context.Context, srv *server.Server, logger *slog.Logger, maxFrame int, grace time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), stdio.Std(stdio.WithMaxFrameSize(maxFrame))) }()
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-ctx.Done():
	}
	shutdown(srv, logger, grace)
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-time.After(time.Second):
		return errors.New("a handler ignored cancellation; exiting anyway")
	}
}

func serveHTTP(ctx context.Context, srv *server.Server, logger *slog.Logger, addr string, grace time.Duration) error {
	endpoint := streamable.New(srv, streamable.WithLogger(logger))
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving MCP", "url", "http://"+ln.Addr().String()+"/mcp")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown(srv, logger, grace)
	_ = endpoint.Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdown drains in-flight requests for up to grace, then cancels the rest.
func shutdown(srv *server.Server, logger *slog.Logger, grace time.Duration) {
	logger.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown grace expired; in-flight requests were cancelled", "error", err)
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, server.ErrServerClosed) {
		return nil
	}
	return err
}
