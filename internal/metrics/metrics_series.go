package metrics

import (
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// The recording methods run for every request and message, so the series
// they touch are resolved once, on first use (or by Precreate), and kept:
// looking up label values in a metric vector hashes and checks every
// value, and a Prometheus exemplar costs a few allocations. Resolving a
// series creates it, so a method or transport nothing used has none. Label
// sets are bounded, and so are these caches.

// methodSeries are the per-method series, resolved on a known method's
// (or other's) first use; read-only afterwards, but for the caches of the
// series a request of the method most often ends in.
type methodSeries struct {
	name          string // the method label
	started       prometheus.Counter
	inFlight      prometheus.Gauge
	cancellations map[string]prometheus.Counter // by known cause
	drops         map[string]prometheus.Counter // by known reason
	// The end series of outcome ok without an error type, which spare a
	// successful request the label lookups and the hash of an endKey:
	// without a tool label, and by tool label (bounded as the tool labels
	// are), each by protocol version and network (see okGrid).
	ok      okGrid
	okTools stringCache[*okGrid] // by tool label
}

// okGrid holds the ok end series of one method and tool by
// versionIndex and netIndex, created on first use.
type okGrid [numVersions][numNets]atomic.Pointer[endSeries]

// numVersions counts the mcp_protocol_version labels: "", the five
// protocol versions Vigil serves (Vocabulary.Versions), and other.
const numVersions = 7

// versionIndex returns the index of v's mcp_protocol_version label.
func (m *Metrics) versionIndex(v string) int {
	if v == "" {
		return 0
	}
	for i, served := range m.versions() {
		if v == served {
			return i + 1
		}
	}
	return numVersions - 1
}

// versionLabel returns the mcp_protocol_version label of a versionIndex.
func (m *Metrics) versionLabel(i int) string {
	switch i {
	case 0:
		return ""
	case numVersions - 1:
		return mcpconv.LabelOther
	}
	return m.versions()[i-1]
}

// versions are the versions labeled as they are, in versionIndex's order.
func (m *Metrics) versions() []string {
	return m.vocab.Versions[:min(len(m.vocab.Versions), maxVersions)]
}

// numNets counts the networks a request is labeled with: none, a pipe,
// HTTP over TCP.
const numNets = 3

// netIndex returns the index of the network of a Transport constant.
func netIndex(transport string) int {
	switch transport {
	case mcpconv.TransportStdio, mcpconv.TransportMemory:
		return 1
	case mcpconv.TransportStreamableHTTP:
		return 2
	}
	return 0
}

// netLabels returns the network_transport and network_protocol_name
// labels of a netIndex.
func netLabels(i int) (transport, protocolName string) {
	switch i {
	case 1:
		return netTransportPipe, ""
	case 2:
		return netTransportTCP, netProtocolHTTP
	}
	return "", ""
}

// Traffic is the traffic series of one transport, resolved once (see
// [Metrics.Traffic]): what [Metrics.MessageReceived] and
// [Metrics.MessageSent] count, without looking up the transport's label for
// every message. A nil *Traffic counts nothing. It is safe for concurrent
// use.
type Traffic struct {
	m                 *Metrics
	transport         string                       // the transport label
	in, out           [numKinds]prometheus.Counter // by kindIndex
	bytesIn, bytesOut prometheus.Counter
	// The transport's sessions (a 2026-07-28 stateless request is none),
	// and their durations by bounded cause label, resolved on first use.
	sessions    prometheus.Gauge
	sessionEnds stringCache[prometheus.Observer] // by cause label
}

// sessionEnd returns the session duration series of t's transport for
// cause, a bounded cause label.
func (t *Traffic) sessionEnd(cause string) prometheus.Observer {
	if o, ok := t.sessionEnds.load(cause); ok {
		return o
	}
	o, _ := t.sessionEnds.loadOrStore(cause, t.m.sessionDuration.WithLabelValues(t.transport, cause, sessionErrorType(cause)))
	return o
}

// sessionErrorType returns the error_type of a session that ended for
// cause, a bounded cause label: "" when the session ended as sessions do
// (its transport closed, or the server shut down).
func sessionErrorType(cause string) string {
	switch cause {
	case "transport_close", "shutdown":
		return ""
	case "timeout":
		return mcpconv.ErrorTypeTimeout
	}
	return mcpconv.ErrorTypeOther
}

// numKinds is the number of known message kinds (the Kind constants).
const numKinds = 5

// kindIndex returns the index of a known message kind, -1 for another.
func kindIndex(kind string) int {
	switch kind {
	case mcpconv.KindRequest:
		return 0
	case mcpconv.KindNotification:
		return 1
	case mcpconv.KindResponse:
		return 2
	case mcpconv.KindBatch:
		return 3
	case mcpconv.KindInvalid:
		return 4
	}
	return -1
}

// endKey is the labels a request ends with, already bounded; version and
// net are a versionIndex and a netIndex.
type endKey struct {
	method, tool, outcome, errType, status string
	upstream, endpoint                     string // "" without the labels
	version, net                           int
}

// endSeries are the series of one endKey, created on first use.
type endSeries struct {
	finished prometheus.Counter
	duration prometheus.Observer
	// When an exemplar was last attached (unix nanoseconds): to the finished
	// count, and to each classic duration bucket (the last is +Inf).
	counterExemplar atomic.Int64
	bucketExemplar  []atomic.Int64
}

// resolveSeries makes the slots of the known methods and transports, each
// resolved on first use.
func (m *Metrics) resolveSeries() {
	m.byMethod = make(map[string]*atomic.Pointer[methodSeries], len(m.methods.values))
	for _, method := range m.methods.values {
		m.byMethod[method] = new(atomic.Pointer[methodSeries])
	}
	m.byTransport = make(map[string]*atomic.Pointer[Traffic], len(m.transports.values))
	for _, t := range m.transports.values {
		m.byTransport[t] = new(atomic.Pointer[Traffic])
	}
}

// method returns the series of method, those of other when it is not a
// known method: the label bound and the series in one lookup.
func (m *Metrics) method(method string) *methodSeries {
	slot, ok := m.byMethod[method]
	if !ok {
		method, slot = mcpconv.LabelOther, m.byMethod[mcpconv.LabelOther]
	}
	if s := slot.Load(); s != nil {
		return s
	}
	return m.resolveMethod(slot, method)
}

// resolveMethod creates the series of method, a known one, into slot,
// unless another call did first.
func (m *Metrics) resolveMethod(slot *atomic.Pointer[methodSeries], method string) *methodSeries {
	m.resolveMu.Lock()
	defer m.resolveMu.Unlock()
	if s := slot.Load(); s != nil {
		return s
	}
	s := &methodSeries{
		name:          method,
		started:       m.started.WithLabelValues(method),
		inFlight:      m.inFlight.WithLabelValues(method),
		cancellations: make(map[string]prometheus.Counter, len(m.causes.values)),
		drops:         make(map[string]prometheus.Counter, len(m.dropReasons.values)),
	}
	for _, c := range m.causes.values {
		if c != "upstream_closed" || m.upstreams != nil { // a gateway's cause; else made on first use
			s.cancellations[c] = m.cancellations.WithLabelValues(method, c)
		}
	}
	for _, r := range m.dropReasons.values {
		s.drops[r] = m.drops.WithLabelValues(method, r)
	}
	slot.Store(s)
	return s
}

// traffic returns the traffic series of transport t, a known one,
// resolving them on first use.
func (m *Metrics) traffic(t string) *Traffic {
	slot := m.byTransport[t]
	if s := slot.Load(); s != nil {
		return s
	}
	m.resolveMu.Lock()
	defer m.resolveMu.Unlock()
	if s := slot.Load(); s != nil {
		return s
	}
	s := &Traffic{
		m:         m,
		transport: t,
		bytesIn:   m.bytesIn.WithLabelValues(t),
		bytesOut:  m.bytesOut.WithLabelValues(t),
		sessions:  m.sessions.WithLabelValues(t),
	}
	for _, k := range m.kinds.values {
		if i := kindIndex(k); i >= 0 {
			s.in[i] = m.msgIn.WithLabelValues(t, k)
			s.out[i] = m.msgOut.WithLabelValues(t, k)
		}
	}
	slot.Store(s)
	return s
}

// okEnd returns the end series of a request of s's method with tool label
// tool, outcome ok, no error type nor status code, and the protocol
// version and network of indexes version and net, creating them on first
// use. upstream is the tool's (a function of the tool: a tool keeps the
// upstream its first request named).
func (m *Metrics) okEnd(s *methodSeries, tool, upstream string, version, net int) *endSeries {
	grid := &s.ok
	if tool != "" {
		g, ok := s.okTools.load(tool)
		if !ok {
			g, _ = s.okTools.loadOrStore(tool, new(okGrid))
		}
		grid = g
	}
	p := &grid[version][net]
	if e := p.Load(); e != nil {
		return e
	}
	e := m.end(endKey{method: s.name, tool: tool, upstream: upstream, outcome: mcpconv.OutcomeOK, version: version, net: net})
	p.Store(e) // m.end returns one *endSeries per key
	return e
}

// end returns the series of k, creating them on first use.
func (m *Metrics) end(k endKey) *endSeries {
	if s, ok := m.ends.Load(k); ok {
		return s.(*endSeries)
	}
	transport, protocolName := netLabels(k.net)
	s := &endSeries{
		finished:       m.finished.WithLabelValues(k.method, k.tool, k.outcome, k.errType, k.status),
		duration:       m.durationOf(k.method, k.tool, m.versionLabel(k.version), transport, protocolName, k.errType, k.status, k.upstream, k.endpoint),
		bucketExemplar: make([]atomic.Int64, len(m.buckets)+1),
	}
	got, _ := m.ends.LoadOrStore(k, s)
	return got.(*endSeries)
}

// exemplarDue reports whether an exemplar may be attached now to the
// series whose last one was at *last, and if so claims it.
func (m *Metrics) exemplarDue(last *atomic.Int64, now int64) bool {
	if m.exemplarEvery <= 0 {
		return true
	}
	prev := last.Load()
	return (prev == 0 || now-prev >= int64(m.exemplarEvery)) && last.CompareAndSwap(prev, now)
}

// bucketOf returns the index of the classic bucket v falls in; len(buckets)
// for +Inf.
func (m *Metrics) bucketOf(v float64) int {
	i, _ := slices.BinarySearch(m.buckets, v)
	return i
}
