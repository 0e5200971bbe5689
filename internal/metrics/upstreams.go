package metrics

import (
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// UpstreamClosed is the value of the outcome label of
// mcp_gateway_upstream_calls_total, besides those of the server's requests
// (ok, error, cancelled), of a call whose upstream went away.
const UpstreamClosed = "upstream_closed"

// ToolError is the value of the outcome label of
// mcp_gateway_upstream_calls_total (and the error_type of the hop's
// duration) of a tools/call the upstream answered with a result with
// isError set: the tool failed, as the server's own metrics say
// tool_error.
const ToolError = mcpconv.ErrorTypeTool

// NotReady is the value of the outcome label of
// mcp_gateway_upstream_calls_total of a call refused, unsent, because its
// upstream was not ready (its start failed, or waits out its backoff).
const NotReady = "not_ready"

// Values of the state label of mcp_gateway_upstream_state.
const (
	StateStarting = "starting" // a start is under way: spawn, initialize, listing
	StateReady    = "ready"    // initialized and listed; what it offers is served
	StateFailing  = "failing"  // its last start failed: the next waits out a backoff
	StateStopped  = "stopped"  // the gateway closed
)

// upstreamStates are the values of the state label.
var upstreamStates = []string{StateStarting, StateReady, StateFailing, StateStopped}

// Values of the reason label of mcp_gateway_upstream_dropped_total.
const (
	DropNotification   = "notification"    // a notification the gateway was too far behind to take, or of no call and told to no caller
	DropProgress       = "progress"        // a progress notification of no call, or of a caller too far behind
	DropLateResponse   = "late_response"   // an answer to no call in flight (cancelled, or never asked)
	DropInvalidMessage = "invalid_message" // a frame that was not JSON-RPC, a batch, an unusable id
	DropRefusedRequest = "refused_request" // a request of the upstream over the bound of those running at once
	DropOversizeFrame  = "oversize_frame"  // a frame over the bound that named no call, which ended its session
	DropStderrLine     = "stderr_line"     // a stderr line over the rate bound
	// DropWithheldTool is a tool the operator's catalog could not serve
	// as it says (an argument fixed or defaulted that its schema lacks; a
	// pinned definition whose schema changed), withheld: counted once per
	// tool and catalog, or per change.
	DropWithheldTool = "withheld_tool"
	// DropOversizeMessage is a message over the bound, dropped unread: the
	// call it answered failed, a request was refused, the session lived on.
	DropOversizeMessage = "oversize_message"
)

// Upstreams are the metrics of a gateway's upstreams, labeled by the
// upstream's name: the calls forwarded, their duration, the starts, the
// sessions live and what was dropped of what upstreams sent. A nil
// *Upstreams records nothing. It is a [prometheus.Collector].
type Upstreams struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	starts   *prometheus.CounterVec
	sessions *prometheus.GaugeVec
	expired  *prometheus.CounterVec
	refused  *prometheus.CounterVec
	pins     *prometheus.CounterVec
	drops    *prometheus.Desc
	state    *prometheus.Desc
	methods  metricsLabelSet
	names    metricsLabelSet
	errTypes metricsLabelSet

	zero    map[[2]string]int64 // (upstream, reason) of every upstream named, at 0
	dropped func(add func(upstream, reason string, n int64))
	upNames []string
	states  func(upstream string) string
	tools   sync.Map // [2]string{upstream, tool}: labeled as itself (see Tools), its *toolSeries
	toolsMu sync.Mutex
	toolsOf map[string]int // upstream: how many of its tools are labeled as themselves
	// endpoints are the catalog endpoint names that label endpoint as
	// themselves (see Called), at most MaxEndpointLabels, added under
	// toolsMu; endpointsN counts them.
	endpoints  sync.Map
	endpointsN int
}

var _ prometheus.Collector = (*Upstreams)(nil)

// NewUpstreams returns the metrics of the upstreams names, their series
// created at zero, codes (in decimal) the error types kept as they are.
// dropped, if not nil, adds at each collection
// everything each upstream dropped so far, by reason (one of the Drop
// constants): it must never decrease, and be safe for concurrent use.
// states, if not nil, returns at each collection an upstream's state (one
// of the State constants); it must be safe for concurrent use.
func NewUpstreams(codes, names []string, dropped func(add func(upstream, reason string, n int64)), states func(upstream string) string) *Upstreams {
	u := &Upstreams{
		upNames:  append([]string(nil), names...),
		states:   states,
		methods:  newMetricsLabelSet(append(mcpconv.RequestMethods(), mcpconv.LabelOther)),
		names:    newMetricsLabelSet(append(names, mcpconv.LabelOther)),
		errTypes: newMetricsLabelSet(append(errorTypes(codes), "")),
		zero:     map[[2]string]int64{},
		dropped:  dropped,
	}
	up, method := mcpconv.LabelUpstream, mcpconv.LabelMethod
	u.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: mcpconv.MetricUpstreamCalls,
		Help: "Calls the gateway forwarded to an upstream MCP server. upstream: its name (-upstream NAME=...). mcp_method_name: tools/call, prompts/get or resources/read. " +
			"gen_ai_tool_name: the upstream's tool of a tools/call (other for a tool it never listed, or beyond its first 128), empty for other methods. " +
			"outcome: ok (answered with a result), tool_error (a tools/call answered with a result with isError), error (a JSON-RPC error of the upstream, or a result the gateway could not use), " +
			"cancelled (the downstream caller cancelled or went away; the upstream got notifications/cancelled), upstream_closed (the upstream went away or closed mid-call), " +
			"not_ready (refused, unsent, with a retry hint: the upstream could not be started, or waits out its backoff; not in the duration histogram). " +
			"endpoint: the operator's catalog endpoint (/mcp/NAME) the call came through, empty for the default endpoint (/mcp; other beyond the first 64 names).",
	}, []string{up, method, mcpconv.LabelTool, mcpconv.LabelOutcome, mcpconv.LabelEndpoint})
	u.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: mcpconv.MetricUpstreamCallDuration,
		Help: "Duration of the calls forwarded upstream, from send to answer (semconv mcp.client.operation.duration). upstream: its name. mcp_method_name: the method. " +
			"gen_ai_tool_name: the upstream's tool of a tools/call (other for one it never listed, or beyond its first 128), empty for other methods. " +
			"error_type: empty for a result, tool_error for a tool result with isError, the upstream's JSON-RPC code, cancelled, upstream_closed or _OTHER.",
		Buckets: DurationBuckets(),
	}, []string{up, method, mcpconv.LabelTool, mcpconv.LabelErrorType})
	u.starts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: mcpconv.MetricUpstreamStarts,
		Help: "Starts of an upstream session (for stdio, of its process), the first included: more than one ok is a restart. upstream: its name. result: ok or failed.",
	}, []string{up, "result"})
	u.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: mcpconv.MetricUpstreamSessions,
		Help: "Upstream sessions live (for stdio, each with its process). upstream: its name.",
	}, []string{up})
	u.expired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: mcpconv.MetricUpstreamExpired,
		Help: "Calls that found their HTTP upstream session expired (it answered 404: the session expired, or the upstream restarted). upstream: its name. " +
			"retried: true when the call was sent once more on a new session (a prompt, a resource, a read-only or idempotent tool), false when it failed saying it was not.",
	}, []string{up, "retried"})
	u.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: mcpconv.MetricUpstreamRefused,
		Help: "Calls refused before reaching a stdio upstream because each of its processes allowed (-upstream-max-processes) serves another downstream session. upstream: its name.",
	}, []string{up})
	u.pins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: mcpconv.MetricCatalogPinChanges,
		Help: "Changes of an upstream's tool against the operator's catalog lock (vigil -catalog-lock), each counted once per served tool and definition: a tool not in the lock, or whose definition's digest is not the lock's. " +
			"upstream: its name. pin: warn (served as it is now) or hold (the approved text served when only text changed, else withheld).",
	}, []string{up, "pin"})
	u.drops = prometheus.NewDesc(mcpconv.MetricUpstreamDropped,
		"What the gateway dropped of what an upstream sent. upstream: its name. reason: notification (too far behind), progress (of no call, or its caller too far behind), "+
			"late_response (an answer to no call in flight), invalid_message (not JSON-RPC), refused_request (over the upstream requests running at once), "+
			"oversize_message (a message over the bound, dropped unread: the call it answered failed, the session lived on), "+
			"oversize_frame (a frame over the bound that named no call, which ended the session), stderr_line (a stderr line over the rate bound), "+
			"withheld_tool (a tool the operator's catalog could not serve as it says, not served: an argument fixed or defaulted that its schema lacks, or a pinned tool whose schema changed).",
		[]string{up, "reason"}, nil)
	u.state = prometheus.NewDesc(mcpconv.MetricUpstreamState,
		"The state of an upstream: 1 for its current state, 0 for the others. upstream: its name. state: starting (a start under way: spawn, initialize, listing), "+
			"ready (initialized and listed; its tools are served), failing (its last start failed; the next waits out a backoff, and its calls are refused not_ready), stopped (the gateway closed).",
		[]string{up, "state"}, nil)
	for _, n := range names {
		for _, m := range []string{"prompts/get", "resources/read"} { // tools/call's with its tools (Tools)
			for _, o := range callOutcomes[:len(callOutcomes)-1] {
				u.calls.WithLabelValues(n, m, "", o, "")
			}
			u.duration.WithLabelValues(n, m, "", "")
		}
		u.starts.WithLabelValues(n, "ok")
		u.starts.WithLabelValues(n, "failed")
		u.sessions.WithLabelValues(n)
		u.expired.WithLabelValues(n, "true")
		u.expired.WithLabelValues(n, "false")
		u.refused.WithLabelValues(n)
		u.pins.WithLabelValues(n, "warn")
		u.pins.WithLabelValues(n, "hold")
		for _, r := range []string{DropNotification, DropProgress, DropLateResponse, DropInvalidMessage, DropRefusedRequest, DropOversizeMessage, DropOversizeFrame, DropStderrLine, DropWithheldTool} {
			u.zero[[2]string{n, r}] = 0
		}
	}
	return u
}

// callOutcomes are the values of the outcome label of
// mcp_gateway_upstream_calls_total, ToolError last (tools/call's only).
var callOutcomes = [...]string{mcpconv.OutcomeOK, mcpconv.OutcomeError, mcpconv.OutcomeCancelled, UpstreamClosed, NotReady, ToolError}

// MaxToolLabels is how many tool names of one upstream label
// gen_ai_tool_name as themselves; the others are "other".
const MaxToolLabels = 128

// Tools makes the tools upstream listed label gen_ai_tool_name as
// themselves, and creates their series at zero, up to MaxToolLabels
// names per upstream, the first listed first. Names are never
// forgotten (Prometheus counters should stay), so an upstream that
// renames its tools at every listing cannot grow the series beyond it.
func (u *Upstreams) Tools(upstream string, tools []string) {
	if u == nil {
		return
	}
	upstream = u.names.bound(upstream, mcpconv.LabelOther)
	u.toolsMu.Lock()
	defer u.toolsMu.Unlock()
	if u.toolsOf == nil {
		u.toolsOf = map[string]int{}
	}
	for _, t := range tools {
		if !validLabelValue(t) || t == mcpconv.LabelOther {
			continue
		}
		key := [2]string{upstream, t}
		if _, known := u.tools.Load(key); known {
			continue
		}
		if u.toolsOf[upstream] >= MaxToolLabels {
			return
		}
		u.toolsOf[upstream]++
		ts := &toolSeries{answered: u.duration.WithLabelValues(upstream, "tools/call", t, "")}
		for i, o := range callOutcomes {
			ts.calls[i] = u.calls.WithLabelValues(upstream, "tools/call", t, o, "")
		}
		u.tools.Store(key, ts)
	}
}

// toolSeries are the series of one upstream tool's calls through the
// default endpoint, made once (Tools) so that recording a call (Called)
// is an increment and an observation, not a look-up of each by its five
// labels, which hashes and checks every value: on the hop's way back,
// between the upstream's answer and the caller's response.
type toolSeries struct {
	calls    [len(callOutcomes)]prometheus.Counter // by outcome, as callOutcomes
	answered prometheus.Observer                   // the duration of a result (error_type "")
}

// outcomeIndex returns the index of outcome in callOutcomes, or -1.
func outcomeIndex(outcome string) int {
	for i, o := range callOutcomes {
		if o == outcome {
			return i
		}
	}
	return -1
}

// MaxEndpointLabels is how many catalog endpoint names label endpoint as
// themselves, the first called through first; the others are "other".
// Names are operator-configured, and never forgotten (the catalog may be
// reloaded with others): the bound holds across reloads.
const MaxEndpointLabels = 64

// Called records a call forwarded to upstream: its method, the
// upstream's tool of a tools/call (else ""), outcome, error type and
// duration, and the catalog endpoint it came through ("" for the default
// endpoint), which labels the counter only; a call refused NotReady is
// counted, its duration not observed.
func (u *Upstreams) Called(upstream, method, tool, outcome, errType, endpoint string, d time.Duration) {
	if u == nil {
		return
	}
	upstream, method = u.names.bound(upstream, mcpconv.LabelOther), u.methods.bound(method, mcpconv.LabelOther)
	if method != "tools/call" {
		tool = ""
	} else if ts, known := u.tools.Load([2]string{upstream, tool}); !known {
		tool = mcpconv.LabelOther
	} else if i := outcomeIndex(outcome); endpoint == "" && i >= 0 && (outcome == NotReady || errType == "") {
		// The common case: the series made with the tool (toolSeries).
		ts := ts.(*toolSeries)
		ts.calls[i].Inc()
		if outcome != NotReady {
			ts.answered.Observe(d.Seconds())
		}
		return
	}
	u.calls.WithLabelValues(upstream, method, tool, outcome, u.endpointLabel(endpoint)).Inc()
	if outcome == NotReady {
		return
	}
	u.duration.WithLabelValues(upstream, method, tool, u.errTypes.bound(errType, mcpconv.ErrorTypeOther)).Observe(d.Seconds())
}

// endpointLabel returns the value of the endpoint label of endpoint: the
// name itself while fewer than MaxEndpointLabels names are, else other.
func (u *Upstreams) endpointLabel(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if !validLabelValue(endpoint) || endpoint == mcpconv.LabelOther {
		return mcpconv.LabelOther
	}
	if _, ok := u.endpoints.Load(endpoint); ok {
		return endpoint
	}
	u.toolsMu.Lock()
	defer u.toolsMu.Unlock()
	if _, ok := u.endpoints.Load(endpoint); ok {
		return endpoint
	}
	if u.endpointsN >= MaxEndpointLabels {
		return mcpconv.LabelOther
	}
	u.endpointsN++
	u.endpoints.Store(endpoint, struct{}{})
	return endpoint
}

// Started records a start of upstream, successful or not.
func (u *Upstreams) Started(upstream string, ok bool) {
	if u == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "failed"
	}
	u.starts.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther), result).Inc()
}

// Expired counts a call to upstream that found its session expired,
// retried on a new session or not.
func (u *Upstreams) Expired(upstream string, retried bool) {
	if u != nil {
		u.expired.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther), strconv.FormatBool(retried)).Inc()
	}
}

// Refused counts a call to upstream refused because every process allowed
// serves another session.
func (u *Upstreams) Refused(upstream string) {
	if u != nil {
		u.refused.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther)).Inc()
	}
}

// PinChanged counts a change of one of upstream's pinned tools against
// the catalog lock, under pin (warn or hold).
func (u *Upstreams) PinChanged(upstream, pin string) {
	if u != nil && (pin == "warn" || pin == "hold") {
		u.pins.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther), pin).Inc()
	}
}

// SessionOpened counts a session of upstream that opened.
func (u *Upstreams) SessionOpened(upstream string) {
	if u != nil {
		u.sessions.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther)).Inc()
	}
}

// SessionEnded counts a session of upstream that ended.
func (u *Upstreams) SessionEnded(upstream string) {
	if u != nil {
		u.sessions.WithLabelValues(u.names.bound(upstream, mcpconv.LabelOther)).Dec()
	}
}

// Describe sends the descriptors of every metric; see [prometheus.Collector].
func (u *Upstreams) Describe(ch chan<- *prometheus.Desc) {
	u.calls.Describe(ch)
	u.duration.Describe(ch)
	u.starts.Describe(ch)
	u.sessions.Describe(ch)
	u.expired.Describe(ch)
	u.refused.Describe(ch)
	u.pins.Describe(ch)
	ch <- u.drops
	if u.states != nil {
		ch <- u.state
	}
}

// Collect sends every metric; see [prometheus.Collector].
func (u *Upstreams) Collect(ch chan<- prometheus.Metric) {
	u.calls.Collect(ch)
	u.duration.Collect(ch)
	u.starts.Collect(ch)
	u.sessions.Collect(ch)
	u.expired.Collect(ch)
	u.refused.Collect(ch)
	u.pins.Collect(ch)
	drops := maps.Clone(u.zero)
	if u.dropped != nil {
		u.dropped(func(upstream, reason string, n int64) {
			drops[[2]string{u.names.bound(upstream, mcpconv.LabelOther), reason}] += n
		})
	}
	for k, v := range drops {
		ch <- prometheus.MustNewConstMetric(u.drops, prometheus.CounterValue, float64(v), k[0], k[1])
	}
	if u.states == nil {
		return
	}
	for _, n := range u.upNames {
		current := u.states(n)
		for _, st := range upstreamStates {
			v := 0.0
			if st == current {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(u.state, prometheus.GaugeValue, v, n, st)
		}
	}
}
