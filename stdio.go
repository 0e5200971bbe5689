package vigil

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// ServeStdio serves one MCP session on standard input and output until
// the input ends or ctx is done; then in-flight requests get the shutdown
// grace, the outcomes are recorded and the spans and metrics flushed. It
// returns nil when the input ended or ctx asked for the end, and an error
// when a handler ignored its cancellation for a second after the grace.
// opts configure the stdio transport.
func (s *Service) ServeStdio(ctx context.Context, opts ...stdio.Option) error {
	if s.err != nil {
		return s.err
	}
	defer s.closeInstruments()
	conns := s.Instrumentation.ConnServer(s.Server, telemetry.TransportStdio)
	served := make(chan error, 1)
	go func() { served <- conns.Serve(context.Background(), stdio.Std(opts...)) }()
	select {
	case err := <-served:
		return ignoreClosed(err)
	case <-ctx.Done():
	}
	s.stop()
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
