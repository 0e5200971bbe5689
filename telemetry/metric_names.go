package telemetry

import (
	"fmt"

	"github.com/vigil-mcp/vigil/internal/vocab"
)

// Prometheus metric names. They are fixed (no namespace option): dashboards
// and alert rules refer to them, and the first one is the OpenTelemetry
// semantic-convention histogram mcp.server.operation.duration as the OTel
// Prometheus exporter spells it.
const (
	MetricOperationDuration    = "mcp_server_operation_duration_seconds"
	MetricRequestsStarted      = "mcp_server_requests_started_total"
	MetricRequestsFinished     = "mcp_server_requests_finished_total"
	MetricRequestsInFlight     = "mcp_server_requests_in_flight"
	MetricSessionsActive       = "mcp_server_sessions_active"
	MetricSessionDuration      = "mcp_server_session_duration_seconds"
	MetricCancellations        = "mcp_server_cancellations_total"
	MetricLateResponsesDropped = "mcp_server_late_responses_dropped_total"
	MetricTransportWriteErrors = "mcp_server_transport_write_errors_total"
	MetricClientRequestsFailed = "mcp_server_pending_client_requests_failed_total"
	MetricMessagesRejected     = "mcp_server_messages_rejected_total"
	MetricMessagesReceived     = "mcp_server_received_messages_total"
	MetricMessagesSent         = "mcp_server_sent_messages_total"
	MetricBytesReceived        = "mcp_server_received_bytes_total"
	MetricBytesSent            = "mcp_server_sent_bytes_total"
	MetricResultsTooLarge      = "mcp_server_results_too_large_total"
	MetricQuotaRefusals        = "mcp_server_quota_refusals_total"
	// MetricLogLinesDropped is not part of [Metrics]: see
	// [NewLogLinesDropped].
	MetricLogLinesDropped = "mcp_server_log_lines_dropped_total"
	// MetricStreamsCut is not part of [Metrics]: see [NewStreamsCut].
	MetricStreamsCut = "mcp_server_streams_cut_total"
	// MetricAuditLinesDropped is not part of [Metrics]: see
	// [NewAuditLinesDropped].
	MetricAuditLinesDropped = "mcp_server_audit_lines_dropped_total"
)

// LabelOther is the value that stands for any value outside a label's known
// set (an unknown method, an unregistered tool, an unknown transport, ...).
const LabelOther = "other"

// ExemplarTraceID is the exemplar label that carries the trace id.
const ExemplarTraceID = "trace_id"

// Prometheus label names. The first seven are the OpenTelemetry attributes
// mcp.method.name, gen_ai.tool.name, error.type, rpc.response.status_code,
// mcp.protocol.version, network.transport and network.protocol.name as the
// OTel Prometheus exporter spells them.
const (
	LabelMethod          = "mcp_method_name"
	LabelTool            = "gen_ai_tool_name"
	LabelErrorType       = "error_type"
	LabelStatusCode      = "rpc_response_status_code"
	LabelProtocolVersion = "mcp_protocol_version"
	LabelNetTransport    = "network_transport"
	LabelNetProtocol     = "network_protocol_name"
	LabelOutcome         = "outcome"
	LabelCause           = "cause"
	LabelReason          = "reason"
	LabelTransport       = "transport"
	LabelClass           = "class"
	LabelKind            = "kind"
	LabelQuota           = "quota"
)

// Values of the outcome label of [MetricRequestsFinished]. They partition
// requests: every request counted by [MetricRequestsStarted] ends in exactly
// one of them.
const (
	// OutcomeOK: answered with a result. A tool result with isError set is
	// answered, so it is OK here; the duration histogram marks it with
	// error_type="tool_error".
	OutcomeOK = "ok"
	// OutcomeError: answered with a JSON-RPC error (including a handler
	// timeout answered with -32001 and a recovered panic answered with
	// -32603).
	OutcomeError = "error"
	// OutcomeCancelled: the request's context was cancelled before its
	// handler returned (client cancel, transport close, shutdown, ...), so
	// no response was written.
	OutcomeCancelled = "cancelled"
	// OutcomeDropped: the handler finished without being cancelled, but its
	// response could not be written (the writer was closed or the peer was
	// gone).
	OutcomeDropped = "dropped"
)

// Values of the error_type label of [MetricOperationDuration] besides
// JSON-RPC codes written in decimal ("-32602") and "" for success.
const (
	ErrorTypeTool      = "tool_error" // a tools/call result with isError set
	ErrorTypeCancelled = "cancelled"  // see OutcomeCancelled
	ErrorTypeDropped   = "dropped"    // see OutcomeDropped
	ErrorTypeOther     = "_OTHER"     // a JSON-RPC code outside the known set
	// ErrorTypeInvalidArguments is a tools/call result with isError set that
	// refused arguments not matching the tool's input schema, its handler not
	// run (server.Outcome.InvalidArguments): the caller's fault, told apart
	// from the tool's own failures.
	ErrorTypeInvalidArguments = "invalid_arguments"
)

// Values of the network_transport and network_protocol_name labels (and
// attributes), as the MCP semantic conventions record each transport:
// stdio is a pipe, Streamable HTTP is HTTP over TCP.
const (
	netTransportPipe = "pipe"
	netTransportTCP  = "tcp"
	netProtocolHTTP  = "http"
)

// Values of the transport label.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
	TransportMemory         = "memory"
)

// Values of the kind label of the message counters.
const (
	KindRequest      = "request"
	KindNotification = "notification"
	KindResponse     = "response"
	KindBatch        = "batch"
	KindInvalid      = "invalid" // a frame that did not decode
)

// defaultRequestMethods are the client-to-server MCP request methods.
func defaultRequestMethods() []string {
	return []string{
		"initialize", "ping", "server/discover", "subscriptions/listen",
		"tools/list", "tools/call",
		"prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe",
		"logging/setLevel", "completion/complete",
		"tasks/get", "tasks/list", "tasks/result", "tasks/cancel", "tasks/update",
		"skills/list", "skills/get", "resources/directory/read",
	}
}

// defaultClientMethods are the server-to-client MCP request methods.
func defaultClientMethods() []string {
	return []string{
		"ping", "roots/list", "sampling/createMessage", "elicitation/create",
		"tasks/get", "tasks/list", "tasks/result", "tasks/cancel",
	}
}

// defaultCauses are the cancellation causes.
func defaultCauses() []string { return labels(vocab.CancelReasons()) }

// defaultDropReasons are the reasons a response is dropped.
func defaultDropReasons() []string { return labels(vocab.DropReasons()) }

// defaultWriteClasses are the classes of a failed write.
func defaultWriteClasses() []string { return labels(vocab.WriteClasses()) }

func defaultTransports() []string {
	return []string{TransportStdio, TransportStreamableHTTP, TransportMemory, LabelOther}
}

func defaultOutcomes() []string {
	return []string{OutcomeOK, OutcomeError, OutcomeCancelled, OutcomeDropped}
}

func defaultKinds() []string {
	return []string{KindRequest, KindNotification, KindResponse, KindBatch, KindInvalid}
}

// defaultRejectReasons are the reasons a message is refused before a
// handler.
func defaultRejectReasons() []string { return labels(vocab.RejectReasons()) }

// defaultQuotas are the per-caller quotas a request or session is refused
// by.
func defaultQuotas() []string { return labels(vocab.Quotas()) }

// defaultErrorTypes are the error_type values kept as they are: the JSON-RPC
// and MCP codes a Vigil server answers with, and the named types.
func defaultErrorTypes() []string {
	return append(labels(vocab.Codes()), ErrorTypeTool, ErrorTypeInvalidArguments, ErrorTypeCancelled, ErrorTypeDropped, ErrorTypeOther)
}

// labels returns the String forms of values, in order.
func labels[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

// OTelInstrument is how a metric of this package is named when it is
// exported over OTLP (see otelsetup.MetricProducer): the OpenTelemetry
// instrument name and unit. The names are those of the MCP semantic
// conventions where there is one (mcp.server.operation.duration,
// mcp.server.session.duration); the others are chosen so that an OTel
// Prometheus exporter (the Collector's, with its default suffixes) renders
// them back as exactly the Prometheus name, so that one dashboard serves
// both paths.
type OTelInstrument struct {
	// Name is the instrument name, e.g. "mcp.server.operation.duration".
	Name string
	// Unit is the UCUM unit: "s", "By", or a {annotation}.
	Unit string
	// UpDown marks a Prometheus gauge that is an OpenTelemetry
	// UpDownCounter (a non-monotonic sum: requests in flight, sessions
	// active).
	UpDown bool
}

// OTelInstruments returns the OTLP name of each metric of this package, by
// Prometheus name (the Metric constants, [MetricLogLinesDropped] and
// [MetricAuditLinesDropped] included).
func OTelInstruments() map[string]OTelInstrument {
	return map[string]OTelInstrument{
		MetricOperationDuration:    {Name: "mcp.server.operation.duration", Unit: "s"},
		MetricSessionDuration:      {Name: "mcp.server.session.duration", Unit: "s"},
		MetricRequestsStarted:      {Name: "mcp.server.requests.started", Unit: "{request}"},
		MetricRequestsFinished:     {Name: "mcp.server.requests.finished", Unit: "{request}"},
		MetricRequestsInFlight:     {Name: "mcp.server.requests.in_flight", Unit: "{request}", UpDown: true},
		MetricSessionsActive:       {Name: "mcp.server.sessions.active", Unit: "{session}", UpDown: true},
		MetricCancellations:        {Name: "mcp.server.cancellations", Unit: "{cancellation}"},
		MetricLateResponsesDropped: {Name: "mcp.server.late_responses.dropped", Unit: "{response}"},
		MetricTransportWriteErrors: {Name: "mcp.server.transport.write_errors", Unit: "{error}"},
		MetricClientRequestsFailed: {Name: "mcp.server.pending_client_requests.failed", Unit: "{request}"},
		MetricMessagesRejected:     {Name: "mcp.server.messages.rejected", Unit: "{message}"},
		MetricMessagesReceived:     {Name: "mcp.server.received_messages", Unit: "{message}"},
		MetricMessagesSent:         {Name: "mcp.server.sent_messages", Unit: "{message}"},
		MetricBytesReceived:        {Name: "mcp.server.received_bytes", Unit: "By"},
		MetricBytesSent:            {Name: "mcp.server.sent_bytes", Unit: "By"},
		MetricResultsTooLarge:      {Name: "mcp.server.results_too_large", Unit: "{result}"},
		MetricQuotaRefusals:        {Name: "mcp.server.quota_refusals", Unit: "{refusal}"},
		MetricLogLinesDropped:      {Name: "mcp.server.log_lines.dropped", Unit: "{line}"},
		MetricStreamsCut:           {Name: "mcp.server.streams.cut", Unit: "{cut}"},
		MetricAuditLinesDropped:    {Name: "mcp.server.audit_lines.dropped", Unit: "{line}"},
	}
}

// OTelAttributeKey returns the OpenTelemetry attribute key of a label of
// this package's metrics: the semantic-convention key for each label named
// after one ([LabelMethod] to [LabelNetProtocol]); every other label
// (cause, reason, outcome, transport, class, kind) keeps its name, which the semantic conventions do not
// define and a Prometheus exporter renders unchanged.
func OTelAttributeKey(label string) string {
	switch label {
	case LabelMethod:
		return string(MCPMethodNameKey)
	case LabelTool:
		return string(GenAIToolNameKey)
	case LabelErrorType:
		return "error.type"
	case LabelStatusCode:
		return string(RPCResponseStatusCodeKey)
	case LabelProtocolVersion:
		return string(MCPProtocolVersionKey)
	case LabelNetTransport:
		return "network.transport"
	case LabelNetProtocol:
		return "network.protocol.name"
	}
	return label
}
