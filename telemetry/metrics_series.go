package telemetry

import (
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The recording methods run for every request and message, so the series
// they touch are resolved ahead of time: looking up label values in a
// metric vector hashes and checks every value, and a Prometheus exemplar
// costs a few allocations. Label sets are bounded, and so are these caches.

// methodSeries are the per-method series, resolved by NewMetrics for every
// known method (and other); read-only afterwards.
type methodSeries struct {
	started       prometheus.Counter
	inFlight      prometheus.Gauge
	cancellations map[string]prometheus.Counter // by known cause
	drops         map[string]prometheus.Counter // by known reason
}

// trafficSeries are the per-transport traffic series, resolved by
// NewMetrics for every known transport (and other); read-only afterwards.
type trafficSeries struct {
	in, out           map[string]prometheus.Counter // by known kind
	bytesIn, bytesOut prometheus.Counter
}

// endKey is the labels a request ends with, already bounded.
type endKey struct{ method, tool, outcome, errType string }

// endSeries are the series of one endKey, created on first use.
type endSeries struct {
	finished prometheus.Counter
	duration prometheus.Observer
	// When an exemplar was last attached (unix nanoseconds): to the finished
	// count, and to each classic duration bucket (the last is +Inf).
	counterExemplar atomic.Int64
	bucketExemplar  []atomic.Int64
}

func (m *Metrics) resolveSeries() {
	m.byMethod = make(map[string]*methodSeries, len(m.methods.values))
	for _, method := range m.methods.values {
		s := &methodSeries{
			started:       m.started.WithLabelValues(method),
			inFlight:      m.inFlight.WithLabelValues(method),
			cancellations: make(map[string]prometheus.Counter, len(m.causes.values)),
			drops:         make(map[string]prometheus.Counter, len(m.dropReasons.values)),
		}
		for _, c := range m.causes.values {
			s.cancellations[c] = m.cancellations.WithLabelValues(method, c)
		}
		for _, r := range m.dropReasons.values {
			s.drops[r] = m.drops.WithLabelValues(method, r)
		}
		m.byMethod[method] = s
	}
	m.byTransport = make(map[string]*trafficSeries, len(m.transports.values))
	for _, t := range m.transports.values {
		s := &trafficSeries{
			in:       make(map[string]prometheus.Counter, len(m.kinds.values)),
			out:      make(map[string]prometheus.Counter, len(m.kinds.values)),
			bytesIn:  m.bytesIn.WithLabelValues(t),
			bytesOut: m.bytesOut.WithLabelValues(t),
		}
		for _, k := range m.kinds.values {
			s.in[k] = m.msgIn.WithLabelValues(t, k)
			s.out[k] = m.msgOut.WithLabelValues(t, k)
		}
		m.byTransport[t] = s
	}
}

// method returns the series of a bounded method label.
func (m *Metrics) method(method string) *methodSeries { return m.byMethod[method] }

// end returns the series of k, creating them on first use.
func (m *Metrics) end(k endKey) *endSeries {
	if s, ok := m.ends.Load(k); ok {
		return s.(*endSeries)
	}
	s := &endSeries{
		finished:       m.finished.WithLabelValues(k.method, k.outcome),
		duration:       m.duration.WithLabelValues(k.method, k.tool, k.errType),
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
