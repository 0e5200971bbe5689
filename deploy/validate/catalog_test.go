package validate

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/middleware/policy"
	"github.com/vigil-mcp/vigil/redisshare"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// targetLabels are the labels Prometheus (or the Prometheus Operator) adds
// to every scraped series; queries may group and filter by them.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// syntheticSeries are series Prometheus makes itself, with their labels.
var syntheticSeries = map[string][]string{
	"up":     nil,
	"ALERTS": {"alertname", "alertstate", "severity"},
}

// series is one series name as PromQL sees it (a histogram family is three:
// _bucket, _sum and _count).
type series struct {
	family  string
	counter bool                       // a counter, or a histogram's _bucket, _sum or _count
	labels  map[string]map[string]bool // label name -> the values the telemetry package creates
}

// catalog is the Prometheus surface of vigil: every series name with its
// labels, built by registering [metrics.New], the failure counter
// and token exchange counters of an [oauth.ResourceServer] (vigil
// -auth-issuer, -auth-exchange-*), the tool policies' decisions (vigil
// -auth-policy), the gateway's (vigil -upstream) and the shared mode's
// metrics (vigil -redis) and gathering them, so it cannot drift from the
// code.
type catalog struct {
	series   map[string]*series
	families []string
	metrics  *metrics.Metrics
	registry *prometheus.Registry
}

func newCatalog(t *testing.T) *catalog {
	t.Helper()
	m := metrics.New(vocabulary())
	for _, t := range []string{telemetry.TransportStdio, telemetry.TransportStreamableHTTP, telemetry.TransportMemory, mcpconv.LabelOther} {
		m.Precreate(t, mcpconv.RequestMethods(), []string{mcpconv.LabelOther}) // every series a server may have
	}
	// What Precreate leaves to first use: the request durations, made by a
	// request of each method over each transport in each protocol version;
	// a cancelled call of the tool other, whose one end made at zero is an
	// unknown tool's -32602.
	for _, tr := range []string{telemetry.TransportStdio, telemetry.TransportStreamableHTTP, telemetry.TransportMemory, mcpconv.LabelOther} {
		for _, method := range mcpconv.RequestMethods() {
			for _, v := range protocol.Versions() {
				m.RequestStarted(method)
				m.RequestFinished(metrics.RequestEnd{Method: method, Outcome: mcpconv.OutcomeOK, ProtocolVersion: v, Transport: tr})
			}
		}
	}
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: mcpconv.LabelOther, Outcome: mcpconv.OutcomeCancelled, ErrorType: mcpconv.ErrorTypeCancelled})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	rs, err := oauth.New(oauth.Config{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://as.example.com"},
		Verifier:             noVerifier{},
		Registerer:           reg,
	})
	require.NoError(t, err)
	// vigil -auth-exchange-endpoint: the token exchanges' counter.
	_, err = rs.Exchanger(oauth.ExchangeConfig{Endpoint: "https://as.example.com/token", ClientID: "vigil", ClientSecret: "secret"})
	require.NoError(t, err)
	// vigil -auth-policy: the tool policies' decisions.
	_, err = policy.New(policy.Config{Default: "true", Tools: map[string]string{"echo": "true"}, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, redisshare.RegisterMetrics(reg)) // vigil -redis
	reg.MustRegister(metrics.NewStreamsCut())           // vigil's Streamable HTTP endpoint
	// vigil -upstream: the gateway's metrics, of one upstream.
	ups := metrics.NewUpstreams(vocabulary().Codes, []string{"everything"}, nil, func(string) string { return metrics.StateReady })
	ups.Tools("everything", []string{"echo"}) // a tool it listed: the tools/call series
	reg.MustRegister(ups)
	// vigil's own counter of dropped audit lines (-audit-log).
	reg.MustRegister(metrics.NewAuditLinesDropped(func() uint64 { return 0 }))
	c := &catalog{series: map[string]*series{}, metrics: m, registry: reg}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, mfs)
	for _, mf := range mfs {
		name := mf.GetName()
		c.families = append(c.families, name)
		labels := map[string]map[string]bool{}
		for _, met := range mf.GetMetric() {
			for _, lp := range met.GetLabel() {
				if labels[lp.GetName()] == nil {
					labels[lp.GetName()] = map[string]bool{}
				}
				labels[lp.GetName()][lp.GetValue()] = true
			}
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			bucket := maps.Clone(labels)
			bucket["le"] = map[string]bool{}
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				bucket["le"][formatBound(b.GetUpperBound())] = true
			}
			bucket["le"]["+Inf"] = true
			c.series[name+"_bucket"] = &series{family: name, counter: true, labels: bucket}
			c.series[name+"_sum"] = &series{family: name, counter: true, labels: labels}
			c.series[name+"_count"] = &series{family: name, counter: true, labels: labels}
		case dto.MetricType_COUNTER:
			c.series[name] = &series{family: name, counter: true, labels: labels}
		case dto.MetricType_GAUGE:
			c.series[name] = &series{family: name, labels: labels}
		default:
			t.Fatalf("metric %s has type %s, which this catalog does not handle", name, mf.GetType())
		}
	}
	return c
}

// formatBound spells a bucket bound as client_golang exposes it ("0.5",
// "1", "300"); Prometheus 3 stores it as a float ("1.0", "300.0").
func formatBound(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// hasLabel reports whether series name carries label (its own labels or
// the target labels Prometheus adds).
func (c *catalog) hasLabel(name, label string) bool {
	if s, ok := c.series[name]; ok {
		if _, ok := s.labels[label]; ok {
			return true
		}
	} else if extra, ok := syntheticSeries[name]; ok && slices.Contains(extra, label) {
		return true
	}
	return slices.Contains(targetLabels, label)
}

// labelsOf returns every label a series name may carry, sorted.
func (c *catalog) labelsOf(name string) []string {
	out := slices.Clone(targetLabels)
	if s, ok := c.series[name]; ok {
		out = append(out, slices.Collect(maps.Keys(s.labels))...)
	}
	out = append(out, syntheticSeries[name]...)
	slices.Sort(out)
	return slices.Compact(out)
}

// knowsValue reports whether the telemetry package can produce value for
// label on series name. Labels whose values are all created at zero are
// looked up; error_type is probed by recording a request with that type and
// checking it is kept rather than folded into _OTHER; tool names belong to
// the user and le to the bucket layout.
func (c *catalog) knowsValue(t *testing.T, name, label, value string) bool {
	t.Helper()
	s, ok := c.series[name]
	if !ok {
		return true // a recording rule or a synthetic series: checked where defined
	}
	switch label {
	case mcpconv.LabelTool:
		return true
	case mcpconv.LabelErrorType:
		return c.keepsErrorType(t, value)
	}
	values, ok := s.labels[label]
	if !ok {
		return true // a target label
	}
	return values[value]
}

// keepsErrorType records a finished request with error type v and reports
// whether the finished count labels it v.
func (c *catalog) keepsErrorType(t *testing.T, v string) bool {
	t.Helper()
	if v == "" {
		return true
	}
	c.metrics.RequestStarted("ping")
	c.metrics.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeError, ErrorType: v, Duration: time.Millisecond})
	mfs, err := c.registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != mcpconv.MetricRequestsFinished {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == mcpconv.LabelErrorType && lp.GetValue() == v {
					return true
				}
			}
		}
	}
	return false
}

// noVerifier refuses every token; the catalog only needs the resource
// server's metric.
type noVerifier struct{}

func (noVerifier) Verify(context.Context, string) (*auth.Principal, error) {
	return nil, errors.New("no verifier")
}
