package debugpage

import (
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/server"
)

// Recorder gathers what the live page shows, through the hooks it hands
// to the server: [Recorder.ServerOption] and [Recorder.SpanExporter].
// Make one with [NewRecorder]; one Recorder serves one server. It is safe for concurrent
// use, and none of its hooks blocks for long.
type Recorder struct {
	started time.Time
	events  *eventLog // its stats count every request

	mu     sync.Mutex
	limits ringLimits
	ring   *spanRing      // made by the first SpanExporter call; nil before
	srv    *server.Server // set by Handler: the ring's keys are its names
}

// NewRecorder returns a Recorder with the options opts. Its time of
// creation is the start of the page's uptime and counts.
func NewRecorder(opts ...RecorderOption) *Recorder {
	cfg := recorderConfig{limits: ringLimits{Recent: DefaultTraceRing, MaxBytes: ringMaxBytes}}
	for _, o := range opts {
		if o != nil {
			o.applyRecorder(&cfg)
		}
	}
	cfg.limits.Recent = max(cfg.limits.Recent, 1)
	events := newEventLog()
	return &Recorder{started: events.stats.started, events: events, limits: cfg.limits}
}

// ServerOption returns the server.Option, for server.New, that registers
// the Recorder's observer (a server.Observer): it counts every request by
// method or tool, outcome and latency (a name the server does not know
// counts as "other"), and remembers each live session's transport, the
// principal that opened it (auth.PrincipalFromContext of its initialize's
// arrival, behind an OAuth resource server) and the recent cancellations,
// dropped responses and ended sessions.
func (r *Recorder) ServerOption() server.Option { return r.events.serverOption() }

// SpanExporter returns the intake of the Recorder's trace ring, which
// keeps the traces worth looking at within a fixed memory bound: give it
// to sdktrace.WithSyncer, or as the fallback exporter of the package vigil's
// tracer provider, which hands it each span itself as the span ends
// (without the SDK's read-only copy of it). The first call makes the ring;
// until then the page keeps no trace and says so.
func (r *Recorder) SpanExporter() sdktrace.SpanExporter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ring == nil {
		r.ring = newSpanRingLimits(r.limits)
		if r.srv != nil {
			r.ring.keyByServer(r.srv, r.events.hasMethod(r.srv))
		}
	}
	return r.ring
}

// traceRing returns the trace ring, nil while SpanExporter was not called.
func (r *Recorder) traceRing() *spanRing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ring
}

// keyByServer makes srv's methods, tools and prompts the only keys of the
// trace ring besides ringOtherKey, now and once it is made.
func (r *Recorder) keyByServer(srv *server.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = srv
	if r.ring != nil {
		r.ring.keyByServer(srv, r.events.hasMethod(srv))
	}
}
