package middleware

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// metricsObserver is the observer of [NewInstrumentation]'s metrics
// (serverOption registers its hooks): it records in m what only the
// session core sees (sessions active and their duration by the cause that
// ended them, responses dropped by reason, failed writes by class,
// server-to-client requests failed at close, and messages rejected before
// a handler by reason; the transport label comes from the Serve context,
// see mcpconv.ContextWithTransport), while the chain records the requests. It is also the collector
// NewInstrumentation registers: each of its reads first flushes the
// outcome batches of the servers it observes (server.WithOutcomeBatches),
// so that a scrape counts every request answered so far. It is safe for
// concurrent use.
type metricsObserver struct {
	m *metrics.Metrics

	mu      sync.Mutex
	servers []*serverhook.Server // every server it was registered with
}

var (
	_ serverhook.Wired     = (*metricsObserver)(nil)
	_ prometheus.Collector = (*metricsObserver)(nil)
)

// serverOption returns the option that registers o's hooks with a server
// and hands o what the server lends (WireServer).
func (o *metricsObserver) serverOption() server.Option {
	return wiredOption{Option: server.WithObserver(o.hooks()), Wired: o}
}

// hooks returns o's hooks: what the chain cannot see.
func (o *metricsObserver) hooks() server.Observer {
	return server.Observer{
		SessionStarted:  o.sessionStarted,
		SessionEnded:    o.sessionEnded,
		ResponseDropped: o.responseDropped,
		WriteFailed:     o.writeFailed,
		OutgoingFailed:  o.outgoingFailed,
		MessageRejected: o.messageRejected,
	}
}

// wiredOption is a server.Option that server.New also hands what the
// server lends (serverhook.Wired): server.WithObserver's, for an observer
// that needs the server's outcome flush or the methods it serves.
type wiredOption struct {
	server.Option
	serverhook.Wired
}

// WireServer keeps what s lends, for the flush before a read and the
// series of what s serves (see Instrumentation.ConnServer).
func (o *metricsObserver) WireServer(s *serverhook.Server) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.servers = append(o.servers, s)
}

// server returns what the server id lent, nil when o does not observe it.
func (o *metricsObserver) server(id any) *serverhook.Server {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := slices.IndexFunc(o.servers, func(s *serverhook.Server) bool { return s.ID == id })
	if i < 0 {
		return nil
	}
	return o.servers[i]
}

// Describe sends the descriptors of the metrics.
func (o *metricsObserver) Describe(ch chan<- *prometheus.Desc) { o.m.Describe(ch) }

// Collect flushes the servers' outcome batches, then sends the metrics.
func (o *metricsObserver) Collect(ch chan<- prometheus.Metric) {
	o.mu.Lock()
	servers := slices.Clone(o.servers)
	o.mu.Unlock()
	for _, s := range servers {
		s.Flush()
	}
	o.m.Collect(ch)
}

func (o *metricsObserver) sessionStarted(ctx context.Context, _ *server.Session) {
	o.m.SessionStarted(mcpconv.TransportFromContext(ctx))
}

func (o *metricsObserver) sessionEnded(ctx context.Context, s *server.Session, cause error) {
	o.m.SessionEnded(mcpconv.TransportFromContext(ctx), server.ReasonOfCause(cause).String(), time.Since(s.Started()))
}

func (o *metricsObserver) responseDropped(_ context.Context, req *server.Request, reason protocol.DropReason) {
	o.m.ResponseDropped(req.Method, reason.String())
}

func (o *metricsObserver) writeFailed(ctx context.Context, _ *server.Session, class protocol.DropReason, _ error) {
	o.m.WriteFailed(mcpconv.TransportFromContext(ctx), class.String())
}

func (o *metricsObserver) outgoingFailed(_ context.Context, _ *server.Session, method string, _ error) {
	o.m.ClientRequestFailed(method)
}

func (o *metricsObserver) messageRejected(_ context.Context, _ *server.Session, _ protocol.Code, reason protocol.RejectReason) {
	o.m.MessageRejected(reason.String())
}
