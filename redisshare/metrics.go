package redisshare

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// metrics are the shared mode's collectors.
type metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	relays   *prometheus.CounterVec
	up       prometheus.Gauge
	lost     prometheus.Counter
	fallback prometheus.Counter
	refusals *prometheus.CounterVec
	// connRefused counts the connections the dialer refused (dialer.go).
	connRefused prometheus.Counter
}

var (
	relayKinds = []replication.RelayKind{replication.RelayClient, replication.RelayStandalone, replication.RelayEvent, replication.RelayState, replication.RelayEnd, replication.RelayForward, replication.RelayAnswer, replication.RelayBroadcast, replication.RelayStateSeen, replication.RelayEndSeen, replication.RelayCancel}
	operations = []string{"create", "load", "store_state", "touch", "delete", "publish", "subscribe", "append", "replay", "forget", "lease", "alive", "claim", "use_state", "use_dpop_proof", "replica_ack"}
	errClasses = []string{"timeout", "unavailable", "other"}
	// refusals are the reasons of mcp_server_relays_refused_total: the
	// Store's, and the endpoint's: "request", a client relay that is a
	// request, and "cancel", a malformed cancel relay.
	refusals = []string{redisstore.RefusedUnsigned, redisstore.RefusedStale, redisstore.RefusedReplayed, redisstore.RefusedRecord, redisstore.RefusedEvent, "request", "cancel"}
)

// RegisterMetrics registers the shared mode's collectors on reg, every
// label value created, as Open does: for what lists vigil's metrics
// without a Redis, such as deploy/validate's catalog.
func RegisterMetrics(reg prometheus.Registerer) error {
	_, err := newMetrics(reg)
	return err
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    mcpconv.MetricRedisOperationDuration,
			Help:    "Duration of the shared mode's Redis operations, by operation.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricRedisErrors,
			Help: "Failed Redis operations of the shared mode, by operation and class (timeout, unavailable, other).",
		}, []string{"op", "class"}),
		relays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricRelays,
			Help: "Messages relayed to the other replicas of a shared session, by kind.",
		}, []string{"kind"}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: mcpconv.MetricRedisUp,
			Help: "1 while Redis answers this replica's lease renewals, else 0 (the replica stays ready unless -redis-outage-unready).",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: mcpconv.MetricRequestsLost,
			Help: "Requests of shared sessions whose replica was gone (its lease expired), answered here with a -32000 \"server instance lost\" error on the client's resumed stream.",
		}),
		fallback: prometheus.NewCounter(prometheus.CounterOpts{
			Name: mcpconv.MetricRateLimitFallbacks,
			Help: "Rate-limit decisions this replica took alone, from its own token buckets, because Redis did not answer (the limits then hold per replica, not over all of them).",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricRelaysRefused,
			Help: "What this replica refused from Redis, by reason: relays unsigned (not under the cluster key), stale, replayed, or requests relayed as a client's; session records and stored events that fail to open under the cluster key.",
		}, []string{"reason"}),
		connRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: mcpconv.MetricRedisConnectionsRefused,
			Help: "Connections to Redis this replica refused to open: without TLS to an address not on loopback (a primary, replica, Sentinel or Cluster node that Redis named), unless -redis-insecure-plaintext.",
		}),
	}
	for _, op := range operations {
		m.duration.WithLabelValues(op)
		for _, c := range errClasses {
			m.errors.WithLabelValues(op, c)
		}
	}
	for _, k := range relayKinds {
		m.relays.WithLabelValues(k.String())
	}
	for _, r := range refusals {
		m.refusals.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.duration, m.errors, m.relays, m.up, m.lost, m.fallback, m.refusals, m.connRefused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(op string, d time.Duration, err error) {
	m.duration.WithLabelValues(op).Observe(d.Seconds())
	if err != nil && !errors.Is(err, streamable.ErrUnknownSession) && !errors.Is(err, streamable.ErrUnknownEvent) {
		m.errors.WithLabelValues(op, errClass(err)).Inc()
	}
}

func (m *metrics) relayed(k replication.RelayKind) { m.relays.WithLabelValues(k.String()).Inc() }

// refused counts a refusal; the reasons are fixed (refusals).
func (m *metrics) refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

func (m *metrics) setUp(up bool) {
	if up {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// errClass sorts a Redis error: timeout, unavailable (no connection), other.
func errClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, new(*net.OpError)):
		return "unavailable"
	}
	return "other"
}
