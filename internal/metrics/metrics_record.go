package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// RequestEnd describes how one request ended, for [Metrics.RequestFinished].
type RequestEnd struct {
	// Method is the request method; outside the known set it is labeled
	// "other".
	Method string
	// Tool is the tool name of a tools/call request, labeled as it is when
	// it is on the allow-list (see [Metrics.SetToolNames]) or
	// ToolRegistered is set, and "other" otherwise. It is ignored for
	// other methods.
	Tool string
	// ToolRegistered says that Tool is registered with the server now (the
	// middleware package asks the server's registry), so that it is labeled
	// as it is without being on the allow-list, among the first 1,024
	// such names (later ones are labeled "other"); a name a client made
	// up must leave it false.
	ToolRegistered bool
	// Outcome is one of ok, error, cancelled and
	// dropped; any other value is counted as "other".
	Outcome string
	// ErrorType is "" on success, a JSON-RPC code in decimal, or one of the
	// ErrorType constants; an unknown value is labeled _OTHER. A
	// caller's fault (-32602, ...) answered as an error leaves it "": the
	// semantic conventions say such a request did not fail on the server.
	ErrorType string
	// StatusCode is the JSON-RPC code of an error response in decimal, ""
	// when the response is a result or none was written; a code outside the
	// known set is labeled _OTHER.
	StatusCode string
	// ProtocolVersion is the MCP protocol version of the request; outside
	// the known versions it is labeled "other", and "" when unknown.
	ProtocolVersion string
	// Transport is the transport the request came on (a Transport
	// constant), labeled as network_transport and network_protocol_name:
	// pipe for stdio and memory, tcp over http for Streamable HTTP; both
	// are empty for any other value.
	Transport string
	// Upstream is the upstream MCP server a gateway forwarded the
	// tools/call's tool to (server.Tool.Upstream), "" otherwise; it labels
	// the duration only with [WithUpstreams], "other" outside its names.
	Upstream string
	// Endpoint is the gateway's catalog endpoint (/mcp/NAME) the request
	// came through ([EndpointOf] its arrival context), "" for the default
	// one; it labels the duration only with [WithUpstreams], "other"
	// beyond the first MaxEndpointLabels names.
	Endpoint string
	// Duration runs from the request's receipt until its outcome was
	// sealed (the response written, or the decision not to write one).
	Duration time.Duration
	// Ended is when the request ended, the end of Duration; it paces the
	// exemplars (see [WithExemplarInterval]). Zero means now: the clock is
	// then read when an exemplar may be due.
	Ended time.Time
	// TraceID, when valid, is attached as the trace_id exemplar of the
	// duration observation and of the finished count, at most once per
	// [WithExemplarInterval] for each (exposed with the OpenMetrics format
	// only). It is hex-encoded only when an exemplar is attached, which
	// spares a request without one the encoding.
	TraceID trace.TraceID
}

// UpstreamLabeled reports whether the request duration has the upstream
// label ([WithUpstreams]): whether [RequestEnd.Upstream] is worth finding.
func (m *Metrics) UpstreamLabeled() bool { return m != nil && m.upstreams != nil }

// RequestStarted counts a request that reached the handler chain and adds it
// to the requests in flight. Every call must be matched by exactly one
// [Metrics.RequestFinished] with the same method.
func (m *Metrics) RequestStarted(method string) {
	if m == nil {
		return
	}
	s := m.method(method)
	s.started.Inc()
	s.inFlight.Inc()
}

// RequestFinished ends a request counted by [Metrics.RequestStarted]: it
// removes it from the requests in flight, counts its outcome and observes
// its duration.
func (m *Metrics) RequestFinished(e RequestEnd) {
	if m == nil {
		return
	}
	ms := m.method(e.Method)
	tool := ""
	if ms.name == "tools/call" && e.Tool != "" {
		tool = m.toolLabel(e.Tool, e.ToolRegistered)
	}
	version, net := m.versionIndex(e.ProtocolVersion), netIndex(e.Transport)
	upstream := ""
	if m.upstreams != nil && tool != "" && e.Upstream != "" {
		upstream = m.upstreams.bound(e.Upstream, mcpconv.LabelOther)
	}
	endpoint := ""
	if m.upstreams != nil && e.Endpoint != "" {
		endpoint = m.endpointLabel(e.Endpoint)
	}
	var s *endSeries
	if e.Outcome == mcpconv.OutcomeOK && e.ErrorType == "" && e.StatusCode == "" && endpoint == "" {
		s = m.okEnd(ms, tool, upstream, version, net)
	} else {
		s = m.end(endKey{
			method:   ms.name,
			tool:     tool,
			upstream: upstream,
			endpoint: endpoint,
			outcome:  m.outcomes.bound(e.Outcome, mcpconv.LabelOther),
			errType:  m.errorTypes.bound(e.ErrorType, mcpconv.ErrorTypeOther),
			status:   m.statusCodes.bound(e.StatusCode, mcpconv.ErrorTypeOther),
			version:  version,
			net:      net,
		})
	}
	seconds := e.Duration.Seconds()
	traced := e.TraceID.IsValid()
	var now int64 // read once, when an exemplar may be due
	if traced && m.exemplarEvery > 0 {
		if now = e.Ended.UnixNano(); e.Ended.IsZero() {
			now = time.Now().UnixNano()
		}
	}

	if a, ok := s.finished.(prometheus.ExemplarAdder); ok && traced && m.exemplarDue(&s.counterExemplar, now) {
		a.AddWithExemplar(1, prometheus.Labels{mcpconv.ExemplarTraceID: e.TraceID.String()})
	} else {
		s.finished.Inc()
	}
	if o, ok := s.duration.(prometheus.ExemplarObserver); ok && traced && m.exemplarDue(&s.bucketExemplar[m.bucketOf(seconds)], now) {
		o.ObserveWithExemplar(seconds, prometheus.Labels{mcpconv.ExemplarTraceID: e.TraceID.String()})
	} else {
		s.duration.Observe(seconds)
	}
	// Last, so that in flight reaching zero implies the outcome is counted.
	ms.inFlight.Dec()
}

// RequestCancelled counts one cancellation of a request handler with its
// cause (client_cancel, transport_close, stream_close, shutdown, timeout; anything else is
// "other"). It is an event: the request still ends with
// [Metrics.RequestFinished].
func (m *Metrics) RequestCancelled(method, cause string) {
	if m == nil {
		return
	}
	s := m.method(method)
	cause = m.causes.bound(cause, mcpconv.LabelOther)
	if c, ok := s.cancellations[cause]; ok {
		c.Inc()
		return
	}
	m.cancellations.WithLabelValues(s.name, cause).Inc()
}

// ResponseDropped counts a request that ended without a response being
// written, with the reason (cancelled, writer_closed, peer_gone, shutdown).
// An unknown reason is "other".
func (m *Metrics) ResponseDropped(method, reason string) {
	if m == nil {
		return
	}
	s := m.method(method)
	if c, ok := s.drops[reason]; ok {
		c.Inc()
		return
	}
	m.drops.WithLabelValues(s.name, mcpconv.LabelOther).Inc()
}

// SessionStarted adds a session to the sessions active on transport.
func (m *Metrics) SessionStarted(transport string) {
	if m == nil {
		return
	}
	m.Traffic(transport).sessions.Inc()
}

// SessionEnded removes a session that [Metrics.SessionStarted] added and
// observes its duration with the cause that ended it (transport_close,
// shutdown, timeout; anything else is "other"), and with the
// error_type of a session that ended in error: the cause itself for a
// timeout, _OTHER for other; empty for a transport close or a
// shutdown, the ends of a session's normal life.
func (m *Metrics) SessionEnded(transport, cause string, d time.Duration) {
	if m == nil {
		return
	}
	t := m.Traffic(transport) // its series, those of other for an unknown transport
	t.sessions.Dec()
	t.sessionEnd(m.causes.bound(cause, mcpconv.LabelOther)).Observe(d.Seconds())
}

// WriteFailed counts a failed write on transport by class: writer_closed
// or peer_gone (anything else is "other").
func (m *Metrics) WriteFailed(transport, class string) {
	if m == nil {
		return
	}
	m.writeErrors.WithLabelValues(m.transports.bound(transport, mcpconv.LabelOther), m.classes.bound(class, mcpconv.LabelOther)).Inc()
}

// ClientRequestFailed counts a server-to-client request that was still
// waiting for the client's answer when its session ended.
func (m *Metrics) ClientRequestFailed(method string) {
	if m == nil {
		return
	}
	m.clientFailed.WithLabelValues(m.clientMethods.bound(method, mcpconv.LabelOther)).Inc()
}

// MessageRejected counts an incoming message refused or ignored before it
// reached a handler, by reason (one of the Reject constants; anything else
// is "other").
func (m *Metrics) MessageRejected(reason string) {
	if m == nil {
		return
	}
	m.rejected.WithLabelValues(m.rejects.bound(reason, mcpconv.LabelOther)).Inc()
}

// toolLabel returns the gen_ai_tool_name of tool, registered as
// [RequestEnd.ToolRegistered] says.
func (m *Metrics) toolLabel(tool string, registered bool) string {
	label := m.tools.Load().bound(tool, mcpconv.LabelOther)
	if label == mcpconv.LabelOther && registered && m.admitRegistered(tool) {
		label = tool
	}
	return label
}

// ResultTooLarge counts a result of method over its size bound: a
// tools/call's of tool (registered as in [RequestEnd.ToolRegistered]),
// answered as a tool error instead, or one of resources/read, prompts/get
// or completion/complete, answered as an error (tool is then ignored).
func (m *Metrics) ResultTooLarge(method, tool string, registered bool) {
	if m == nil {
		return
	}
	if !boundedResult(method) {
		m.tooLarge.WithLabelValues("tools/call", m.toolLabel(tool, registered)).Inc()
		return
	}
	m.tooLarge.WithLabelValues(method, "").Inc()
}

// QuotaRefused counts a request or session refused because its caller was
// over a quota (one of the protocol.Quota labels; anything else is
// "other").
func (m *Metrics) QuotaRefused(quota string) {
	if m == nil {
		return
	}
	m.quotaRefused.WithLabelValues(m.quotas.bound(quota, mcpconv.LabelOther)).Inc()
}

// MessageReceived counts a message read from transport, of kind (one of the
// Kind constants) and encoded size in bytes (0 when unknown). A caller that
// counts many messages of one transport can resolve its series once with
// [Metrics.Traffic].
func (m *Metrics) MessageReceived(transport, kind string, size int) {
	m.Traffic(transport).Received(kind, size)
}

// MessageSent counts a message written (or attempted) to transport, of kind
// (one of the Kind constants) and encoded size in bytes. A caller that
// counts many messages of one transport can resolve its series once with
// [Metrics.Traffic].
func (m *Metrics) MessageSent(transport, kind string, size int) {
	m.Traffic(transport).Sent(kind, size)
}

// Traffic returns the traffic series of transport (those of "other"
// when it is not a known transport), for counting its messages without
// resolving the label each time; nil for a nil m.
func (m *Metrics) Traffic(transport string) *Traffic {
	if m == nil {
		return nil
	}
	if _, ok := m.byTransport[transport]; ok {
		return m.traffic(transport)
	}
	return m.traffic(mcpconv.LabelOther)
}

// Received counts a message read from t's transport, as
// [Metrics.MessageReceived] does.
func (t *Traffic) Received(kind string, size int) {
	if t == nil {
		return
	}
	if i := kindIndex(kind); i >= 0 {
		t.in[i].Inc()
	} else {
		t.m.msgIn.WithLabelValues(t.transport, mcpconv.LabelOther).Inc()
	}
	if size > 0 {
		t.bytesIn.Add(float64(size))
	}
}

// Sent counts a message written (or attempted) to t's transport, as
// [Metrics.MessageSent] does.
func (t *Traffic) Sent(kind string, size int) { t.SentN(kind, size, 1) }

// SentN counts n messages of the same kind and size written (or
// attempted) to t's transport, as n calls of [Traffic.Sent] do, in one
// addition each: a notification a transport multicast to n sessions.
func (t *Traffic) SentN(kind string, size, n int) {
	if t == nil || n <= 0 {
		return
	}
	if i := kindIndex(kind); i >= 0 {
		t.out[i].Add(float64(n))
	} else {
		t.m.msgOut.WithLabelValues(t.transport, mcpconv.LabelOther).Add(float64(n))
	}
	if size > 0 {
		t.bytesOut.Add(float64(size) * float64(n))
	}
}

// maxRegisteredTools bounds the tool names a Metrics labels because the
// server had them registered: a server that keeps adding and removing
// tools does not grow the series, or the caches behind them, for ever.
const maxRegisteredTools = 1024

// admitRegistered reports whether the registered tool name gets a label of
// its own: a valid label value among the first maxRegisteredTools names
// seen; any later one is labeled other.
func (m *Metrics) admitRegistered(name string) bool {
	if _, ok := m.registered.load(name); ok {
		return true
	}
	if !validLabelValue(name) {
		return false
	}
	if m.registeredCount.Add(1) > maxRegisteredTools {
		m.registeredCount.Add(-1)
		return false
	}
	if _, loaded := m.registered.loadOrStore(name, struct{}{}); loaded {
		m.registeredCount.Add(-1)
	}
	return true
}
