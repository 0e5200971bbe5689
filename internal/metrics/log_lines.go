package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// NewLogLinesDropped returns the counter mcp_server_log_lines_dropped_total, which
// reads its value from dropped on every collection: the number of log
// lines a server dropped, unwritten, because its log's buffer was full (a
// log written in the background, such as cmd/vigil's). Register it with
// the registry of the metrics. dropped must be safe for concurrent use and
// never decrease; it must not be nil.
func NewLogLinesDropped(dropped func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: mcpconv.MetricLogLinesDropped,
		Help: "Log lines dropped, not written, because the log's buffer was full (the log's destination was slower than the records).",
	}, func() float64 { return float64(dropped()) })
}

// NewAuditLinesDropped returns the counter mcp_server_audit_lines_dropped_total, which
// reads its value from dropped on every collection: the number of audit log
// lines a server dropped, unwritten, because the audit log's buffer stayed
// full (see [NewLogLinesDropped]). A dropped audit line is a tool call with
// no record: alert on any. dropped must be safe for concurrent use and
// never decrease; it must not be nil.
func NewAuditLinesDropped(dropped func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: mcpconv.MetricAuditLinesDropped,
		Help: "Audit log lines (tool calls) dropped, not written, because the audit log's buffer stayed full (its destination was slower than the calls).",
	}, func() float64 { return float64(dropped()) })
}
