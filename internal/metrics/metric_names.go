package metrics

import (
	"fmt"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/vocab"
)

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

// defaultCauses are the cancellation causes.
func defaultCauses() []string { return labels(vocab.CancelReasons()) }

// defaultDropReasons are the reasons a response is dropped.
func defaultDropReasons() []string { return labels(vocab.DropReasons()) }

// defaultWriteClasses are the classes of a failed write.
func defaultWriteClasses() []string { return labels(vocab.WriteClasses()) }

func defaultTransports() []string {
	return []string{mcpconv.TransportStdio, mcpconv.TransportStreamableHTTP, mcpconv.TransportMemory, mcpconv.LabelOther}
}

func defaultOutcomes() []string {
	return []string{mcpconv.OutcomeOK, mcpconv.OutcomeError, mcpconv.OutcomeCancelled, mcpconv.OutcomeDropped}
}

func defaultKinds() []string {
	return []string{mcpconv.KindRequest, mcpconv.KindNotification, mcpconv.KindResponse, mcpconv.KindBatch, mcpconv.KindInvalid}
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
	return append(labels(vocab.Codes()), mcpconv.ErrorTypeTool, mcpconv.ErrorTypeInvalidArguments, mcpconv.ErrorTypeResultTooLarge, mcpconv.ErrorTypeUpstreamClosed, mcpconv.ErrorTypeCancelled, mcpconv.ErrorTypeDropped, mcpconv.ErrorTypeOther)
}

// labels returns the String forms of values, in order.
func labels[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}
