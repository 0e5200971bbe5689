package mcpconv

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
	// MetricAuthFailures counts the requests the OAuth resource server
	// refused, by reason (package middleware/oauth).
	MetricAuthFailures = "mcp_server_auth_failures_total"
	// MetricPolicyDecisions counts the tools/call decisions of the tool
	// policies, by policy and decision (package middleware/policy).
	MetricPolicyDecisions = "mcp_server_policy_decisions_total"
	// MetricAuthExchanges counts the token exchanges (RFC 8693) handlers
	// asked the OAuth resource server's Exchanger for, by outcome.
	MetricAuthExchanges = "mcp_server_auth_exchanges_total"
)

// The gateway's metric names (package gateway), each labeled by the
// upstream's name, which the operator gives (LabelUpstream).
const (
	// MetricUpstreamCallDuration is the semantic-convention histogram
	// mcp.client.operation.duration of the calls forwarded upstream.
	MetricUpstreamCallDuration = "mcp_client_operation_duration_seconds"
	MetricUpstreamCalls        = "mcp_gateway_upstream_calls_total"
	MetricUpstreamStarts       = "mcp_gateway_upstream_starts_total"
	MetricUpstreamSessions     = "mcp_gateway_upstream_sessions"
	MetricUpstreamDropped      = "mcp_gateway_upstream_dropped_total"
	MetricUpstreamExpired      = "mcp_gateway_upstream_expired_total"
	MetricUpstreamRefused      = "mcp_gateway_upstream_refused_calls_total"
	MetricUpstreamState        = "mcp_gateway_upstream_state"
	MetricUpstreamEgress       = "mcp_gateway_upstream_egress_refused_total"
	// MetricCatalogPinChanges counts the changes of pinned tools against
	// the operator's catalog lock.
	MetricCatalogPinChanges = "mcp_gateway_catalog_pin_changes_total"
)

// LabelUpstream is the label of the gateway's metrics that names the
// upstream.
const LabelUpstream = "upstream"

// LabelEndpoint is the label of the gateway's calls counter that names
// the catalog's endpoint (/mcp/NAME) a call came through, the span
// attribute [EndpointKey]; empty for the default endpoint.
const LabelEndpoint = "endpoint"

// The shared mode's metric names (package redisshare).
const (
	MetricRedisOperationDuration = "mcp_server_redis_operation_duration_seconds"
	MetricRedisErrors            = "mcp_server_redis_errors_total"
	MetricRelays                 = "mcp_server_relays_total"
	MetricRedisUp                = "mcp_server_redis_up"
	MetricRequestsLost           = "mcp_server_requests_lost_total"
	MetricRateLimitFallbacks     = "mcp_server_ratelimit_fallbacks_total"
	MetricRelaysRefused          = "mcp_server_relays_refused_total"
	// MetricRedisConnectionsRefused counts the connections the shared
	// mode refused to open: without TLS, to an address not on loopback.
	MetricRedisConnectionsRefused = "mcp_server_redis_connections_refused_total"
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

// Values of the error_type label of [MetricRequestsFinished] besides
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
	// ErrorTypeResultTooLarge is a result of resources/read, prompts/get or
	// completion/complete over its size bound, answered with -32603
	// instead (server.Outcome.ResultTooLarge); a tools/call's is a
	// tool_error.
	ErrorTypeResultTooLarge = "result_too_large"
	// ErrorTypeUpstreamClosed is a request answered with an error because
	// what its handler relied on, such as a gateway's upstream server, went
	// away mid-request (server.ErrUpstreamClosed); its code stays visible
	// as rpc_response_status_code.
	ErrorTypeUpstreamClosed = "upstream_closed"
)

// Values of the kind label of the message counters.
const (
	KindRequest      = "request"
	KindNotification = "notification"
	KindResponse     = "response"
	KindBatch        = "batch"
	KindInvalid      = "invalid" // a frame that did not decode
)

// Values of the transport label.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
	TransportMemory         = "memory"
)
