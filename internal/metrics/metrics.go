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
	upstreams     *metricsLabelSet // the upstream label's values; nil: no such label (nor endpoint)

	// The endpoint label's values beside "": the catalog endpoint names
	// seen, at most MaxEndpointLabels, the first seen first (endpoint.go).
	endpointsMu sync.Mutex
	endpoints   sync.Map // name -> struct{}
	endpointsN  int

	toolsMu sync.Mutex // serializes SetToolNames
	tools   atomic.Pointer[metricsLabelSet]

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

// durationLabels are the labels of the request duration: upstream and
// endpoint last, a gateway's only.
func durationLabels(cfg metricsConfig) []string {
	l := []string{
		mcpconv.LabelMethod, mcpconv.LabelTool, mcpconv.LabelProtocolVersion, mcpconv.LabelNetTransport, mcpconv.LabelNetProtocol,
		mcpconv.LabelErrorType, mcpconv.LabelStatusCode,
	}
	if cfg.upstreams != nil {
		l = append(l, mcpconv.LabelUpstream, mcpconv.LabelEndpoint)
	}
	return l
}

// durationOf returns the request duration series of these labels (upstream
// and endpoint left out without the labels); errType and status are the
// finished count's, empty on success.
func (m *Metrics) durationOf(method, tool, version, transport, protocolName, errType, status, upstream, endpoint string) prometheus.Observer {
	if m.upstreams == nil {
		return m.duration.WithLabelValues(method, tool, version, transport, protocolName, errType, status)
	}
	return m.duration.WithLabelValues(method, tool, version, transport, protocolName, errType, status, upstream, endpoint)
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
	// One sentence each: what every label and value means is in
	// docs/operations.md, where /metrics links to.
	m.duration = histogram(mcpconv.MetricOperationDuration,
		"Duration of MCP requests from receipt until answered or dropped (semconv mcp.server.operation.duration), by method, tool, protocol version, network and, for failures, error type and status code.",
		durationLabels(cfg)...)
	m.started = counter(mcpconv.MetricRequestsStarted,
		"MCP requests that reached the handler chain, by method.",
		mcpconv.LabelMethod)
	m.finished = counter(mcpconv.MetricRequestsFinished,
		"MCP requests that ended, each in exactly one outcome (ok, error, cancelled, dropped), by method, tool, error type and status code.",
		mcpconv.LabelMethod, mcpconv.LabelTool, mcpconv.LabelOutcome, mcpconv.LabelErrorType, mcpconv.LabelStatusCode)
	m.inFlight = gauge(mcpconv.MetricRequestsInFlight,
		"MCP requests started and not yet finished, by method.",
		mcpconv.LabelMethod)
	m.sessions = gauge(mcpconv.MetricSessionsActive,
		"MCP sessions being served, by transport.",
		mcpconv.LabelTransport)
	m.sessionDuration = histogram(mcpconv.MetricSessionDuration,
		"Duration of ended MCP sessions (semconv mcp.server.session.duration), by transport, the cause that ended them and, when in error, error type.",
		mcpconv.LabelTransport, mcpconv.LabelCause, mcpconv.LabelErrorType)
	m.cancellations = counter(mcpconv.MetricCancellations,
		"Cancellations of MCP request handlers, an event counter beside the outcomes, by method and cause.",
		mcpconv.LabelMethod, mcpconv.LabelCause)
	m.drops = counter(mcpconv.MetricLateResponsesDropped,
		"MCP requests that ended without their response written, by method and reason.",
		mcpconv.LabelMethod, mcpconv.LabelReason)
	m.writeErrors = counter(mcpconv.MetricTransportWriteErrors,
		"Failed writes of MCP messages, by transport and class (writer_closed or peer_gone).",
		mcpconv.LabelTransport, mcpconv.LabelClass)
	m.clientFailed = counter(mcpconv.MetricClientRequestsFailed,
		"Server-to-client requests still waiting for the client when their session ended, by method.",
		mcpconv.LabelMethod)
	m.rejected = counter(mcpconv.MetricMessagesRejected,
		"Incoming MCP messages refused or ignored before they reached a handler, by reason.",
		mcpconv.LabelReason)
	m.tooLarge = counter(mcpconv.MetricResultsTooLarge,
		"Results over their size bound, answered with a tool error or -32603 instead, by method and tool.",
		mcpconv.LabelMethod, mcpconv.LabelTool)
	m.quotaRefused = counter(mcpconv.MetricQuotaRefusals,
		"Requests and sessions refused because their caller was over a quota, by quota.",
		mcpconv.LabelQuota)
	m.msgIn = counter(mcpconv.MetricMessagesReceived, "MCP messages read from the transport, by transport and kind.", mcpconv.LabelTransport, mcpconv.LabelKind)
	m.msgOut = counter(mcpconv.MetricMessagesSent, "MCP messages written to the transport, failed writes included, by transport and kind.", mcpconv.LabelTransport, mcpconv.LabelKind)
	m.bytesIn = counter(mcpconv.MetricBytesReceived, "Encoded size of the MCP messages read, without framing, by transport.", mcpconv.LabelTransport)
	m.bytesOut = counter(mcpconv.MetricBytesSent, "Encoded size of the MCP messages written, without framing, by transport.", mcpconv.LabelTransport)
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
// request of it meets in a day's work, and those of tools/call for each
// tool in tools and for tool other (invalid label values are skipped),
// without changing the tool allow-list. The rest are created when first
// used, the request duration's among them: its exact counts at zero are
// the finished count's, and a histogram's series of 15 lines for each
// method, tool and era would make /metrics of a small server mostly zeros.
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
	if transport != "" {
		m.precreateTransport(m.transports.bound(transport, mcpconv.LabelOther))
	}
	m.precreateTools(names)
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
// gen_ai_tool_name as they are, and creates their counters at zero;
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
// exist at zero: its results over their bound and its ends (zeroEnds).
func (m *Metrics) precreateTools(names []string) {
	for _, n := range names {
		m.tooLarge.WithLabelValues("tools/call", n)
		for _, e := range m.zeroEnds("tools/call", n) {
			m.finished.WithLabelValues("tools/call", n, e.outcome, e.errType, e.status)
		}
	}
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
