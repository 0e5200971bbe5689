package accounts

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The vault's metric names, after the gateway's mcp_gateway_* ones.
const (
	metricRefreshes       = "mcp_gateway_account_refreshes_total"
	metricRefreshFailures = "mcp_gateway_account_refresh_failures_total"
	metricConnections     = "mcp_gateway_account_connections"
	metricRevocations     = "mcp_gateway_account_revocations_total"
)

// metrics are the vault's collectors, labeled by upstream (the names of
// the vault's Clients, which the operator chose: bounded). A nil
// *metrics counts nothing.
type metrics struct {
	refreshes   *prometheus.CounterVec
	failures    *prometheus.CounterVec
	connections *prometheus.GaugeVec
	revocations *prometheus.CounterVec
}

// newMetrics registers the vault's collectors on reg with every label
// value of upstreams created.
func newMetrics(reg prometheus.Registerer, upstreams []string) (*metrics, error) {
	m := &metrics{
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRefreshes,
			Help: "Access tokens the token vault refreshed at an upstream's authorization server, by upstream.",
		}, []string{"upstream"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRefreshFailures,
			Help: "Refreshes of the token vault that failed, by upstream and reason: refused (invalid_grant: the user authorizes again), expired (no refresh token), moved (the upstream's client changed), rejected (another OAuth error), unavailable (no answer or a 5xx), store (the result could not be stored).",
		}, []string{"upstream", "reason"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricConnections,
			Help: "Connections (a principal's tokens for an upstream) this replica saved minus those it removed, by upstream: per replica; the sum over the replicas sharing a store is the connections held (expiries in the store aside).",
		}, []string{"upstream"}),
		revocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRevocations,
			Help: "Revocations (RFC 7009) the token vault asked of an upstream's authorization server at a disconnection, by upstream and outcome (revoked; refresh_only: the refresh token revoked, the access token of a kind the server revokes none of, living until it expires; failed).",
		}, []string{"upstream", "outcome"}),
	}
	for _, c := range []prometheus.Collector{m.refreshes, m.failures, m.connections, m.revocations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, u := range upstreams {
		m.refreshes.WithLabelValues(u)
		m.connections.WithLabelValues(u)
		for _, r := range refreshReasons {
			m.failures.WithLabelValues(u, r)
		}
		for _, o := range []string{revokeOK, revokeRefresh, revokeFailed} {
			m.revocations.WithLabelValues(u, o)
		}
	}
	return m, nil
}

func (m *metrics) refreshed(upstream string) {
	if m != nil {
		m.refreshes.WithLabelValues(upstream).Inc()
	}
}

func (m *metrics) failed(upstream, reason string) {
	if m != nil {
		m.failures.WithLabelValues(upstream, reason).Inc()
	}
}

func (m *metrics) held(upstream string, delta float64) {
	if m != nil {
		m.connections.WithLabelValues(upstream).Add(delta)
	}
}

func (m *metrics) revoked(upstream, outcome string) {
	if m != nil {
		m.revocations.WithLabelValues(upstream, outcome).Inc()
	}
}
