package metrics

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// Metrics is the Prometheus collector of an MCP server: request durations,
// outcomes and cancellations, sessions, dropped responses, transport errors
// and traffic. Register it with a registry of your own
// (prometheus.NewRegistry().MustRegister(m)); it never touches the default
// registry. Every label is bounded: a value outside its known set becomes
// "other" (or _OTHER), so no input can grow the series, and the
// series of what the server serves exist at zero from the start (see
// [Metrics.Precreate]). The
// recording methods take label values as plain strings; all are safe for
// concurrent use, and on a nil *Metrics they do nothing. Every request
// counted by [Metrics.RequestStarted] must be ended by exactly one
// [Metrics.RequestFinished]: the package doc states the accounting law
// this keeps.
type Metrics struct {
	vocab         Vocabulary // the protocol's, as labels
	methods       metricsLabelSet
	clientMethods metricsLabelSet
	causes        metricsLabelSet
	dropReasons   metricsLabelSet
	classes       metricsLabelSet
	transports    metricsLabelSet
	outcomes      metricsLabelSet
	kinds         metricsLabelSet
	rejects       metricsLabelSet
	quotas        metricsLabelSet
	errorTypes    metricsLabelSet
	statusCodes   metricsLabelSet
	upstreams     *metricsLabelSet // the upstream label's values; nil: no such label

	toolsMu sync.Mutex // serializes SetToolNames
	tools   atomic.Pointer[metricsLabelSet]

	netsMu     sync.Mutex // guards servedNets
	servedNets []int      // the netIndex of each transport Precreate was given

	// Registered tools labeled with their own names (see
	// RequestEnd.ToolRegistered), at most maxRegisteredTools of them.
	registered      stringCache[struct{}] // tool names
	registeredCount atomic.Int64

	duration        *prometheus.HistogramVec
	started         *prometheus.CounterVec
	finished        *prometheus.CounterVec
	inFlight        *prometheus.GaugeVec
	sessions        *prometheus.GaugeVec
	sessionDuration *prometheus.HistogramVec
	cancellations   *prometheus.CounterVec
	drops           *prometheus.CounterVec
	writeErrors     *prometheus.CounterVec
	clientFailed    *prometheus.CounterVec
	rejected        *prometheus.CounterVec
	tooLarge        *prometheus.CounterVec
	quotaRefused    *prometheus.CounterVec
	msgIn, msgOut   *prometheus.CounterVec
	bytesIn         *prometheus.CounterVec
	bytesOut        *prometheus.CounterVec

	all []prometheus.Collector

	// Resolved series, see metrics_series.go.
	byMethod      map[string]*atomic.Pointer[methodSeries] // by known method; nil until used
	byTransport   map[string]*atomic.Pointer[Traffic]      // by known transport; nil until used
	resolveMu     sync.Mutex                               // serializes the resolving of byMethod and byTransport
	ends          sync.Map                                 // endKey → *endSeries
	buckets       []float64
	exemplarEvery time.Duration
}

var _ prometheus.Collector = (*Metrics)(nil)

// New returns a collector labeling with the values of v, with the series
// that belong to no method, tool or transport created at zero; see
// [Metrics.Precreate].
func New(v Vocabulary, opts ...Option) *Metrics {
	cfg := metricsConfig{
		requestMethods: defaultRequestMethods(),
		clientMethods:  defaultClientMethods(),
		errorTypes:     errorTypes(v.Codes),
		exemplarEvery:  DefaultExemplarInterval,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	m := &Metrics{
		methods:       newMetricsLabelSet(append(cfg.requestMethods, mcpconv.LabelOther)),
		clientMethods: newMetricsLabelSet(append(cfg.clientMethods, mcpconv.LabelOther)),
		vocab:         v,
		causes:        newMetricsLabelSet(v.Causes),
		dropReasons:   newMetricsLabelSet(v.DropReasons),
		classes:       newMetricsLabelSet(v.WriteClasses),
		transports:    newMetricsLabelSet(defaultTransports()),
		outcomes:      newMetricsLabelSet(defaultOutcomes()),
		kinds:         newMetricsLabelSet(defaultKinds()),
		rejects:       newMetricsLabelSet(v.RejectReasons),
		quotas:        newMetricsLabelSet(v.Quotas),
		errorTypes:    newMetricsLabelSet(append(cfg.errorTypes, "")),
		statusCodes:   newMetricsLabelSet(append(append([]string(nil), v.Codes...), "")),
		buckets:       DurationBuckets(),
		exemplarEvery: cfg.exemplarEvery,
	}
	if cfg.upstreams != nil {
		up := newMetricsLabelSet(append(cfg.upstreams, "", mcpconv.LabelOther))
		m.upstreams = &up
	}
	m.tools.Store(new(metricsLabelSet))
	m.newVectors(cfg)
	m.resolveSeries()
	m.precreate()
	m.SetToolNames(cfg.tools)
	return m
}

// durationLabels are the labels of the request duration: upstream last,
// a gateway's only.
func durationLabels(cfg metricsConfig) []string {
	l := []string{mcpconv.LabelMethod, mcpconv.LabelTool, mcpconv.LabelProtocolVersion, mcpconv.LabelNetTransport, mcpconv.LabelNetProtocol}
	if cfg.upstreams != nil {
		l = append(l, mcpconv.LabelUpstream)
	}
	return l
}

// durationOf returns the request duration series of these labels (upstream
// left out without the label).
func (m *Metrics) durationOf(method, tool, version, transport, protocolName, upstream string) prometheus.Observer {
	if m.upstreams == nil {
		return m.duration.WithLabelValues(method, tool, version, transport, protocolName)
	}
	return m.duration.WithLabelValues(method, tool, version, transport, protocolName, upstream)
}

func (m *Metrics) newVectors(cfg metricsConfig) {
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		o := prometheus.HistogramOpts{Name: name, Help: help, Buckets: DurationBuckets()}
		if cfg.native {
			o.NativeHistogramBucketFactor = 1.1
			o.NativeHistogramMaxBucketNumber = cfg.maxNative
			o.NativeHistogramMinResetDuration = time.Hour
		}
		return prometheus.NewHistogramVec(o, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m.duration = histogram(mcpconv.MetricOperationDuration,
		"Duration of MCP requests on the server, from receipt until the response was written or the decision not to write one was made (semconv mcp.server.operation.duration), "+
			"whatever their outcome: how each ended is mcp_server_requests_finished_total's, by the same method and tool. "+
			"mcp_method_name: the request method, other when unknown. gen_ai_tool_name: the tool of tools/call if registered, other if not, empty for other methods. "+
			`mcp_protocol_version: the request's protocol version, other when unknown. `+
			`network_transport and network_protocol_name: pipe for stdio, tcp and http for Streamable HTTP. `+
			`upstream (a gateway's only): the upstream a tools/call's tool is forwarded to, empty for other requests.`,
		durationLabels(cfg)...)
	m.started = counter(mcpconv.MetricRequestsStarted,
		"MCP requests that reached the handler chain. mcp_method_name: the request method, other when unknown. "+
			"Once requests in flight are zero, this equals the sum of mcp_server_requests_finished_total over its other labels.",
		mcpconv.LabelMethod)
	m.finished = counter(mcpconv.MetricRequestsFinished,
		"MCP requests that ended, each in exactly one outcome. mcp_method_name: the request method, other when unknown. "+
			"gen_ai_tool_name: the tool of tools/call if registered, other if not, empty for other methods. "+
			"outcome: ok (answered with a result, including tool results with isError), error (answered with a JSON-RPC error), "+
			"cancelled (context cancelled before the handler returned, not answered), dropped (finished but the response could not be written). "+
			`error_type (semconv error.type): empty on success and for a caller's fault (-32700, -32600, -32601, -32602, -32002), else the JSON-RPC error code (e.g. "-32603"), `+
			`tool_error for a tool result with isError, invalid_arguments for one refused by the tool's input schema, cancelled or dropped when no response was written, _OTHER for an unknown code. `+
			`rpc_response_status_code: the JSON-RPC code of every error response, caller's faults included, empty otherwise.`,
		mcpconv.LabelMethod, mcpconv.LabelTool, mcpconv.LabelOutcome, mcpconv.LabelErrorType, mcpconv.LabelStatusCode)
	m.inFlight = gauge(mcpconv.MetricRequestsInFlight,
		"MCP requests started and not yet finished. mcp_method_name: the request method, other when unknown.",
		mcpconv.LabelMethod)
	m.sessions = gauge(mcpconv.MetricSessionsActive,
		"MCP sessions being served. transport: stdio, streamable_http, memory, or other.",
		mcpconv.LabelTransport)
	m.sessionDuration = histogram(mcpconv.MetricSessionDuration,
		"Duration of ended MCP sessions (semconv mcp.server.session.duration). transport: stdio, streamable_http, memory, or other. "+
			"cause: what ended the session: transport_close (end of input, peer gone, transport closed), shutdown, timeout, other (e.g. the caller's context). "+
			"error_type: set when the session ended in error: timeout, or _OTHER for cause other.",
		mcpconv.LabelTransport, mcpconv.LabelCause, mcpconv.LabelErrorType)
	m.cancellations = counter(mcpconv.MetricCancellations,
		"Cancellations of MCP request handlers, an event counter that overlaps the outcomes. mcp_method_name: the request method, other when unknown. "+
			"cause: client_cancel (notifications/cancelled), transport_close (the client is gone: the connection or session ended, a write failed, or the request's stream closed with the session's GET stream), "+
			"stream_close (the client closed the request's stream only, and sent no notifications/cancelled), "+
			"shutdown (the server stopped), timeout (the handler ran out of time, whether or not it was then answered with -32001), "+
			"upstream_closed (what the handler relied on, such as a gateway's upstream server, went away mid-request; answered with an error), other.",
		mcpconv.LabelMethod, mcpconv.LabelCause)
	m.drops = counter(mcpconv.MetricLateResponsesDropped,
		"MCP requests that ended without a response being written, an event counter. mcp_method_name: the request method, other when unknown. "+
			"reason: cancelled (the client cancelled; MCP says not to answer), writer_closed (the session's writer was closed), "+
			"peer_gone (the peer vanished: EPIPE, ECONNRESET, a closed stream), shutdown (the server cancelled the request to stop).",
		mcpconv.LabelMethod, mcpconv.LabelReason)
	m.writeErrors = counter(mcpconv.MetricTransportWriteErrors,
		"Failed writes of MCP messages. transport: stdio, streamable_http, memory, or other. "+
			"class: writer_closed (this side had closed the writer) or peer_gone (the peer vanished: EPIPE, ECONNRESET, a closed pipe or stream).",
		mcpconv.LabelTransport, mcpconv.LabelClass)
	m.clientFailed = counter(mcpconv.MetricClientRequestsFailed,
		"Server-to-client requests still waiting for the client when their session ended, failed with connection closed. "+
			"mcp_method_name: the request method (roots/list, sampling/createMessage, elicitation/create, ...), other when unknown.",
		mcpconv.LabelMethod)
	m.rejected = counter(mcpconv.MetricMessagesRejected,
		"Incoming MCP messages refused or ignored before they reached a handler. reason: parse_error, invalid_request, "+
			"duplicate_id (a request id still in flight), lifecycle (a request before initialize, or a second initialize), frame_too_large, "+
			"in_flight_limit (over the per-session limit), shutting_down, invalid_params, unknown_response (a response nobody waits for), "+
			"protocol_mismatch (a stateless request refused by the protocol version rules), "+
			"forbidden (HTTP: Host or Origin refused), session_limit (HTTP: over the session limit), "+
			"unknown_session (HTTP: unknown or ended session id), "+
			"session_principal_mismatch (HTTP: a session id presented by another principal, answered 404), "+
			"overloaded (shed at once while the process was overloaded: HTTP 503 with Retry-After, or the busy error), "+
			"store_unavailable (HTTP: a new session while Redis does not answer, 503 with Retry-After), "+
			"memory_budget (HTTP: a request while the bodies all callers hold are at the process's memory budget, 503 with Retry-After), "+
			"cancel_unproven (a 2026-07-28 notifications/cancelled without a principal, which did not end a request whose stream stayed open), "+
			"cancel_relay_limit (an unmatched 2026-07-28 notifications/cancelled not relayed to other replicas: its caller over its rate), other.",
		mcpconv.LabelReason)
	m.tooLarge = counter(mcpconv.MetricResultsTooLarge,
		"Results over their size bound (-max-result-bytes, or a tool's own): a tools/call's answered as a tool error instead (tool_error in the duration), "+
			"one of resources/read, prompts/get or completion/complete as the JSON-RPC error -32603 (result_too_large in the duration). "+
			"mcp_method_name: the request method. gen_ai_tool_name: for tools/call, the tool if registered, other if not; empty for the other methods.",
		mcpconv.LabelMethod, mcpconv.LabelTool)
	m.quotaRefused = counter(mcpconv.MetricQuotaRefusals,
		"Requests and sessions refused because their caller (the authenticated principal, or the client address without authorization) was over a quota. "+
			"quota: sessions (concurrent sessions), in_flight (requests in flight), tasks, tool_share (its share of a tool's concurrency slots), "+
			"rate (its request rate), tool_rate (its rate for one tool), bytes (the request bodies its requests in flight hold), other.",
		mcpconv.LabelQuota)
	const kinds = "kind: request, notification, response, batch, or invalid (a frame that did not decode)."
	const transports = "transport: stdio, streamable_http, memory, or other. "
	m.msgIn = counter(mcpconv.MetricMessagesReceived, "MCP messages read from the transport. "+transports+kinds, mcpconv.LabelTransport, mcpconv.LabelKind)
	m.msgOut = counter(mcpconv.MetricMessagesSent, "MCP messages written to the transport, including failed writes. "+transports+kinds, mcpconv.LabelTransport, mcpconv.LabelKind)
	m.bytesIn = counter(mcpconv.MetricBytesReceived,
		"Encoded size of the MCP messages read (the JSON-RPC encoding, without framing). "+transports, mcpconv.LabelTransport)
	m.bytesOut = counter(mcpconv.MetricBytesSent,
		"Encoded size of the MCP messages written (the JSON-RPC encoding, without framing). "+transports, mcpconv.LabelTransport)
	m.all = []prometheus.Collector{
		m.duration, m.started, m.finished, m.inFlight, m.sessions, m.sessionDuration,
		m.cancellations, m.drops, m.writeErrors, m.clientFailed, m.rejected, m.tooLarge, m.quotaRefused, m.msgIn, m.msgOut, m.bytesIn, m.bytesOut,
	}
}

// precreate makes the series that belong to no method, tool or transport
// exist at zero, so that rate() and absence alerts work from the first
// scrape; [Metrics.Precreate] makes those of what a server serves.
func (m *Metrics) precreate() {
	m.precreateMethod(mcpconv.LabelOther)
	m.clientFailed.WithLabelValues(mcpconv.LabelOther)
	for _, q := range m.quotas.values {
		m.quotaRefused.WithLabelValues(q)
	}
	for _, r := range m.rejects.values {
		m.rejected.WithLabelValues(r)
	}
}

// Precreate makes the series of what a server serves exist at zero, so
// that rate() and absence alerts see a server's first request: those of
// transport (a Transport constant; "" for none), the counters of each
// request method in methods that is in the known set (the server-to-client
// methods of a feature, tasks/*, with that feature's) with the ends a
// request of it meets in a day's work, and the durations over transport of
// each of its methods (Vocabulary.OfEra) and of method other in each era
// (Vocabulary.EraVersions), and of tools/call for each tool in tools and for
// tool other (invalid label values are skipped), without changing the
// tool allow-list. Only label values a request can carry are made: no
// duration without a transport. The rest are created when first used.
// The middleware package's Instrumentation.ConnServer calls it with the
// server it is given, as each transport starts to serve. Safe for
// concurrent use with recording.
func (m *Metrics) Precreate(transport string, methods, tools []string) {
	if m == nil {
		return
	}
	tasks := false
	for _, method := range methods {
		if m.methods.has[method] {
			m.precreateMethod(method)
		}
		tasks = tasks || strings.HasPrefix(method, "tasks/")
	}
	for _, method := range m.clientMethods.values {
		if tasks || !strings.HasPrefix(method, "tasks/") {
			m.clientFailed.WithLabelValues(method)
		}
	}
	names := validToolNames(tools)
	if slices.Contains(methods, "tools/call") {
		names = append(names, mcpconv.LabelOther) // an unknown tool's -32602
	}
	if transport == "" {
		m.precreateTools(names)
		return
	}
	t := m.transports.bound(transport, mcpconv.LabelOther)
	m.precreateTransport(t)
	net := netIndex(t)
	if net == 0 {
		m.precreateTools(names)
		return
	}
	m.netsMu.Lock()
	if !slices.Contains(m.servedNets, net) {
		m.servedNets = append(m.servedNets, net)
	}
	m.netsMu.Unlock()
	for _, version := range m.vocab.EraVersions {
		for _, method := range methods {
			if m.methods.has[method] && method != "tools/call" && m.vocab.OfEra(version, method) {
				m.precreateDuration(method, "", version, net)
			}
		}
		m.precreateDuration(mcpconv.LabelOther, "", version, net)
	}
	m.precreateTools(names)
	m.precreateTools(m.tools.Load().values)
}

// precreateDuration makes the duration series of a request of method with
// tool label tool, in the era of version, over network net (a netIndex),
// exist at zero.
func (m *Metrics) precreateDuration(method, tool, version string, net int) {
	transport, protocolName := netLabels(net)
	m.durationOf(method, tool, version, transport, protocolName, "")
}

// succeeds reports whether a request of method, a known one, can end with
// a result: subscriptions/listen is a stream the client closes.
func succeeds(method string) bool { return method != "subscriptions/listen" }

// precreateMethod makes the counters of a known request method exist at
// zero: started, in flight, its cancellations and drops, and the ends a
// request of it has without a tool (see zeroEnds); tools/call's ends are
// each tool's (precreateTools).
func (m *Metrics) precreateMethod(method string) {
	m.method(method) // started, in flight, cancellations and drops
	if method != "tools/call" {
		for _, e := range m.zeroEnds(method, "") {
			m.finished.WithLabelValues(method, "", e.outcome, e.errType, e.status)
		}
	}
	if boundedResult(method) {
		m.tooLarge.WithLabelValues(method, "")
	}
}

// end is how a request ends, as mcp_server_requests_finished_total labels it.
type end struct{ outcome, errType, status string }

// zeroEnds returns the ends made at zero for a request of a known method with
// tool label tool: those a request of it meets in a day's work, each a
// series of mcp_server_requests_finished_total. A request answered with a
// result, a tool's error or invalid arguments (tools/call), a 2026-07-28
// client without the capability a tool asks it for (-32021), a cancel, a
// response that could not be written; and the one refusal of the unknown: -32601 for a method of label other, -32602
// for a tool of label other. The other JSON-RPC errors (a handler's
// -32603, a bad parameter) are made when first used: their codes are the
// handler's to choose.
func (m *Metrics) zeroEnds(method, tool string) []end {
	switch {
	case method == mcpconv.LabelOther:
		return []end{{mcpconv.OutcomeError, "", m.vocab.MethodNotFound}}
	case method == "tools/call" && tool == mcpconv.LabelOther:
		return []end{{mcpconv.OutcomeError, "", m.vocab.InvalidParams}}
	}
	var out []end
	if succeeds(method) {
		out = append(out, end{mcpconv.OutcomeOK, "", ""})
	}
	if method == "tools/call" {
		out = append(out, end{mcpconv.OutcomeOK, mcpconv.ErrorTypeTool, ""}, end{mcpconv.OutcomeOK, mcpconv.ErrorTypeInvalidArguments, ""},
			end{mcpconv.OutcomeError, m.vocab.MissingCapability, m.vocab.MissingCapability})
	}
	return append(out, end{mcpconv.OutcomeCancelled, mcpconv.ErrorTypeCancelled, ""}, end{mcpconv.OutcomeDropped, mcpconv.ErrorTypeDropped, ""})
}

// boundedResult reports whether a result of method, not a tool's, can be
// over the result bound.
func boundedResult(method string) bool {
	return method == "resources/read" || method == "prompts/get" || method == "completion/complete"
}

// precreateTransport makes the series of transport t, a known one, exist
// at zero.
func (m *Metrics) precreateTransport(t string) {
	m.traffic(t) // sessions and traffic
	for _, c := range m.causes.values {
		if c != "client_cancel" && c != "stream_close" && c != "upstream_closed" { // what ends a request, never a session
			m.sessionDuration.WithLabelValues(t, c, sessionErrorType(c))
		}
	}
	for _, c := range m.classes.values {
		m.writeErrors.WithLabelValues(t, c)
	}
}

// Describe sends the descriptors of every metric; see [prometheus.Collector].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	if m == nil {
		return
	}
	for _, c := range m.all {
		c.Describe(ch)
	}
}

// Collect sends the current value of every series; see [prometheus.Collector].
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	if m == nil {
		return
	}
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// SetToolNames replaces the allow-list of tool names that label
// gen_ai_tool_name as they are, and creates their duration series at zero;
// any other tool is labeled "other", unless the caller says it is
// registered ([RequestEnd.ToolRegistered], which the middleware package
// sets from the server's live registry, so that its users need not call
// this). Series of tools dropped from the list stay, as Prometheus counters
// should. Safe for concurrent use with recording.
func (m *Metrics) SetToolNames(names []string) {
	if m == nil {
		return
	}
	m.toolsMu.Lock()
	defer m.toolsMu.Unlock()
	set := newMetricsLabelSet(validToolNames(names))
	m.precreateTools(set.values)
	m.tools.Store(&set)
}

// precreateTools makes the series of tools/call of each tool in names
// exist at zero: its results over their bound, its ends (zeroEnds), and
// its durations in each era over each network served (none with the
// upstream label, which a forwarded tool's requests fill in).
func (m *Metrics) precreateTools(names []string) {
	nets := m.nets()
	for _, n := range names {
		m.tooLarge.WithLabelValues("tools/call", n)
		for _, e := range m.zeroEnds("tools/call", n) {
			m.finished.WithLabelValues("tools/call", n, e.outcome, e.errType, e.status)
		}
		if m.upstreams != nil {
			continue
		}
		for _, net := range nets {
			for _, version := range m.vocab.EraVersions {
				m.precreateDuration("tools/call", n, version, net)
			}
		}
	}
}

// nets returns the networks Precreate was given a transport of.
func (m *Metrics) nets() []int {
	m.netsMu.Lock()
	defer m.netsMu.Unlock()
	return slices.Clone(m.servedNets)
}

// validToolNames returns a copy of names without the invalid label values.
func validToolNames(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !validLabelValue(n) })
}

// validLabelValue reports whether v can be a label value: valid UTF-8 of a
// sane length.
func validLabelValue(v string) bool { return len(v) <= 128 && utf8.ValidString(v) }

// metricsLabelSet is a known set of label values; read-only once built.
type metricsLabelSet struct {
	values []string
	has    map[string]bool
}

func newMetricsLabelSet(values []string) metricsLabelSet {
	s := metricsLabelSet{has: make(map[string]bool, len(values))}
	for _, v := range values {
		if !s.has[v] {
			s.has[v] = true
			s.values = append(s.values, v)
		}
	}
	return s
}

// bound returns v if it is in the set, else other.
func (s *metricsLabelSet) bound(v, other string) string {
	if s.has[v] {
		return v
	}
	return other
}
