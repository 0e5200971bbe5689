package metrics

import "github.com/vigil-mcp/vigil/internal/mcpconv"

// Values of the network_transport and network_protocol_name labels (and
// attributes), as the MCP semantic conventions record each transport:
// stdio is a pipe, Streamable HTTP is HTTP over TCP.
const (
	netTransportPipe = "pipe"
	netTransportTCP  = "tcp"
	netProtocolHTTP  = "http"
)

// defaultRequestMethods are the client-to-server MCP request methods.
func defaultRequestMethods() []string { return mcpconv.RequestMethods() }

// defaultClientMethods are the server-to-client MCP request methods.
func defaultClientMethods() []string { return mcpconv.ClientMethods() }

func defaultTransports() []string {
	return []string{mcpconv.TransportStdio, mcpconv.TransportStreamableHTTP, mcpconv.TransportMemory, mcpconv.LabelOther}
}

func defaultOutcomes() []string {
	return []string{mcpconv.OutcomeOK, mcpconv.OutcomeError, mcpconv.OutcomeCancelled, mcpconv.OutcomeDropped}
}

func defaultKinds() []string {
	return []string{mcpconv.KindRequest, mcpconv.KindNotification, mcpconv.KindResponse, mcpconv.KindBatch, mcpconv.KindInvalid}
}

// namedErrorTypes are the error_type values that are no JSON-RPC code.
func namedErrorTypes() []string {
	return []string{mcpconv.ErrorTypeTool, mcpconv.ErrorTypeInvalidArguments, mcpconv.ErrorTypeResultTooLarge, mcpconv.ErrorTypeUpstreamClosed, mcpconv.ErrorTypeCancelled, mcpconv.ErrorTypeDropped, mcpconv.ErrorTypeOther}
}
