package mcpconv

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
