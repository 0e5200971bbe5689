// Command vigil is the Vigil MCP service. For now it serves MCP over its
// standard input and output (vigil -stdio), with two demo tools: echo and
// sleep.
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
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
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
	useStdio := fs.Bool("stdio", false, "serve MCP on standard input and output (the only mode until HTTP lands)")
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
	_ = *useStdio // stdio is the default until the HTTP transport lands

	// A write to a stdout whose reader is gone must fail with EPIPE, not
	// kill the process with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := server.New(server.WithImplementation("vigil", version), server.WithLogger(logger))
	if err := addDemoTools(srv); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), stdio.Std(stdio.WithMaxFrameSize(*maxFrame))) }()
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", *grace)
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

func ignoreClosed(err error) error {
	if errors.Is(err, server.ErrServerClosed) {
		return nil
	}
	return err
}
